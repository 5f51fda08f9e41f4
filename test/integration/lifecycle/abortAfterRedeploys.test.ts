import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * docs/lifecycle.md "Abort": "An abort is a rollback to the last verified release: the newest release
 * whose rollout succeeded, other than the digest deployed now". docs/decisions.md: "re-promoting the
 * digest already deployed is allowed (a redeploy)" — and every CI re-run derives a new key and really
 * promotes again (docs/cli.md).
 *
 * The server answers from a list of the last 20 successful rollouts (`verifiedReleases`, $slice −20):
 * after 20 verified redeploys of the current release the earlier verified release has fallen out of
 * it, and an abort of the next (failing) redeploy is refused `409 no-verified-release` although a
 * release other than the one deployed now did succeed.
 */
describe('abort after many verified redeploys of the current release', () => {
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

  it('returns to the earlier verified release', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    const b = await pushRelease(t.app, api, svc, { tag: 'b' });
    let generation = 0;
    const promoteVerified = async (releaseId: string) => {
      const res = await promote(t.app, api, svc.id, releaseId, { generation });
      expect(res.statusCode, res.body).toBe(200);
      generation += 1;
      await reportVerified(t.app, cluster, res.json().service.data.imageDeployment, svc.id, ['n1']);
    };
    await promoteVerified(a.releaseId);
    await promoteVerified(b.releaseId);
    for (let i = 0; i < 20; i++) await promoteVerified(b.releaseId); // redeploys of b, each verified

    // One more redeploy of b, in progress (say it does not come up): the operator aborts it.
    const last = await promote(t.app, api, svc.id, b.releaseId, { generation });
    expect(last.statusCode, last.body).toBe(200);
    const plan = last.json().service.data.imageDeployment;
    const abort = await t.app.inject({
      method: 'POST',
      url: `/v1/services/${svc.id}/rollout/abort`,
      headers: { ...bearer(api), 'idempotency-key': `abort-${svc.id}` },
      payload: { expectedCurrentRolloutId: plan.rolloutId, expectedRolloutGeneration: plan.rolloutGeneration },
    });
    expect(abort.statusCode, abort.body).toBe(200);
    expect(abort.json().service.data.imageDeployment).toMatchObject({ mode: 'rollback', releaseId: a.releaseId });
  });
});
