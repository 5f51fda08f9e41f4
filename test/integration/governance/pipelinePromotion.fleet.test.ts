import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import {
  bearer, createFixtureService, fullRolloutHistory, httpCaller, promote, pushRelease, registerCluster, type Caller, type FixtureService,
} from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { reportVerified } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

/**
 * Automatic promotion downstream (docs/governance.md "Pipelines") through 3 server processes whose
 * sweepers all look for eligible digests at once: each digest that succeeds in staging and soaks
 * there is promoted to production by the server, exactly once — one rollout per digest in
 * production's history, whichever process swept first — and not before its soak.
 */
const ROUNDS = 4;
const SOAK_SECONDS = 1;

describe('pipeline promotion across processes', () => {
  let fleet: Fleet;
  beforeAll(async () => { fleet = await startFleet({ processes: 3, env: { LIFECYCLE_SWEEP_INTERVAL_MS: '100' } }); }, 180_000);
  afterAll(async () => { await fleet?.close(); });

  it(`${ROUNDS} digests succeed and soak in staging: each is promoted to production once, by the server`, async () => {
    const callers = fleet.servers.map((s) => httpCaller(s.url));
    const app: Caller = callers[0]!;
    const [admin, api, cluster] = await Promise.all([fleet.token('admin'), fleet.token('api'), fleet.token('cluster')]);
    await registerCluster(app, admin, 'c1', ['n1']);
    const service = (promotionPolicy?: Record<string, unknown>): Promise<FixtureService> =>
      createFixtureService(app, admin, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 }, ...(promotionPolicy ? { promotionPolicy } : {}) });
    const staging = await service();
    const production = await service({ pipeline: { requires: [{ serviceId: staging.id, soakSeconds: SOAK_SECONDS }], automaticPromotion: { enabled: true } } });
    const current = async (svc: FixtureService) =>
      (await app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(api) })).json().service.data
        .imageDeployment as IImmutableImageDeploymentPlan | undefined;

    const succeedInStaging = async (seed: string, generation: number) => {
      const inStaging = await pushRelease(app, api, staging, { seed, tag: seed });
      const inProduction = await pushRelease(app, api, production, { seed, tag: seed });
      const res = await promote(callers[generation % callers.length]!, api, staging.id, inStaging.releaseId, { generation });
      expect(res.statusCode, res.body).toBe(200);
      const reportedFrom = Date.now();
      await reportVerified(app, cluster, res.json().service.data.imageDeployment, staging.id, ['n1'], 1);
      return { ...inProduction, reportedFrom };
    };

    // The first promotion to production is by hand (automatic promotion starts after one, as for pushes).
    const first = await succeedInStaging('pipeline-0', 0);
    // Soaked after SOAK_SECONDS: refused (409 not-soaked) until then.
    let byHand: IImmutableImageDeploymentPlan | undefined;
    await eventually('the first digest is promoted to production by hand once soaked', async () => {
      const res = await promote(app, api, production.id, first.releaseId, { generation: 0, key: 'first-by-hand' });
      expect(res.statusCode, res.body).toBe(200);
      byHand = res.json().service.data.imageDeployment;
    });
    // Each production rollout succeeds too: the next candidate waits while one is in progress.
    await reportVerified(app, cluster, byHand!, production.id, ['n1'], 1);

    for (let round = 1; round <= ROUNDS; round++) {
      const release = await succeedInStaging(`pipeline-${round}`, round);
      await eventually(`round ${round}: promoted to production`, async () => { expect((await current(production))?.releaseId).toBe(release.releaseId); });
      await reportVerified(app, cluster, (await current(production))!, production.id, ['n1'], 1);
      // Not before the soak: the server promoted it no earlier than SOAK_SECONDS after the success.
      const [latest] = await fullRolloutHistory(app, api, production.id);
      expect(latest).toMatchObject({ releaseId: release.releaseId, mode: 'automatic', trigger: { kind: 'pipeline-promotion', stages: [staging.id] } });
      // The success in staging came after `reportedFrom` (same machine clock): the promotion came after it plus the soak.
      expect(latest!.createdAt).toBeGreaterThanOrEqual(release.reportedFrom + SOAK_SECONDS * 1000);
    }
    const history = await fullRolloutHistory(app, api, production.id);
    const perDigest = new Map<string, number>();
    for (const r of history) perDigest.set(r.requestedDigest, (perDigest.get(r.requestedDigest) ?? 0) + 1);
    expect([...perDigest.values()]).toEqual(Array(ROUNDS + 1).fill(1));
    expect(history).toHaveLength(ROUNDS + 1);
  }, 180_000);
});
