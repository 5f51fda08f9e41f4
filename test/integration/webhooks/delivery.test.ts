import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../../src/domain/events.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { eventually } from '../../support/wait.js';
import { startReceiver, type Receiver } from '../../support/webhookReceiver.js';

/**
 * Webhook delivery end to end (docs/webhooks.md): the real app on the real database, its delivery
 * loop, and a real HTTP receiver on loopback (allowed through WEBHOOK_ALLOWED_HOSTS). Events come
 * from the durable log — a real promotion, or events recorded and relayed into it.
 */
const RETRY_BASE_MS = 100;

describe('webhook delivery', () => {
  let t: TestApp;
  let admin: string;
  let log: EventLogStore;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    t = await buildTestApp({
      LIFECYCLE_SWEEP_INTERVAL_MS: 100,
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_POLL_INTERVAL_MS: 50,
      WEBHOOK_RETRY_BASE_MS: RETRY_BASE_MS,
      WEBHOOK_RETRY_MAX_MS: 1_000,
      WEBHOOK_MAX_ATTEMPTS: 5,
      WEBHOOK_LEASE_MS: 2_000,
    });
    admin = await t.token('admin');
    log = new EventLogStore(t.database);
  });
  afterEach(async () => { while (receivers.length > 0) await receivers.pop()?.close(); });
  afterAll(async () => { await t?.close(); });

  const receiver = async (...args: Parameters<typeof startReceiver>): Promise<Receiver> => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };

  const subscribe = async (body: Record<string, unknown>) => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks/subscriptions', headers: bearer(admin), payload: body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { subscription: { id: string }, secret: string };
  };

  const read = async (path: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/webhooks/subscriptions/${path}`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  /** Records events in a service's log (its outbox, then the relay), as a use case does. */
  const emit = async (serviceId: string, ...keys: string[]): Promise<void> => {
    for (const key of keys) {
      const data = { rolloutId: key, generation: 1, by: { subject: 'test' }, reason: key };
      const event: DomainEvent = { key, type: 'automation.held', time: Date.now(), data };
      await log.record(serviceId, event);
    }
    await log.relay(serviceId);
  };

  const verifies = (secret: string, r: { body: string, headers: Record<string, unknown> }): boolean => {
    try {
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };

  it('a promotion reaches the receiver as a signed CloudEvent; a body changed by one byte does not verify', async () => {
    const hook = await receiver();
    const { secret, subscription } = await subscribe({ url: hook.url, types: ['dev.cloudly.release.rollout.issued'] });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    await registerCluster(t.app, admin, 'c1', ['n1']);
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const api = await t.token('api');
    const release = await pushRelease(t.app, api, svc, { tag: 'v1' });
    const promoted = await promote(t.app, api, svc.id, release.releaseId, { generation: 0 });
    expect(promoted.statusCode, promoted.body).toBe(200);

    await eventually('the rollout.issued event arrives', async () => { expect(hook.received.length).toBeGreaterThan(0); });
    const [first] = hook.received;
    if (!first) throw new Error('nothing received');
    expect(first.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
    const event = JSON.parse(first.body);
    expect(event).toMatchObject({
      specversion: '1.0',
      type: 'dev.cloudly.release.rollout.issued',
      subject: svc.id,
      id: `${svc.id}:1`,
      data: { service: { id: svc.id }, releaseId: release.releaseId, digest: release.digest, generation: 1 },
    });
    expect(first.id).toBe(event.id);
    expect(verifies(secret, first)).toBe(true);
    const tampered = first.body.replace('"specversion":"1.0"', '"specversion":"1.1"');
    expect(tampered).not.toBe(first.body);
    expect(tampered.length).toBe(first.body.length);
    expect(verifies(secret, { ...first, body: tampered })).toBe(false);
    expect(verifies(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, first)).toBe(false);
    // The secret is shown once: reads never carry it.
    expect(JSON.stringify(await read(subscription.id))).not.toContain(secret.slice(6));
  });

  it('500 three times then 200: one logical event (one webhook-id), retried after backoff, the next event after it', async () => {
    const hook = await receiver((_r, i) => ({ status: i < 3 ? 500 : 200 }));
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription } = await subscribe({ url: hook.url, services: { ids: [svc.id] } });
    await emit(svc.id, 'e1', 'e2');
    await eventually('both events delivered', async () => { expect(hook.received.length).toBe(5); });
    expect(hook.received.map((r) => r.id)).toEqual([`${svc.id}:1`, `${svc.id}:1`, `${svc.id}:1`, `${svc.id}:1`, `${svc.id}:2`]);
    // Backoff: every retry waited at least half the base delay of its attempt (full jitter over the upper half).
    for (let i = 1; i < 4; i++) {
      const waited = (hook.received[i] as { at: number }).at - (hook.received[i - 1] as { at: number }).at;
      expect(waited).toBeGreaterThanOrEqual((RETRY_BASE_MS * 2 ** (i - 1)) / 2 - 5);
    }
    const { deliveries } = await read(`${subscription.id}/deliveries`);
    expect(deliveries.map((d: { outcome: string, statusCode: number }) => `${d.outcome}:${d.statusCode}`).reverse())
      .toEqual(['retry:500', 'retry:500', 'retry:500', 'delivered:200', 'delivered:200']);
  });

  it('a receiver that hangs is timed out, and retried', async () => {
    const hook = await receiver((_r, i) => (i === 0 ? 'hang' : { status: 204 }));
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription } = await subscribe({ url: hook.url, services: { ids: [svc.id] }, timeoutMs: 300 });
    await emit(svc.id, 'h1');
    await eventually('delivered after the timeout', async () => { expect(hook.received.length).toBe(2); });
    const { deliveries } = await read(`${subscription.id}/deliveries`);
    const [delivered, timedOut] = deliveries;
    expect(timedOut).toMatchObject({ outcome: 'retry', attempt: 1 });
    expect(timedOut.error).toMatch(/^timeout/);
    expect(timedOut.statusCode).toBeUndefined();
    expect(delivered).toMatchObject({ outcome: 'delivered', statusCode: 204, attempt: 2 });
  });

  it('410 Gone ends the subscription', async () => {
    const hook = await receiver(() => ({ status: 410 }));
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription } = await subscribe({ url: hook.url, services: { ids: [svc.id] } });
    await emit(svc.id, 'g1', 'g2');
    await eventually('disabled', async () => {
      expect((await read(subscription.id)).subscription).toMatchObject({ enabled: false, health: 'gone' });
    });
    // Only the first event was tried: the subscription ended at its answer.
    expect(hook.received.map((r) => r.id)).toEqual([`${svc.id}:1`]);
    // Resumed by an update: healthy again, from where it stopped.
    hook.behave(() => ({ status: 200 }));
    const url = `/v1/webhooks/subscriptions/${subscription.id}`;
    const resumed = await t.app.inject({ method: 'PATCH', url, headers: bearer(admin), payload: { enabled: true } });
    expect(resumed.json().subscription).toMatchObject({ enabled: true, health: 'healthy' });
    expect(resumed.json().subscription.lastError).toBeUndefined();
    await eventually('both delivered after the resume', async () => {
      expect(hook.received.map((r) => r.id)).toEqual([`${svc.id}:1`, `${svc.id}:1`, `${svc.id}:2`]);
    });
  });

  it('an event that exhausts its attempts is a dead letter, listed, and redelivered by the API with the same webhook-id', async () => {
    const hook = await receiver(() => ({ status: 503, headers: { 'retry-after': '0' } }));
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription, secret } = await subscribe({ url: hook.url, services: { namePattern: 'svc-*' }, types: [] });
    await emit(svc.id, 'd1', 'd2');
    const id1 = `${svc.id}:1`;
    await eventually('dead-lettered, and the next event tried after it', async () => {
      const { deadLetters } = await read(`${subscription.id}/dead-letters`);
      expect(deadLetters.map((l: { eventId: string }) => l.eventId)).toContain(`${svc.id}:2`);
    });
    const { deadLetters } = await read(`${subscription.id}/dead-letters`);
    expect(deadLetters.find((l: { eventId: string }) => l.eventId === id1)).toMatchObject({ state: 'dead', attempts: 5, lastError: 'HTTP 503' });
    expect((await read(subscription.id)).subscription.health).toBe('failing');
    expect(hook.received.filter((r) => r.id === id1)).toHaveLength(5);

    hook.behave(() => ({ status: 200 }));
    const res = await t.app.inject({
      method: 'POST', url: `/v1/webhooks/subscriptions/${subscription.id}/dead-letters/${encodeURIComponent(id1)}/redeliver`, headers: bearer(admin),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ queued: 1 });
    await eventually('redelivered', async () => { expect(hook.received.filter((r) => r.id === id1)).toHaveLength(6); });
    const redelivered = hook.received.filter((r) => r.id === id1).at(-1) as { body: string, headers: Record<string, unknown> };
    expect(verifies(secret, redelivered)).toBe(true);
    await eventually('settled', async () => {
      const after = await read(`${subscription.id}/dead-letters`);
      expect(after.deadLetters.find((l: { eventId: string }) => l.eventId === id1).state).toBe('redelivered');
    });
    const missing = await t.app.inject({
      method: 'POST', url: `/v1/webhooks/subscriptions/${subscription.id}/dead-letters/nope/redeliver`, headers: bearer(admin),
    });
    expect(missing.json().code).toBe('dead-letter-not-found');
  });

  it('a paused subscription delivers nothing until resumed, then every event in order', async () => {
    const hook = await receiver();
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription } = await subscribe({ url: hook.url, services: { ids: [svc.id] }, enabled: false });
    await emit(svc.id, 'p1', 'p2', 'p3');
    // A marker subscription, created after the paused one and delivered: the loop has passed the paused one meanwhile.
    const marker = await receiver();
    await subscribe({ url: marker.url, services: { ids: [svc.id] } });
    await emit(svc.id, 'p4');
    await eventually('the marker got p4', async () => { expect(marker.received.map((r) => r.id)).toEqual([`${svc.id}:4`]); });
    expect(hook.received).toHaveLength(0);
    const url = `/v1/webhooks/subscriptions/${subscription.id}`;
    const res = await t.app.inject({ method: 'PATCH', url, headers: bearer(admin), payload: { enabled: true } });
    expect(res.statusCode, res.body).toBe(200);
    await eventually('all four delivered', async () => { expect(hook.received.map((r) => r.id)).toEqual([1, 2, 3, 4].map((n) => `${svc.id}:${n}`)); });
  });

  it('a subscription behind the log\'s retention is told (events-missed, failing), then goes on from the oldest event kept', async () => {
    const hook = await receiver();
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription, secret } = await subscribe({ url: hook.url, services: { ids: [svc.id] }, enabled: false });
    await emit(svc.id, 'm1', 'm2', 'm3');
    // The retention removes the first two (as the lifecycle sweep does past EVENTS_RETENTION_DAYS).
    await t.db.collection('events').deleteMany({ _id: { $in: [`${svc.id}:1`, `${svc.id}:2`] } as never });
    const url = `/v1/webhooks/subscriptions/${subscription.id}`;
    expect((await t.app.inject({ method: 'PATCH', url, headers: bearer(admin), payload: { enabled: true } })).statusCode).toBe(200);
    await eventually('told, then the kept event', async () => {
      expect(hook.received.map((r) => r.id)).toEqual([`${svc.id}:missed:1-2`, `${svc.id}:3`]);
    }, 120, 250);
    const missed = JSON.parse((hook.received[0] as { body: string }).body);
    expect(missed).toMatchObject({ type: 'dev.cloudly.release.events-missed', subject: svc.id, data: { fromSeq: 1, toSeq: 2 } });
    expect(verifies(secret, hook.received[0] as { body: string, headers: Record<string, unknown> })).toBe(true);
    const { deliveries } = await read(`${subscription.id}/deliveries`);
    expect(deliveries.map((d: { eventId: string, type: string }) => d.type).reverse())
      .toEqual(['dev.cloudly.release.events-missed', 'dev.cloudly.release.automation.held']);
  }, 60_000);

  it('a service the subscription starts to cover is delivered from the change on, not from its past', async () => {
    const hook = await receiver();
    const a = await createFixtureService(t.app, admin, { withPlacement: false });
    const { subscription } = await subscribe({ url: hook.url, services: { ids: [a.id] } });
    const b = await createFixtureService(t.app, admin, { withPlacement: false });
    await emit(b.id, 'b1', 'b2', 'b3');
    const url = `/v1/webhooks/subscriptions/${subscription.id}`;
    const res = await t.app.inject({ method: 'PATCH', url, headers: bearer(admin), payload: { services: { ids: [a.id, b.id] } } });
    expect(res.statusCode, res.body).toBe(200);
    await emit(b.id, 'b4');
    await emit(a.id, 'a1');
    // In order per service: had b's past been due, b:1..3 would have come before b:4.
    await eventually('b:4 and a:1 delivered', async () => {
      expect(hook.received.map((r) => r.id).sort()).toEqual([`${a.id}:1`, `${b.id}:4`].sort());
    });
  });

  it('counts deliveries, failures and retries per subscription on /metrics', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    const text = res.body;
    expect(text).toMatch(/cloudly_release_webhook_deliveries_total\{subscription="whsub_[^"]+"\} [1-9]/);
    expect(text).toMatch(/cloudly_release_webhook_failures_total\{subscription="whsub_[^"]+",outcome="retry"\} [1-9]/);
    expect(text).toMatch(/cloudly_release_webhook_failures_total\{subscription="whsub_[^"]+",outcome="gone"\} 1/);
    expect(text).toMatch(/cloudly_release_webhook_retries_total\{subscription="whsub_[^"]+"\} [1-9]/);
    expect(text).toMatch(/cloudly_release_webhook_lag_seconds\{subscription="whsub_[^"]+"\} 0/);
  });
});
