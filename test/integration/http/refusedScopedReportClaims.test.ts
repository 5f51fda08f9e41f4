/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/api.md
 * "Snapshot reports and rollout status" — a reporter's node groups together may hold at most 12 MiB of
 * deployments, "`413 payload-too-large` beyond, nothing written: a larger cluster reports through several
 * reporters (tokens with different subjects)"; and "a refused report changes nothing at all". The 413 is
 * decided after the report's nodes were claimed for its reporter, and the claim stays: the node the
 * refused report named can then be reported by no other reporter of the cluster for the rest of the
 * rollout.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, httpCaller, promotedService, registerCluster, type Caller } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

describe('a 413 node-scoped report leaves nothing behind', () => {
  let t: TestApp;
  let http: Caller;
  let admin: string;
  let api: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    t = await buildTestApp({ LOG_LEVEL: 'silent' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    http = httpCaller(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`);
    admin = await t.token('admin');
    api = await t.token('api');
    first = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-a' });
    second = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-b' });
    await registerCluster(http, admin, 'c1', ['n1', 'n2', 'n3', 'n4']);
  });
  afterAll(async () => { await t.close(); });

  it('after the first reporter\'s 413 on n3, a second reporter of the same cluster may report n3', async () => {
    const { svc, plan } = await promotedService(http, { admin, api }, { clusterIds: ['c1'], replicasPerNode: 1 });
    // ~6 MB of deployment log per node group (two tasks of ~3 MB): two groups fit the 16 MiB document limit, a third does not.
    const log = Array.from({ length: 1000 }, () => 'x'.repeat(3000));
    const group = (token: string, session: string, sequence: number, node: string, withLog: boolean) => http.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(token),
      payload: reportBody(plan, svc.id, {
        session,
        sequence,
        nodeNames: [node],
        deployments: [0, 1].map((i) => verifiedReplica(plan, svc.id, node, i, withLog ? { deployment: { deploymentLog: log } } : {})),
      }),
    });
    const one = await group(first, 's-a', 1, 'n1', true);
    expect(one.statusCode, one.body.slice(0, 600)).toBe(200);
    expect((await group(first, 's-a', 2, 'n2', true)).statusCode).toBe(200);
    const refused = await group(first, 's-a', 3, 'n3', true);
    expect(refused.statusCode, refused.body).toBe(413);
    expect(refused.json().code).toBe('payload-too-large');
    // As the 413 advises: the rest of the cluster through another reporter.
    const other = await group(second, 's-b', 1, 'n3', false);
    expect(other.statusCode, other.body).toBe(200);
  }, 120_000);

  it('node-scoped reports of one reporter racing each other: the claims of the superseded ones are released once old, ' +
    'so another reporter may report those nodes (they were lost to it for the whole rollout)', async () => {
    const nodes = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9', 'r10', 'r11', 'r12'];
    await registerCluster(http, admin, 'c2', nodes);
    const racer = await t.token('cluster', { clusterId: 'c2', subject: 'coreflow-racer' });
    const other = await t.token('cluster', { clusterId: 'c2', subject: 'coreflow-other' });
    const { svc, plan } = await promotedService(http, { admin, api }, { clusterIds: ['c2'], replicasPerNode: 1 });
    const scoped = (token: string, session: string, sequence: number, node: string) => http.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(token),
      payload: reportBody(plan, svc.id, { session, sequence, nodeNames: [node], deployments: [verifiedReplica(plan, svc.id, node, 0)] }),
    });
    // Sequence i names node i only, all at once: a report overtaken by a higher sequence is refused as stale.
    const answers = await Promise.all(nodes.map(async (node, i) => await scoped(racer, 's-race', i + 1, node)));
    const record = await t.db.collection('reports').findOne({ _id: `rollout:${plan.rolloutId}:c2/coreflow-racer` as never });
    const held = new Set(record?.['nodeNames'] as string[]);
    const lost = nodes.filter((node, i) => answers[i]!.statusCode !== 200 && !held.has(node));
    // The twelve reports meet in one batch of record writes: one wins, and the others are overtaken.
    expect(lost.length, 'nodes left claimed by superseded reports').toBeGreaterThan(0);
    // Claims the superseded reports made: young ones stand (the report may still be in flight); once old, released.
    const before = await scoped(other, 's-other', 1, lost[0]!);
    expect(before.statusCode, before.body).toBe(409);
    await t.db.collection('reportClaims').updateMany({ rolloutId: plan.rolloutId }, { $inc: { createdAt: -120_000 } });
    for (const [i, node] of lost.entries()) {
      const res = await scoped(other, 's-other', i + 2, node);
      expect(res.statusCode, `${node}: ${res.body}`).toBe(200);
    }
    // A node the racer's accepted reports named stays the racer's, however old its claim.
    const kept = [...held][0]!;
    const refused = await scoped(other, 's-other', lost.length + 2, kept);
    expect(refused.statusCode, refused.body).toBe(409);
  }, 120_000);
});
