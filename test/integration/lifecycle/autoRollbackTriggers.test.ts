/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/lifecycle.md
 * "Automatic rollback" — "When the current rollout fails on a chosen trigger — failed (a replica failed),
 * mismatched (evidence does not verify), deadline (the progress deadline) — before ever succeeding, the
 * server rolls back to the last verified release". A rollout whose first failure was on a trigger the
 * service did NOT choose, and which then fails on a trigger it DID choose (still before any success), must
 * be rolled back.  No sleeps: the sweeper's own counter is the barrier (a whole sweep that began after the
 * failure has ended), and the test clock (`now`) is moved past the deadline by the test.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushRelease, registerCluster, registryHost, type FixtureService } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

describe('automatic rollback: the chosen trigger, whenever it comes before success', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 100 }, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  async function createService (rolloutPolicy: Record<string, unknown>): Promise<FixtureService> {
    const repository = `team/art-${randomBytes(4).toString('hex')}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository }, placement: { clusterIds: ['c1'], replicasPerNode: 1 }, rolloutPolicy,
      }),
    });
    expect(res.statusCode, res.body).toBe(201);
    return { id: res.json().service.id as string, repository };
  }

  const send = async (plan: IImmutableImageDeploymentPlan, serviceId: string, sequence: number, deployment: Record<string, unknown>) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(cluster),
      payload: reportBody(plan, serviceId, { session: `s-${plan.rolloutId}`, sequence, nodeNames: ['n1'], deployments: [deployment] }),
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().status as { status: string, mismatchReason?: string };
  };

  const current = async (serviceId: string): Promise<IImmutableImageDeploymentPlan> =>
    (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageDeployment;

  async function sweeps (): Promise<number> {
    const line = (await t.app.inject({ method: 'GET', url: '/metrics' })).body.split('\n').find((l) => l.startsWith('cloudly_release_lifecycle_sweeps_total '));
    return Number(line?.split(' ')[1]);
  }
  /** Resolves once a whole sweep that began after the call has ended. */
  async function fullSweep (): Promise<void> {
    const before = await sweeps();
    await eventually('a whole lifecycle sweep', async () => { expect(await sweeps()).toBeGreaterThanOrEqual(before + 2); }, 200, 50);
  }

  /** Release a promoted and verified (the last verified release), then release b promoted: b's plan. */
  async function verifiedThenPromoted (svc: FixtureService): Promise<{ a: string, second: IImmutableImageDeploymentPlan }> {
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    const b = await pushRelease(t.app, api, svc, { tag: 'b' });
    const first = (await promote(t.app, api, svc.id, a.releaseId, { generation: 0 })).json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    expect((await send(first, svc.id, 1, verifiedReplica(first, svc.id, 'n1', 0))).status).toBe('succeeded');
    await eventually('release a verified', async () => {
      const v = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) })).json();
      expect(v.lifecycle?.succeededAt).toBeDefined();
    });
    const res = await promote(t.app, api, svc.id, b.releaseId, { generation: 1 });
    expect(res.statusCode, res.body).toBe(200);
    return { a: a.releaseId, second: res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan };
  }

  it('triggers [mismatched]: a replica failed first (not chosen), then the evidence mismatches before any success → rolled back', async () => {
    const svc = await createService({ stabilityWindowSeconds: 0, autoRollback: { enabled: true, triggers: ['mismatched'] } });
    const { a, second } = await verifiedThenPromoted(svc);
    expect((await send(second, svc.id, 1, verifiedReplica(second, svc.id, 'n1', 0, { status: 'failed' }))).status).toBe('failed');
    await fullSweep();
    expect((await current(svc.id)).rolloutId, 'failed is not a chosen trigger: no rollback yet').toBe(second.rolloutId);
    // Now the evidence does not verify: mismatched, a chosen trigger, and the rollout never succeeded.
    const wrong = `sha256:${'0'.repeat(64)}`;
    const mismatched = await send(second, svc.id, 2, verifiedReplica(second, svc.id, 'n1', 0, { evidence: { taskReportedDigest: wrong } }));
    expect(mismatched.status).toBe('mismatched');
    await fullSweep();
    await fullSweep();
    const now = await current(svc.id);
    expect({ mode: now.mode, releaseId: now.releaseId }, 'the rollout mismatched before success with autoRollback on [mismatched]')
      .toEqual({ mode: 'rollback', releaseId: a });
  });

  it('triggers [deadline]: a replica failed first (not chosen), recovered, then the progress deadline passed → rolled back', async () => {
    const svc = await createService({ stabilityWindowSeconds: 0, progressDeadlineSeconds: 30, autoRollback: { enabled: true, triggers: ['deadline'] } });
    const { a, second } = await verifiedThenPromoted(svc);
    expect((await send(second, svc.id, 1, verifiedReplica(second, svc.id, 'n1', 0, { status: 'failed' }))).status).toBe('failed');
    // The task restarts: starting again, in progress (deploying), no failure on it.
    expect((await send(second, svc.id, 2, verifiedReplica(second, svc.id, 'n1', 0, { status: 'starting', evidence: null }))).status).toBe('deploying');
    clock += 60_000;
    await eventually('rolled back once the deadline passed', async () => {
      const now = await current(svc.id);
      expect({ mode: now.mode, releaseId: now.releaseId }, 'the rollout failed by its deadline before success with autoRollback on [deadline]')
        .toEqual({ mode: 'rollback', releaseId: a });
    }, 200, 50);
    const history = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollouts`, headers: bearer(admin) });
    const [rollback] = history.json().rollouts as Array<{ trigger?: { kind: string, cause?: string, ofRolloutId?: string } }>;
    expect(rollback?.trigger).toMatchObject({ kind: 'automatic-rollback', cause: 'deadline', ofRolloutId: second.rolloutId });
  });
  it('control (passes): triggers [deadline] and no earlier failure → the deadline rolls back', async () => {
    const svc = await createService({ stabilityWindowSeconds: 0, progressDeadlineSeconds: 30, autoRollback: { enabled: true, triggers: ['deadline'] } });
    const { a, second } = await verifiedThenPromoted(svc);
    expect((await send(second, svc.id, 1, verifiedReplica(second, svc.id, 'n1', 0, { status: 'starting', evidence: null }))).status).toBe('deploying');
    clock += 60_000;
    await eventually('rolled back', async () => {
      const now = await current(svc.id);
      expect({ mode: now.mode, releaseId: now.releaseId }).toEqual({ mode: 'rollback', releaseId: a });
    }, 200, 50);
  });
});
