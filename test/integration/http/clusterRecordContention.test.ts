/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/api.md
 * "Snapshot reports and rollout status" — without the immutable policy a service's deployments are stored
 * per reporting cluster, "with reporterNodeNames only that node set's deployments are replaced". Node-
 * scoped reports of one cluster (an agent per node, or node groups sent in parallel) all land on the same
 * record; each is a valid report on its own and must be stored, however many arrive at once.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, httpCaller, registerCluster, type Caller } from '../../support/fixtures.js';

describe('node-scoped reports of one cluster, all at once (no immutable policy)', () => {
  let t: TestApp;
  let http: Caller;
  let admin: string;
  let cluster: string;
  const nodes = Array.from({ length: 48 }, (_, i) => `cn${i}`);

  beforeAll(async () => {
    t = await buildTestApp({ LOG_LEVEL: 'silent' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    http = httpCaller(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`);
    admin = await t.token('admin');
    cluster = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    await registerCluster(http, admin, 'c1', nodes);
  });
  afterAll(async () => { await t.close(); });

  it('48 concurrent reports, one per node: every one answered 200 and every node\'s deployment stored', async () => {
    const svc = await createFixtureService(http, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const answers = await Promise.all(nodes.map(async (node) => {
      const res = await http.inject({
        method: 'POST',
        url: '/v1/deployment-snapshots',
        headers: bearer(cluster),
        payload: {
          serviceId: svc.id,
          reporterNodeNames: [node],
          reportedAt: Date.now(),
          deployments: [{ id: `${node}-task`, serviceId: svc.id, nodeName: node, status: 'running', deploymentLog: [] }],
        },
      });
      return `${node}: ${res.statusCode}${res.statusCode === 200 ? '' : ` ${res.body.slice(0, 160)}`}`;
    }));
    expect(answers.filter((a) => !a.endsWith(': 200'))).toEqual([]);
    const stored = await http.inject({ method: 'GET', url: `/v1/services/${svc.id}/deployments`, headers: bearer(admin) });
    expect(stored.statusCode).toBe(200);
    expect((stored.json().deployments as Array<{ deployment: { nodeName: string } }>).map((d) => d.deployment.nodeName).sort()).toEqual([...nodes].sort());
  }, 120_000);
});
