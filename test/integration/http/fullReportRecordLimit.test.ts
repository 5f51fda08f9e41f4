/**
 * docs/operations.md: `REPORT_BODY_LIMIT_BYTES` may be set up to 12 MiB; docs/api.md "One report holds at
 * most 8,192 deployments, within REPORT_BODY_LIMIT_BYTES"; src/operations/reportSnapshot.ts RECORD_LIMIT_BYTES:
 * "(One report alone cannot pass it: its body is at most 12 MiB and its deployments at most 8,192.)" — so the
 * record-size check (`413 payload-too-large`, "so that its record stays within the database's 16 MiB document
 * limit") runs only for node-scoped reports that keep other nodes.
 *
 * But a record holds the deployments' JSON (up to the body's size) AND one verdict per replica, which repeats
 * the node name (≤ 253 characters in a registration) and the deployment id (≤ 128) of every deployment: a full report of 8,192
 * deployments within a 12 MiB body makes a record over 16 MiB (observed: `500 internal-error`; the same body
 * with complete evidence on 7,368 deployments was stored at 16,618,769 bytes, 158 KB under the limit). The report is valid by every documented rule
 * and fits the configured limit; the answer must be a success or a coded 4xx (413), never a 500 — and a report
 * that is not accepted holds nothing (observed: its nodes stay claimed, so no other reporter may report them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, promotedService, registerCluster } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

const TWELVE_MIB = 12 * 1024 * 1024;
const DEPLOYMENTS = 8_192;

describe('a full report at the documented limits (REPORT_BODY_LIMIT_BYTES = 12 MiB, 8,192 deployments)', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let coreflow: string;
  // Registered node names may be 253 characters, deployment ids 128 (Id).
  const nodes = Array.from({ length: 8 }, (_, i) => `n${i}-`.padEnd(253, 'x'));

  beforeAll(async () => {
    t = await buildTestApp({ REPORT_BODY_LIMIT_BYTES: TWELVE_MIB });
    admin = await t.token('admin');
    api = await t.token('api');
    coreflow = await t.token('cluster', { clusterId: 'cwide', subject: 'coreflow-cwide' });
    await registerCluster(t.app, admin, 'cwide', nodes);
  }, 120_000);
  afterAll(async () => { await t.close(); });

  it('is answered 200 or a coded 413, never 500', async () => {
    const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['cwide'], replicasPerNode: 1 });
    // 8,192 running tasks (no inspection evidence yet: a mismatch the server records per replica), their
    // log lines filling the body to just under 12 MiB.
    const deployments = Array.from({ length: DEPLOYMENTS }, (_, i) =>
      verifiedReplica(plan, svc.id, nodes[i % nodes.length]!, i, { evidence: null, deployment: { id: `task-${i}-`.padEnd(128, 'y') } }));
    const nodeIds = nodes.map((_, i) => `node-id-${i}`);
    const bodyOf = () => {
      const b = reportBody(plan, svc.id, { session: 's-wide', sequence: 1, nodeNames: nodes, deployments });
      (b['immutableReport'] as Record<string, unknown>)['reporterNodeIds'] = nodeIds;
      return b;
    };
    const room = TWELVE_MIB - Buffer.byteLength(JSON.stringify(bodyOf())) - 16 * 1024;
    const line = 'l'.repeat(Math.min(4096, Math.floor(room / DEPLOYMENTS) - 8));
    for (const d of deployments) d['deploymentLog'] = [line];
    const body = bodyOf();
    const bytes = Buffer.byteLength(JSON.stringify(body));
    expect(bytes).toBeLessThan(TWELVE_MIB);
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: body });
    const answer = `${res.statusCode} ${res.body.slice(0, 400)}`;
    if (res.statusCode !== 200) {
      // Not accepted: nothing written, nothing claimed — another reporter of the cluster may report those nodes.
      const other = await t.token('cluster', { clusterId: 'cwide', subject: 'coreflow-cwide-2' });
      const replica = verifiedReplica(plan, svc.id, nodes[0]!, 0, { deployment: { id: 'other-task-0' } });
      const small = reportBody(plan, svc.id, { session: 's-other', sequence: 1, nodeNames: [nodes[0]!], deployments: [replica] });
      (small['immutableReport'] as Record<string, unknown>)['reporterNodeIds'] = ['node-id-0'];
      const second = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(other), payload: small });
      expect(second.statusCode, `after the first report was answered ${answer}, a second reporter: ${second.body.slice(0, 300)}`).toBe(200);
    }
    expect([200, 413], answer).toContain(res.statusCode);
  }, 180_000);
});
