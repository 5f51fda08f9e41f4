import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, registerCluster } from '../../support/fixtures.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * Acceptance run 5. Without the immutable policy a cluster's deployments of a service are ONE
 * record (per (service, cluster), "per-cluster stored deployments"), and a report with
 * `reporterNodeNames` merges its node group into it (docs/api.md "Snapshot reports": "with
 * `reporterNodeNames` only that node set's deployments are replaced"). The rollout path measures
 * the merged record against the 16 MiB document limit before writing (`oversized`, 413); the
 * cluster record path (src/operations/reportSnapshot.ts `recordDeployments`) does not. Three node
 * groups of ~7 MiB each (every one within the default REPORT_BODY_LIMIT_BYTES of 8 MiB, each
 * report valid by every documented rule) make a merged record of ~21 MiB: the third report is
 * answered 500 internal-error (the driver refuses the document). docs/operations.md: bad input gets a coded
 * 4xx, never a 500.
 */
describe('node-scoped reports of a service without the immutable policy that add up past the document limit', () => {
  let t: TestApp;
  let admin: string;
  let coreflow: string;
  const groups = [0, 1, 2].map((g) => Array.from({ length: 4 }, (_, i) => `grp${g}-node${i}`));

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    coreflow = await t.token('cluster', { clusterId: 'cbig', subject: 'coreflow-cbig' });
    await registerCluster(t.app, admin, 'cbig', groups.flat());
  }, 120_000);
  afterAll(async () => { await t.close(); });

  it('answers every node group 200 or a coded 4xx, never 500', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['cbig'], replicasPerNode: 1 });
    const line = 'l'.repeat(4000);
    const answers: string[] = [];
    for (const nodes of groups) {
      // 4 nodes × 105 deployments × 4 log lines of 4,000 characters ≈ 6.9 MB: under the 8 MiB default body limit.
      const deployments = nodes.flatMap((nodeName) => Array.from({ length: 105 }, (_, i) => ({
        id: `${nodeName}-task-${i}`, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [line, line, line, line],
      })));
      const body = { serviceId: svc.id, reporterNodeNames: nodes, deployments, reportedAt: Date.now() };
      expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(8 * 1024 * 1024);
      const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: body });
      answers.push(`${res.statusCode} ${res.body.slice(0, 200)}`);
    }
    for (const answer of answers) expect(Number(answer.slice(0, 3)), answers.join('\n')).toBeLessThan(500);
  }, 180_000);
});
