import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, callTypedRequest, identity, type TestApp } from '../../support/app.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { bearer, createFixtureService } from '../../support/fixtures.js';
import { eventually } from '../../support/wait.js';
import { startReceiver } from '../../support/webhookReceiver.js';

/** Webhook subscriptions (docs/webhooks.md): admin only, validated field by field, private addresses refused without the allow-list. */
describe('webhook subscriptions', () => {
  let t: TestApp;
  let admin: string;
  const url = '/v1/webhooks/subscriptions';
  beforeAll(async () => {
    t = await buildTestApp({ WEBHOOK_POLL_INTERVAL_MS: 50 });
    admin = await t.token('admin');
  });
  afterAll(async () => { await t?.close(); });

  const post = (payload: unknown, token = admin) => t.app.inject({ method: 'POST', url, headers: bearer(token), payload: payload as Record<string, unknown> });

  it.each([
    ['http://127.0.0.1:8080/hook', '127.0.0.1'],
    ['http://localhost/hook', 'localhost'],
    ['http://10.1.2.3/hook', '10.1.2.3'],
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['http://[::1]/hook', '::1'],
    ['http://[::ffff:192.168.1.1]/hook', '::ffff:c0a8:101'],
  ])('refuses %s without the allow-list, naming the field and the address', async (target, address) => {
    const res = await post({ url: target });
    expect(res.statusCode, res.body).toBe(422);
    const problem = res.json();
    expect(problem.code).toBe('webhook-target-not-allowed');
    expect(problem.field).toBe('/url');
    expect(problem.detail).toContain('WEBHOOK_ALLOWED_HOSTS');
    expect(problem.detail).toContain(address);
    // Nothing was written.
    expect(await t.db.collection('webhookSubscriptions').countDocuments()).toBe(0);
  });

  it.each([
    [{ url: 'ftp://hooks.example.com/x' }, '/body/url'],
    [{ url: 'not a url' }, '/body/url'],
    [{ url: 'https://user:pw@hooks.example.com/x' }, '/body/url'],
    [{}, '/body/url'],
    [{ url: 'https://hooks.example.com/x', types: ['rollout.issued'] }, '/body/types/0'],
    [{ url: 'https://hooks.example.com/x', services: { namePattern: 'a b' } }, '/body/services'],
    [{ url: 'https://hooks.example.com/x', timeoutMs: 10 }, '/body/timeoutMs'],
    [{ url: 'https://hooks.example.com/x', secret: 'mine' }, '/body/secret'],
  ])('refuses %j with 400 naming %s', async (body, field) => {
    const res = await post(body);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation-failed');
    expect(res.json().problems.map((p: { field: string }) => p.field).join(' ')).toContain(field);
  });

  it('refuses at connect time too: a stored receiver whose name resolves to loopback gets no request (DNS rebinding)', async () => {
    const hook = await startReceiver();
    try {
      const svc = await createFixtureService(t.app, admin, { withPlacement: false });
      // As if the name had resolved to a public address when the subscription was written: stored as it would be.
      const now = Date.now();
      const id = 'whsub_rebinding00';
      await t.db.collection('webhookSubscriptions').insertOne({
        _id: id as never,
        url: hook.url.replace('127.0.0.1', 'localhost'),
        types: [],
        services: { ids: [svc.id] },
        enabled: true,
        timeoutMs: 2_000,
        health: 'healthy',
        secrets: [{ secret: `whsec_${Buffer.alloc(32, 3).toString('base64')}`, createdAt: now }],
        createdAt: now,
        updatedAt: now,
        leaseOwner: null,
        leaseUntil: 0,
      });
      const log = new EventLogStore(t.database);
      await log.record(svc.id, { key: 'x1', type: 'automation.held', time: now, data: { reason: 'x' } });
      await log.relay(svc.id);
      await eventually('the attempt was refused and the event dead-lettered', async () => {
        const res = await t.app.inject({ method: 'GET', url: `${url}/${id}/dead-letters`, headers: bearer(admin) });
        expect(res.json().deadLetters).toHaveLength(1);
      });
      const res = await t.app.inject({ method: 'GET', url: `${url}/${id}/deliveries`, headers: bearer(admin) });
      expect(res.json().deliveries[0]).toMatchObject({ outcome: 'dead' });
      expect(res.json().deliveries[0].error).toMatch(/^not-allowed: localhost resolves to (127\.0\.0\.1|::1)/);
      expect(hook.received).toHaveLength(0);
    } finally {
      await hook.close();
    }
  });

  it('only admins manage subscriptions', async () => {
    for (const role of ['user', 'api'] as const) {
      const res = await post({ url: 'https://hooks.example.com/x' }, await t.token(role));
      expect(res.statusCode).toBe(403);
      const list = await t.app.inject({ method: 'GET', url, headers: bearer(await t.token(role)) });
      expect(list.statusCode).toBe(403);
    }
  });
});

describe('webhook subscriptions with an allow-list', () => {
  let t: TestApp;
  let admin: string;
  const url = '/v1/webhooks/subscriptions';
  beforeAll(async () => {
    t = await buildTestApp({ WEBHOOK_ALLOWED_HOSTS: '10.0.0.0/8,localhost' });
    admin = await t.token('admin');
  });
  afterAll(async () => { await t?.close(); });

  it('allows the listed range and host name, still refuses the rest', async () => {
    for (const allowed of ['http://10.9.8.7/hook', 'http://localhost:9/hook']) {
      const res = await t.app.inject({ method: 'POST', url, headers: bearer(admin), payload: { url: allowed } });
      expect(res.statusCode, res.body).toBe(201);
    }
    const refused = await t.app.inject({ method: 'POST', url, headers: bearer(admin), payload: { url: 'http://192.168.0.1/hook' } });
    expect(refused.json().code).toBe('webhook-target-not-allowed');
  });

  it('creates, reads, lists, pauses, rotates with an overlap and deletes', async () => {
    const payload = { url: 'http://10.0.0.1/hook', services: { ids: ['s1'] } };
    const created = await t.app.inject({ method: 'POST', url, headers: bearer(admin), payload });
    expect(created.statusCode, created.body).toBe(201);
    const { subscription, secret } = created.json();
    expect(created.headers.location).toBe(`${url}/${subscription.id}`);
    expect(subscription).toMatchObject({ enabled: true, health: 'healthy', types: [], services: { ids: ['s1'] }, timeoutMs: 10_000, secretCount: 1 });

    const paused = await t.app.inject({ method: 'PATCH', url: `${url}/${subscription.id}`, headers: bearer(admin), payload: { enabled: false } });
    expect(paused.json().subscription.enabled).toBe(false);

    const rotate = `${url}/${subscription.id}/rotate-secret`;
    const rotated = await t.app.inject({ method: 'POST', url: rotate, headers: bearer(admin), payload: { overlapSeconds: 3600 } });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.json().secret).not.toBe(secret);
    expect(rotated.json().subscription.secretCount).toBe(2);
    expect(Date.parse(rotated.json().previousSecretValidUntil)).toBeGreaterThan(Date.now());
    const stored = await t.db.collection('webhookSubscriptions').findOne({ _id: subscription.id as never });
    expect((stored?.['secrets'] as Array<{ secret: string }>).map((s) => s.secret)).toEqual([rotated.json().secret, secret]);
    // Both are real Standard Webhooks secrets.
    for (const s of [secret, rotated.json().secret]) expect(() => new Webhook(s)).not.toThrow();

    const immediate = await t.app.inject({ method: 'POST', url: rotate, headers: bearer(admin), payload: { overlapSeconds: 0 } });
    expect(immediate.json().subscription.secretCount).toBe(1);

    const listed = await t.app.inject({ method: 'GET', url, headers: bearer(admin) });
    expect(listed.json().subscriptions.map((s: { id: string }) => s.id)).toContain(subscription.id);
    expect(listed.body).not.toContain('whsec_');

    const deleted = await t.app.inject({ method: 'DELETE', url: `${url}/${subscription.id}`, headers: bearer(admin) });
    expect(deleted.json()).toEqual({ deleted: true });
    const gone = await t.app.inject({ method: 'GET', url: `${url}/${subscription.id}`, headers: bearer(admin) });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().code).toBe('webhook-subscription-not-found');
  });

  it('speaks TypedRequest too: create, read, pause, rotate, delete; refusals coded; admin only', async () => {
    const call = async (method: string, request: Record<string, unknown>, token = admin) =>
      (await callTypedRequest(t.app, method, { ...request, identity: identity(token) })).json();
    const created = await call('createWebhookSubscription', { url: 'http://10.0.0.2/hook', types: ['dev.cloudly.release.rollout.failed'] });
    const { subscription, secret } = created.response;
    expect(secret).toMatch(/^whsec_/);
    const read = await call('getWebhookSubscription', { subscriptionId: subscription.id });
    expect(read.response.subscription.types).toEqual(['dev.cloudly.release.rollout.failed']);
    const paused = await call('updateWebhookSubscription', { subscriptionId: subscription.id, enabled: false });
    expect(paused.response.subscription.enabled).toBe(false);
    expect((await call('rotateWebhookSecret', { subscriptionId: subscription.id })).response.subscription.secretCount).toBe(2);
    expect((await call('listWebhookSubscriptions', {})).response.subscriptions.map((s: { id: string }) => s.id)).toContain(subscription.id);
    expect((await call('getWebhookDeliveries', { subscriptionId: subscription.id })).response.deliveries).toEqual([]);
    expect((await call('redeliverWebhookDeadLetters', { subscriptionId: subscription.id })).response).toEqual({ queued: 0 });
    expect((await call('createWebhookSubscription', { url: 'http://192.168.1.1/x' })).error.data.code).toBe('webhook-target-not-allowed');
    expect((await call('createWebhookSubscription', { url: 'http://10.0.0.3/x', timeoutMs: 1 })).error.data.problems[0].field).toBe('/request/timeoutMs');
    expect((await call('listWebhookSubscriptions', {}, await t.token('user'))).error.data.code).toBe('forbidden');
    expect((await call('deleteWebhookSubscription', { subscriptionId: subscription.id })).response).toEqual({ deleted: true });
    expect((await call('getWebhookSubscription', { subscriptionId: subscription.id })).error.data.code).toBe('webhook-subscription-not-found');
  });
});
