import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import {
  bearer, createFixtureService, promote, pushEvent, registerCluster, rolloutHistory, type FixtureService,
} from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * docs/api.md "Automatic promotion": a push event is promoted automatically "under the key
 * `automatic:<eventId>` — so at most once per event". docs/lifecycle.md: "an explicit promotion,
 * a rollback or an abort discards [the waiting push]". A registry redelivers a webhook it is not
 * sure arrived: the same eventId with the same content is the same event (200, duplicate).
 */
describe('a redelivered push event while an explicit promotion is in progress', () => {
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
    return res.json() as { duplicate: boolean, autoPromotion: { outcome: string, reason?: string, replayed?: boolean } };
  };
  const plan = async (serviceId: string): Promise<IImmutableImageDeploymentPlan> =>
    (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageDeployment;
  const rolloutsOfEvent = async (svc: FixtureService, eventId: string) =>
    (await rolloutHistory(t.app, admin, svc.id)).filter((r) => r.reason.includes(`event ${eventId}`));

  it('an event that was promoted once is never promoted again by its redelivery', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1, deployOnPush: true });
    const t0 = Date.now() - 60_000;
    // Release A, promoted explicitly (the first promotion turns the immutable policy on) and verified.
    const eventA = pushEvent(svc, { tag: 'a', seed: `a-${svc.id}`, observedAt: t0 });
    await push(eventA);
    const first = await promote(t.app, api, svc.id, eventA['releaseId'] as string, { generation: 0 });
    expect(first.statusCode, first.body).toBe(200);
    await reportVerified(t.app, cluster, await plan(svc.id), svc.id, ['n1']);

    // Release B is pushed (newer): promoted automatically under the key of its event, and verified.
    const eventB = pushEvent(svc, { tag: 'b', seed: `b-${svc.id}`, observedAt: t0 + 1_000 });
    expect((await push(eventB)).autoPromotion.outcome).toBe('promoted');
    await reportVerified(t.app, cluster, await plan(svc.id), svc.id, ['n1']);
    expect(await rolloutsOfEvent(svc, eventB['eventId'] as string)).toHaveLength(1);

    // An operator promotes A again explicitly (a deliberate downgrade, not a rollback); it is in progress.
    const downgrade = await promote(t.app, api, svc.id, eventA['releaseId'] as string, { generation: 2, reason: 'back to A' });
    expect(downgrade.statusCode, downgrade.body).toBe(200);

    // The registry redelivers B's event (same id, same content): the same event, already promoted once.
    const again = await push(eventB);
    expect(again.duplicate).toBe(true);

    // The operator's rollout settles: nothing may promote B a second time for the same event.
    await reportVerified(t.app, cluster, await plan(svc.id), svc.id, ['n1']);
    const issued = (await rolloutsOfEvent(svc, eventB['eventId'] as string)).map((r) => `generation ${r.generation} ${r.mode} (${r.reason})`);
    expect(issued, `rollouts issued for the one event; the redelivery answered ${JSON.stringify(again.autoPromotion)}`).toHaveLength(1);
    expect((await plan(svc.id)).releaseId, 'the explicitly promoted release stays deployed').toBe(eventA['releaseId']);
  });

  it('a waiting push that an explicit promotion discarded does not come back with its redelivery', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1, deployOnPush: true });
    const t0 = Date.now() - 60_000;
    const eventA = pushEvent(svc, { tag: 'a', seed: `a2-${svc.id}`, observedAt: t0 });
    await push(eventA);
    const first = await promote(t.app, api, svc.id, eventA['releaseId'] as string, { generation: 0 });
    expect(first.statusCode, first.body).toBe(200);
    // Rollout of A in progress: B waits.
    const eventB = pushEvent(svc, { tag: 'b', seed: `b2-${svc.id}`, observedAt: t0 + 1_000 });
    expect((await push(eventB)).autoPromotion.outcome).toBe('queued');
    // An explicit promotion (of A again) discards the waiting push.
    const explicit = await promote(t.app, api, svc.id, eventA['releaseId'] as string, { generation: 1, reason: 'redeploy A' });
    expect(explicit.statusCode, explicit.body).toBe(200);
    // The registry redelivers B's event.
    const again = await push(eventB);
    expect(again.duplicate).toBe(true);
    await reportVerified(t.app, cluster, await plan(svc.id), svc.id, ['n1']);
    const current = await plan(svc.id);
    expect(current.releaseId, `B was promoted by the redelivery of the discarded event: ${JSON.stringify(again.autoPromotion)}`)
      .toBe(eventA['releaseId']);
  });

  // Redelivered after deployOnPush was turned on: the decision `skipped: not-enabled` comes back, nothing is promoted.
  it('redelivered after deployOnPush was turned on: gets the decision made for the event back and promotes nothing', async () => {
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
