import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import {
  bearer, createFixtureService, fullRolloutHistory, httpCaller, promote, pushEvent, registerCluster, type Caller, type CallerResponse,
} from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

/**
 * docs/api.md "Automatic promotion": a push is promoted "under the key `automatic:<eventId>` — so at
 * most once per event", and a redelivery of an event whose first delivery crashed completes it.
 * The first delivery is killed (SIGKILL) after its automatic promotion committed but before the
 * decision was recorded on the event; an operator then promotes another release; the registry
 * redelivers the event while that rollout is in progress. The event was promoted once already: the
 * redelivery answers that, and nothing waits to promote it a second time when the rollout settles.
 */
describe('a push event whose delivery crashed after its automatic promotion, redelivered during an operator\'s rollout', () => {
  let fleet: Fleet;
  let healthy: Caller;
  let admin: string;
  let api: string;
  let cluster: string;

  beforeAll(async () => {
    // A short lease, so that the redelivery may take over the crashed delivery's key quickly.
    fleet = await startFleet({ processes: 2, env: { IDEMPOTENCY_LEASE_MS: '700' } });
    healthy = httpCaller(fleet.servers[0]!.url);
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    cluster = await fleet.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    await registerCluster(healthy, admin, 'c1', ['n1']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const push = (caller: Caller, event: Record<string, unknown>) =>
    caller.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
  const plan = async (serviceId: string): Promise<IImmutableImageDeploymentPlan> =>
    (await healthy.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageDeployment;

  /** Redelivers while the crashed delivery still holds the key (as a registry retries on 409 + Retry-After). */
  async function redeliverUntilDone (event: Record<string, unknown>): Promise<CallerResponse> {
    for (let i = 0; i < 100; i++) {
      const res = await push(healthy, event);
      if (res.statusCode !== 409 || res.json().code !== 'idempotency-request-in-progress') return res;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the event\'s key stayed in progress');
  }

  for (const point of ['after-plan-write', 'after-release-update']) {
    it(`killed ${point}: the redelivery answers the promotion made, and the event is never promoted again`, async () => {
      const svc = await createFixtureService(healthy, admin, { clusterIds: ['c1'], replicasPerNode: 1, deployOnPush: true });
      const t0 = Date.now() - 60_000;
      // Release A, promoted explicitly (this turns the immutable policy on) and verified.
      const eventA = pushEvent(svc, { tag: 'a', seed: `a-${svc.id}`, observedAt: t0 });
      expect((await push(healthy, eventA)).statusCode).toBeLessThan(300);
      const first = await promote(healthy, api, svc.id, eventA['releaseId'] as string, { generation: 0 });
      expect(first.statusCode, first.body).toBe(200);
      await reportVerified(healthy, cluster, await plan(svc.id), svc.id, ['n1']);

      // Release B (newer) is pushed to a process that dies once B's automatic promotion is committed.
      const eventB = pushEvent(svc, { tag: 'b', seed: `b-${svc.id}`, observedAt: t0 + 1_000 });
      const victim = fleet.servers[1]!;
      await victim.restart({ FAULT_INJECTION: point });
      const crashed = await push(httpCaller(victim.url), eventB).then((r) => r.statusCode, () => 'connection lost');
      expect(crashed).toBe('connection lost');
      expect(victim.logs.join('\n')).toContain(`FAULT_INJECTION: crashing at ${point}`);
      await victim.restart();

      // An operator promotes A again (explicitly, on the generation B's promotion made): in progress.
      const current = await plan(svc.id);
      expect(current).toMatchObject({ releaseId: eventB['releaseId'], rolloutGeneration: 2 });
      const downgrade = await promote(healthy, api, svc.id, eventA['releaseId'] as string, { generation: 2, reason: 'back to A' });
      expect(downgrade.statusCode, downgrade.body).toBe(200);

      // The registry redelivers B's event: it was promoted (once), which is what it is told.
      const again = await redeliverUntilDone(eventB);
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json()).toMatchObject({ duplicate: true, autoPromotion: { outcome: 'promoted', rolloutGeneration: 2 } });

      // A's rollout settles: nothing was waiting, B is not promoted a second time.
      const settled = await reportVerified(healthy, cluster, await plan(svc.id), svc.id, ['n1']);
      expect(settled.status).toMatchObject({ status: 'succeeded' });
      const history = await fullRolloutHistory(healthy, admin, svc.id);
      expect(history.map((r) => [r.generation, r.releaseId])).toEqual([
        [3, eventA['releaseId']], [2, eventB['releaseId']], [1, eventA['releaseId']],
      ]);
      expect(await plan(svc.id)).toMatchObject({ releaseId: eventA['releaseId'], rolloutGeneration: 3 });
      // And a later redelivery still says the same.
      const later = await push(healthy, eventB);
      expect(later.json()).toMatchObject({ duplicate: true, autoPromotion: { outcome: 'promoted', rolloutGeneration: 2, replayed: true } });
    }, 90_000);
  }
});
