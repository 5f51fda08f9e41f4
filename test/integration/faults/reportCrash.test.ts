import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImageRolloutStatus } from '../../../src/contracts/index.js';
import { validateImageRolloutStatus } from '../../../src/contracts/index.js';
import { canonical, expectedDeployments, storedDeploymentsOf, withoutReporter } from '../../support/deployments.js';
import { bearer, httpCaller, promotedService, registerCluster, type Caller } from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

/**
 * docs/api.md "How reports are stored": a crash at any step boundary of the report path leaves either
 * no effect or one that the agent's retry of the same report completes. Real server processes,
 * killed with SIGKILL at each fault point of the path (claims written; the reporter's record
 * written; the status summary written), then the same report sent again to a fresh process.
 */
describe('snapshot reports survive a crash at every step boundary (real processes, SIGKILL)', () => {
  let fleet: Fleet;
  let healthy: Caller;
  let admin: string;
  let api: string;
  let coreflow: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    healthy = httpCaller(fleet.servers[0]!.url);
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    coreflow = await fleet.token('cluster', { clusterId: 'k1', subject: 'coreflow-k1' });
    await registerCluster(healthy, admin, 'k1', ['k1-n1', 'k1-n2']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const statusOf = async (serviceId: string): Promise<IImageRolloutStatus> =>
    (await healthy.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageRolloutStatus;

  const eventsOf = async (serviceId: string): Promise<Array<{ status: string, verifiedReplicaCount: number }>> => {
    const db = await fleet.db();
    const doc = await db.collection('services').findOne({ _id: serviceId as never }, { projection: { statusEvents: 1 } });
    return (doc?.['statusEvents'] ?? []) as Array<{ status: string, verifiedReplicaCount: number }>;
  };

  for (const point of ['after-report-claims', 'after-report-record', 'after-report-bucket', 'after-report-status']) {
    it(`killed ${point}: the retry of the same report completes it, exactly once`, async () => {
      const { svc, plan } = await promotedService(healthy, { admin, api }, { clusterIds: ['k1'], replicasPerNode: 1 });
      const nodes = ['k1-n1', 'k1-n2'];
      const deployments = fullReplicas(plan, svc.id, nodes);
      const body = reportBody(plan, svc.id, { session: `s-${point}`, sequence: 1, nodeNames: nodes, deployments });

      const victim = fleet.servers[1]!;
      await victim.restart({ FAULT_INJECTION: point });
      const crashed = await httpCaller(victim.url).inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: body })
        .then((r) => r.statusCode, () => 'connection lost');
      expect(crashed).toBe('connection lost');
      expect(await victim.exited).toBeNull();
      expect(victim.logs.join('\n')).toContain(`FAULT_INJECTION: crashing at ${point}`);
      await victim.restart();

      // The agent retries the same report (same session and sequence), through the fresh process.
      const retried = await httpCaller(victim.url).inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: body });
      expect(retried.statusCode, retried.body).toBe(200);
      expect(['applied', 'replayed']).toContain(retried.json().outcome);
      expect(retried.json().status).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 2 });

      const status = await statusOf(svc.id);
      expect(validateImageRolloutStatus(status)).toEqual([]);
      expect(status).toMatchObject({ status: 'succeeded', observedReplicaCount: 2, verifiedReplicaCount: 2 });
      expect(status.reporters.map((r) => [r.reporterId, r.reportSequence])).toEqual([['k1/coreflow-k1', 1]]);
      const stored = withoutReporter(await storedDeploymentsOf({ db: () => fleet.db(), caller: healthy, token: admin })(svc.id));
      expect(canonical(stored)).toBe(canonical(expectedDeployments('k1', deployments)));
      // The last event is the state reached: the retry published what the crash left unpublished.
      expect((await eventsOf(svc.id)).at(-1)).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 2 });

      // And once more: a plain replay now, nothing changes.
      const again = await healthy.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: body });
      expect(again.json().outcome).toBe('replayed');
      expect(await statusOf(svc.id)).toEqual({ ...status, updatedAt: status.updatedAt });
    }, 60_000);
  }

  /** One report of reporter k1 on both nodes, the first `failed` replicas failed, through `caller`. */
  type Plan = Parameters<typeof fullReplicas>[0];
  const sendNext = (caller: Caller, svcId: string, plan: Plan, session: string, sequence: number, failed: number) => {
    const nodes = ['k1-n1', 'k1-n2'];
    const deployments = fullReplicas(plan, svcId, nodes).map((d, i) => (i < failed ? { ...d, status: 'failed' } : d));
    const payload = reportBody(plan, svcId, { session, sequence, nodeNames: nodes, deployments });
    return caller.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload });
  };
  const totalsOf = async (serviceId: string) => {
    const services = (await fleet.db()).collection('services');
    return (await services.findOne({ _id: serviceId as never }, { projection: { 'rolloutStatus.totals': 1 } }))?.['rolloutStatus']?.totals;
  };

  it('a process that remembers a reporter\'s contribution does not take a later report as covered when another process ' +
    'changed the contribution since (verified → one failed → verified again, the middle one elsewhere)', async () => {
    const { svc, plan } = await promotedService(healthy, { admin, api }, { clusterIds: ['k1'], replicasPerNode: 1 });
    const other = httpCaller(fleet.servers[1]!.url);
    expect((await sendNext(healthy, svc.id, plan, 's-aba', 1, 0)).json().status).toMatchObject({ status: 'succeeded' });
    expect((await sendNext(other, svc.id, plan, 's-aba', 2, 1)).json().status).toMatchObject({ status: 'failed', failedReplicaCount: 1 });
    const back = await sendNext(healthy, svc.id, plan, 's-aba', 3, 0);
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json().status).toMatchObject({ status: 'succeeded', failedReplicaCount: 0, verifiedReplicaCount: 2 });
    expect(await totalsOf(svc.id)).toMatchObject({ observed: 2, failed: 0, verified: 2 });
  }, 60_000);

  it('killed after-report-bucket on a rollout\'s first report, and the agent never reports again: the lifecycle sweeper ' +
    'brings the bucket into the summary, and the rollout succeeds', async () => {
    const { svc, plan } = await promotedService(healthy, { admin, api }, { clusterIds: ['k1'], replicasPerNode: 1 });
    const victim = fleet.servers[1]!;
    await victim.restart({ FAULT_INJECTION: 'after-report-bucket' });
    const crashed = await sendNext(httpCaller(victim.url), svc.id, plan, 's-gone', 1, 0).then((r) => r.statusCode, () => 'connection lost');
    expect(crashed).toBe('connection lost');
    expect(await victim.exited).toBeNull();
    // The bucket holds the contribution (the summary does not, until a sweep: process 0's may come first).
    const buckets = (await fleet.db()).collection('statusBuckets');
    expect(await buckets.countDocuments({ rolloutId: plan.rolloutId })).toBe(1);
    await victim.restart({ LIFECYCLE_SWEEP_INTERVAL_MS: '200' });
    let totals: unknown;
    for (let waited = 0; waited < 15_000; waited += 100) {
      totals = await totalsOf(svc.id);
      if ((totals as { verified?: number } | undefined)?.verified === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(totals).toMatchObject({ observed: 2, failed: 0, verified: 2 });
    for (let waited = 0; waited < 15_000 && (await statusOf(svc.id)).status !== 'succeeded'; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await statusOf(svc.id)).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 2 });
    const logs = [...fleet.servers[0]!.logs, ...victim.logs].join('\n');
    expect(logs).toContain('status buckets left ahead of the summary by a crash were brought into it');
    await victim.restart();
  }, 60_000);

  it('killed after-report-bucket, then the reporter\'s NEXT report through the other process (which remembers the reporter\'s ' +
    'contribution from before the crash): the summary counts both reports\' deltas', async () => {
    const { svc, plan } = await promotedService(healthy, { admin, api }, { clusterIds: ['k1'], replicasPerNode: 1 });
    // Process 0 writes (and so remembers) the reporter's contribution: both replicas verified.
    const first = await sendNext(healthy, svc.id, plan, 's-next', 1, 0);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().status).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 2 });
    // Process 1 takes the next report (one replica failed) and dies between the bucket's write and the service's.
    const victim = fleet.servers[1]!;
    await victim.restart({ FAULT_INJECTION: 'after-report-bucket' });
    const crashed = await sendNext(httpCaller(victim.url), svc.id, plan, 's-next', 2, 1).then((r) => r.statusCode, () => 'connection lost');
    expect(crashed).toBe('connection lost');
    expect(await victim.exited).toBeNull();
    await victim.restart();
    // The agent's next report (the same failure) goes to process 0: not covered by what it remembers.
    const next = await sendNext(healthy, svc.id, plan, 's-next', 3, 1);
    expect(next.statusCode, next.body).toBe(200);
    expect(next.json().status).toMatchObject({ status: 'failed', failedReplicaCount: 1, verifiedReplicaCount: 1 });
    expect(await totalsOf(svc.id)).toMatchObject({ observed: 2, failed: 1, verified: 1 });
    expect(await statusOf(svc.id)).toMatchObject({ status: 'failed', failedReplicaCount: 1 });
  }, 60_000);
});
