/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/api.md
 * "Snapshot reports and rollout status" — a reporter's node groups together may hold at most 12 MiB of
 * deployments (`413 payload-too-large` beyond, nothing written), "so that a record stays well within the
 * database's 16 MiB document limit however a reporter splits its reports"
 * (src/operations/reportSnapshot.ts). The 12 MiB are counted on the deployments' JSON only; the record
 * also holds one verdict per replica, which for small deployments is larger than the deployment itself.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, httpCaller, promotedService, registerCluster, type Caller } from '../../support/fixtures.js';
import { reportBody } from '../../support/reports.js';

describe('node-scoped reports: the record limit', () => {
  let t: TestApp;
  let http: Caller;
  let admin: string;
  let api: string;
  let c1: string;
  const nodes = Array.from({ length: 10 }, (_, i) => `big-n${i}`);

  beforeAll(async () => {
    t = await buildTestApp({ LOG_LEVEL: 'silent' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    http = httpCaller(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`);
    admin = await t.token('admin');
    api = await t.token('api');
    c1 = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-big' });
    await registerCluster(http, admin, 'c1', nodes);
  });
  afterAll(async () => { await t.close(); });

  it('node group after node group of small valid reports: every answer is 200 or 413, never a 500, and the reporter keeps reporting', async () => {
    const { svc, plan } = await promotedService(http, { admin, api }, { clusterIds: ['c1'], replicasPerNode: 1 });
    const answers: string[] = [];
    for (let k = 0; k < nodes.length; k++) {
      const node = nodes[k] ?? '';
      // 8,192 deployments (the per-report maximum) of ~100 bytes each: well under 1 MiB per report.
      const deployments = Array.from({ length: 8192 }, (_, i) => ({
        id: `t${k}-${i}`, serviceId: svc.id, nodeName: node, status: 'running', deploymentLog: [],
      }));
      const res = await http.inject({
        method: 'POST',
        url: '/v1/deployment-snapshots',
        headers: bearer(c1),
        payload: reportBody(plan, svc.id, { session: 's-big', sequence: k + 1, nodeNames: [node], deployments }),
      });
      answers.push(`${node}: ${res.statusCode}${res.statusCode === 200 ? '' : ` ${String(res.json().code)}`}`);
      if (res.statusCode !== 200) break;
    }
    expect(answers.filter((a) => !/: (200|413 payload-too-large)$/.test(a)), answers.join('\n')).toEqual([]);
  }, 300_000);
});
