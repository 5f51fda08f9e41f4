import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushEvent, registerCluster, rolloutHistory } from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * Acceptance run 5, re-attacking "push-event automation recorded per event" (2f03f49). docs/api.md
 * "Automatic promotion": "What automation decided for an event (promoted, queued, skipped, conflict)
 * is recorded on it: a redelivery of the event gets that decision back (`replayed: true`) and does
 * nothing again". The decision `skipped: not-enabled` is answered but never recorded
 * (src/operations/observePushEvent.ts records every outcome but that one), so an event that arrived
 * while deployOnPush was off is decided AGAIN at its redelivery: once an operator turns deployOnPush
 * on, a registry's redelivery of that old webhook promotes its release automatically — a rollout
 * no push caused while automation was on.
 */
describe('a push event redelivered after deployOnPush was turned on', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;

  beforeAll(async () => {
    t = await buildTestApp();
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  const push = async (event: Record<string, unknown>) => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
    expect([200, 201], res.body).toContain(res.statusCode);
    return res.json() as { duplicate: boolean, autoPromotion?: { outcome: string, reason?: string, replayed?: boolean } };
  };

  it('gets the decision made for the event back and promotes nothing', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const v1 = pushEvent(svc, { tag: 'v1', observedAt: Date.now() - 60_000 });
    await push(v1);
    const first = await promote(t.app, api, svc.id, v1['releaseId'] as string, { generation: 0 });
    expect(first.statusCode, first.body).toBe(200);
    await reportVerified(t.app, cluster, first.json().service.data.imageDeployment, svc.id, ['n1']);

    // v2 is pushed while automatic promotion is off: decided "skipped, not-enabled".
    const v2 = pushEvent(svc, { tag: 'v2' });
    const decided = await push(v2);
    expect(decided.autoPromotion).toMatchObject({ outcome: 'skipped', reason: 'not-enabled' });

    // The operator turns automatic promotion on (for pushes from now on).
    const current = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service;
    const { imageDeployment: _d, imageRolloutStatus: _s, immutableImageRequired: _i, ...writable } = current.data;
    const put = await t.app.inject({ method: 'PUT', url: `/v1/services/${svc.id}`, headers: bearer(admin), payload: { ...writable, deployOnPush: true } });
    expect(put.statusCode, put.body).toBe(200);

    // The registry redelivers the v2 webhook (same eventId, same content).
    const again = await push(v2);
    expect(again.duplicate).toBe(true);
    expect(again.autoPromotion, 'the decision recorded for the event').toMatchObject({ outcome: 'skipped', reason: 'not-enabled' });
    const history = await rolloutHistory(t.app, admin, svc.id);
    expect(history.map((r) => r.mode), 'rollouts of the service').toEqual(['promotion']);
  });
});
