/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/api.md
 * "Snapshot reports and rollout status" — "Every node a report names must be registered to the token's
 * cluster (`403 forbidden` otherwise)". src/store/clusterStore.ts: "A node belongs to the cluster when it
 * is in this list *and* the cluster holds its claim, so claims of a registration that is still running, or
 * crashed before committing, are never read as nodes." The report path decides "registered" from the
 * claims alone (ClusterStore.findNodeOwners).  The leftover of a registration that crashed after claiming
 * a node and before committing its node list is made here the way the registration makes it: a claim
 * document of the cluster at the next revision (no fault-injection point exists inside a cluster
 * registration).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, registerCluster } from '../../support/fixtures.js';

describe('a node claimed by an uncommitted registration is not registered', () => {
  let t: TestApp;
  let admin: string;
  let cluster: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    cluster = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  it('a report naming it is refused 403, as for any node not registered to the cluster', async () => {
    // PUT /v1/clusters/c1 { nodeNames: [n1, n-uncommitted] } that died between its claims and its commit.
    await t.db.collection('nodes').insertOne({ _id: 'n-uncommitted' as never, clusterId: 'c1', revision: 2, createdAt: Date.now() });
    const registered = await t.app.inject({ method: 'GET', url: '/v1/clusters/c1', headers: bearer(admin) });
    expect(registered.json().cluster.nodeNames).toEqual(['n1']);

    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(cluster),
      payload: {
        serviceId: svc.id,
        reporterNodeNames: ['n-uncommitted'],
        reportedAt: Date.now(),
        deployments: [{ id: 'task-x', serviceId: svc.id, nodeName: 'n-uncommitted', status: 'running', deploymentLog: [] }],
      },
    });
    expect(res.statusCode, res.body).toBe(403);
  });

  const reportOn = async (clusterToken: string, serviceId: string, nodeName: string) => await t.app.inject({
    method: 'POST',
    url: '/v1/deployment-snapshots',
    headers: bearer(clusterToken),
    payload: {
      serviceId,
      reporterNodeNames: [nodeName],
      reportedAt: Date.now(),
      deployments: [{ id: `task-${nodeName}`, serviceId, nodeName, status: 'running', deploymentLog: [] }],
    },
  });

  it('a registration of the cluster in flight (or crashed before its commit) leaves its committed nodes registered', async () => {
    await registerCluster(t.app, admin, 'c2', ['c2-n1']);
    const token = await t.token('cluster', { clusterId: 'c2', subject: 'coreflow-c2' });
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c2'], replicasPerNode: 1 });
    expect((await reportOn(token, svc.id, 'c2-n1')).statusCode).toBe(200);
    // PUT /v1/clusters/c2 { nodeNames: [c2-n1, c2-n2] } between its claims (revision 2) and its commit.
    await t.db.collection('nodes').updateOne({ _id: 'c2-n1' as never }, { $max: { revision: 2 } });
    await t.db.collection('nodes').insertOne({ _id: 'c2-n2' as never, clusterId: 'c2', revision: 2, createdAt: Date.now() });
    const during = await reportOn(token, svc.id, 'c2-n1');
    expect(during.statusCode, during.body).toBe(200);
    expect((await reportOn(token, svc.id, 'c2-n2')).statusCode).toBe(403);
  });

  it('a node a committed registration removed is not reported on, once the registration (or its retry after a crash) has completed', async () => {
    await registerCluster(t.app, admin, 'c3', ['c3-n1', 'c3-n2']);
    const token = await t.token('cluster', { clusterId: 'c3', subject: 'coreflow-c3' });
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c3'], replicasPerNode: 1 });
    expect((await reportOn(token, svc.id, 'c3-n2')).statusCode).toBe(200);
    // PUT /v1/clusters/c3 { nodeNames: [c3-n1] } that died after its commit, before removing c3-n2's claim.
    const put = async () => await t.app.inject({ method: 'PUT', url: '/v1/clusters/c3', headers: bearer(admin), payload: { nodeNames: ['c3-n1'] } });
    expect((await put()).statusCode).toBe(200);
    await t.db.collection('nodes').insertOne({ _id: 'c3-n2' as never, clusterId: 'c3', revision: 1, createdAt: Date.now() });
    // The client's retry of the PUT (it got no answer) completes it.
    const retried = await put();
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json().cluster.nodeNames).toEqual(['c3-n1']);
    expect(await t.db.collection('nodes').countDocuments({ _id: 'c3-n2' as never })).toBe(0);
    expect((await reportOn(token, svc.id, 'c3-n2')).statusCode).toBe(403);
  });
});
