import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { bearer, createFixtureService, httpCaller, registerCluster, type Caller } from '../../support/fixtures.js';

/**
 * docs/api.md "Snapshot reports": every node a report names must be registered to the token's
 * cluster. A cluster re-registered (PUT /v1/clusters/:id with one node more, then one less, as an
 * operator or an autoscaler does) keeps its other nodes registered throughout: the agents of the
 * cluster, reporting all the while through another process, are never told 403 "not registered"
 * for a node both node lists name. (Before the fix, a registration between its claims and its
 * commit made every node of the cluster unregistered for reports.)
 */
describe('reports while their cluster is re-registered, through 2 processes', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let cluster: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    admin = await fleet.token('admin');
    cluster = await fleet.token('cluster', { clusterId: 'rc', subject: 'coreflow-rc' });
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  it('60 re-registrations through one process, reports on the stable nodes through both: every report 200', async () => {
    const stable = ['rc-n1', 'rc-n2', 'rc-n3'];
    await registerCluster(callers[0]!, admin, 'rc', stable);
    const svc = await createFixtureService(callers[0]!, admin, { clusterIds: ['rc'], replicasPerNode: 1 });
    const phase = { registering: true };
    const registrations = (async () => {
      const answers: number[] = [];
      for (let i = 0; i < 60; i++) {
        const nodeNames = i % 2 === 0 ? [...stable, `rc-extra-${i}`] : stable;
        const res = await callers[0]!.inject({ method: 'PUT', url: '/v1/clusters/rc', headers: bearer(admin), payload: { nodeNames } });
        answers.push(res.statusCode);
      }
      phase.registering = false;
      return answers;
    })();
    const refusals: string[] = [];
    let reports = 0;
    await Promise.all(stable.map(async (nodeName, r) => {
      while (phase.registering) {
        const res = await callers[(reports + r) % 2]!.inject({
          method: 'POST',
          url: '/v1/deployment-snapshots',
          headers: bearer(cluster),
          payload: {
            serviceId: svc.id,
            reporterNodeNames: [nodeName],
            reportedAt: Date.now(),
            deployments: [{ id: `task-${nodeName}`, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [] }],
          },
        });
        reports++;
        if (res.statusCode !== 200) refusals.push(`${nodeName}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
    }));
    expect((await registrations).every((status) => status === 200)).toBe(true);
    expect(reports).toBeGreaterThan(60);
    expect(refusals).toEqual([]);
  }, 120_000);
});
