/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/lifecycle.md
 * "Progress deadline" — "Every server process runs a sweeper every LIFECYCLE_SWEEP_INTERVAL_MS over the
 * rollouts still in progress"; "The rollout fails at the first sweep after its deadline".
 * src/operations/lifecycle.ts looks at most 500 open lifecycles per sweep ("the rest wait for the next"),
 * but every sweep reads the same first 500 (no order, no cursor): with 500 other rollouts open (in
 * progress with long deadlines, or failed — "a failed rollout stays open"), a rollout past its deadline is
 * never decided.  No sleeps: the test clock (`now`) is moved past the deadline, and the sweeper's own
 * counter is the barrier (whole sweeps that began after the move have ended).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushRelease, registerCluster, registryHost, type FixtureService } from '../../support/fixtures.js';
import { eventually } from '../../support/wait.js';
import { mapLimit } from '../faults/helpers.js';

const OTHERS = 500;

describe('the lifecycle sweeper with more than 500 open rollouts', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 200 }, { now: () => clock });
    [admin, api] = await Promise.all([t.token('admin'), t.token('api')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  async function promotedService (progressDeadlineSeconds: number): Promise<{ svc: FixtureService, plan: IImmutableImageDeploymentPlan }> {
    const repository = `team/sweep-${randomBytes(4).toString('hex')}`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        rolloutPolicy: { progressDeadlineSeconds },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const svc = { id: created.json().service.id as string, repository };
    const release = await pushRelease(t.app, api, svc);
    const res = await promote(t.app, api, svc.id, release.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return { svc, plan: res.json().service.data.imageDeployment };
  }

  async function sweeps (): Promise<number> {
    const line = (await t.app.inject({ method: 'GET', url: '/metrics' })).body.split('\n').find((l) => l.startsWith('cloudly_release_lifecycle_sweeps_total '));
    return Number(line?.split(' ')[1]);
  }

  it(`${OTHERS} rollouts in progress with a week's deadline, then one with 30 s: past its deadline, it fails at the next sweeps`, async () => {
    await mapLimit(Array.from({ length: OTHERS }, (_, i) => i), 8, async () => await promotedService(604_800));
    const { svc } = await promotedService(30);
    clock += 60_000;
    const before = await sweeps();
    await eventually('three whole sweeps after the clock moved', async () => { expect(await sweeps()).toBeGreaterThanOrEqual(before + 4); }, 400, 100);
    const view = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) })).json();
    expect(view.lifecycle?.deadlineExceeded, 'decided by the sweeper, 30 s after its start').toBeDefined();
    expect(view.status?.status).toBe('failed');
  }, 600_000);
});
