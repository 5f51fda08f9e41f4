import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushRelease, registerCluster, registryHost, type FixtureService } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

/**
 * The stability window, through the real API on a clock the test moves (`now` of the use
 * cases): a replica counts as healthy and verified only once it has run verified for the
 * window — seen so in reports whose server receipt times span it, or shown so by one report's
 * `deployedAt` when that report's clock agrees with the server's within the tolerance.
 */
const W = 10;
const SECOND = 1000;

describe('stability window', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({}, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  /** A service on c1 (one node, one replica) with this rolloutPolicy, promoted. */
  async function promoted (rolloutPolicy: Record<string, unknown> | undefined): Promise<{ svc: FixtureService, plan: IImmutableImageDeploymentPlan }> {
    const repository = `team/stable-${Math.random().toString(16).slice(2, 10)}`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository }, placement: { clusterIds: ['c1'], replicasPerNode: 1 }, rolloutPolicy,
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const svc = { id: created.json().service.id as string, repository };
    const release = await pushRelease(t.app, api, svc);
    const res = await promote(t.app, api, svc.id, release.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return { svc, plan: res.json().service.data.imageDeployment };
  }

  let sequence = 0;
  /** One report of n1's replica, running and verified (unless `status` says otherwise), received at the test's clock. */
  async function report (
    s: { svc: FixtureService, plan: IImmutableImageDeploymentPlan },
    opts: { deployedAt?: number, skewMs?: number, status?: string } = {},
  ) {
    const replica = verifiedReplica(s.plan, s.svc.id, 'n1', 0, {
      ...(opts.status ? { status: opts.status } : {}),
      ...(opts.deployedAt === undefined ? {} : { deployment: { deployedAt: opts.deployedAt } }),
    });
    const body = reportBody(s.plan, s.svc.id, { sequence: ++sequence, nodeNames: ['n1'], deployments: [replica], reportedAt: clock + (opts.skewMs ?? 0) });
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(cluster), payload: body });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().status as { status: string, healthyReplicaCount: number, verifiedReplicaCount: number };
  }

  const view = async (serviceId: string) => (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(admin) })).json();

  it(`verified at t and again at t + W/2 does not count; at t + W it does (W = ${W} s)`, async () => {
    const s = await promoted({ stabilityWindowSeconds: W });
    const t0 = clock;
    expect(await report(s)).toMatchObject({ status: 'deploying', healthyReplicaCount: 0, verifiedReplicaCount: 0 });
    let v = await view(s.svc.id);
    expect(v.blocking).toEqual([expect.objectContaining({ kind: 'replica-not-stable', nodeName: 'n1', detail: expect.stringContaining('0 s of 10 s') })]);
    expect(v.reporters[0].replicas[0].stability)
      .toEqual({ state: 'not-yet-stable', windowMs: W * SECOND, runningVerifiedSince: t0, stableAt: t0 + W * SECOND });

    clock += (W / 2) * SECOND;
    expect(await report(s)).toMatchObject({ status: 'deploying', healthyReplicaCount: 0, verifiedReplicaCount: 0 });
    expect((await view(s.svc.id)).blocking[0].detail).toContain('5 s of 10 s');

    // The window is over, but no report has said so yet: waiting for one.
    clock += (W / 2) * SECOND;
    v = await view(s.svc.id);
    expect(v.status.status).toBe('deploying');
    expect(v.reporters[0].replicas[0].stability.state).toBe('waiting-for-report');
    expect(v.blocking[0].detail).toContain('waiting for a report');

    expect(await report(s)).toMatchObject({ status: 'succeeded', healthyReplicaCount: 1, verifiedReplicaCount: 1 });
    v = await view(s.svc.id);
    expect(v.blocking).toEqual([]);
    expect(v.reporters[0].replicas[0].stability.state).toBe('stable');
    expect(v.lifecycle.succeededAt).toBe(clock);
  });

  it('a single report whose task has run W already counts at once (its clock agrees with the server\'s)', async () => {
    const s = await promoted({ stabilityWindowSeconds: W });
    expect(await report(s, { deployedAt: clock - W * SECOND, skewMs: 3 * SECOND })).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 1 });
    // One second short: not yet.
    const short = await promoted({ stabilityWindowSeconds: W });
    expect(await report(short, { deployedAt: clock - (W - 1) * SECOND })).toMatchObject({ status: 'deploying', verifiedReplicaCount: 0 });
  });

  it('a report whose reportedAt is off by more than the tolerance does not shorten the window, whatever deployedAt says', async () => {
    for (const skewMs of [6 * SECOND, -6 * SECOND, 3_600 * SECOND]) {
      const s = await promoted({ stabilityWindowSeconds: W, clockToleranceSeconds: 5 });
      const received = clock;
      // "Deployed a day ago", by a clock a minute (or an hour, or 6 s back) off the server's.
      expect(await report(s, { deployedAt: clock + skewMs - 86_400 * SECOND, skewMs }), `skew ${skewMs}`)
        .toMatchObject({ status: 'deploying', verifiedReplicaCount: 0 });
      expect((await view(s.svc.id)).reporters[0].replicas[0].verifiedSince).toBe(received);
      // The server's own receipt times still count: W later, it is stable.
      clock += W * SECOND;
      expect(await report(s, { deployedAt: clock + skewMs - 86_400 * SECOND, skewMs })).toMatchObject({ status: 'succeeded' });
    }
  });

  it('a replica that stopped running in between starts its window again', async () => {
    const s = await promoted({ stabilityWindowSeconds: W });
    await report(s);
    clock += (W / 2) * SECOND;
    await report(s, { status: 'starting' });
    clock += (W / 2) * SECOND;
    // W after the first report, but only just running again.
    expect(await report(s)).toMatchObject({ status: 'deploying', verifiedReplicaCount: 0 });
    clock += W * SECOND;
    expect(await report(s)).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 1 });
  });

  it(`without a rolloutPolicy the window is the default ${W} s, and the view says so`, async () => {
    const s = await promoted(undefined);
    expect(await report(s)).toMatchObject({ status: 'deploying', verifiedReplicaCount: 0 });
    const v = await view(s.svc.id);
    expect(v.lifecycle.policy).toMatchObject({ stabilityWindowSeconds: 10, clockToleranceSeconds: 5, progressDeadlineSeconds: 600 });
    clock += 10 * SECOND;
    expect(await report(s)).toMatchObject({ status: 'succeeded' });
  });
});
