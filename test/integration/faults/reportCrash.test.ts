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
});
