/**
 * Found by an independent acceptance run (the test failed on the code before its fix): README
 * "REPORT_BODY_LIMIT_BYTES … a full report of a 1,000-node cluster fits". The byte limit held, but the
 * report schema also capped `deployments` at 4,096 items (src/contracts/common.ts
 * `deploymentsPerReport`, now 8,192), so a 1,000-node cluster running 5 replicas per node could not
 * send its full report — and node-scoped reports did not add up either (reportScopes.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, promotedService, registerCluster } from '../../support/fixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

const NODES = 1_000;
const REPLICAS_PER_NODE = 5;

describe('a full report of a 1,000-node cluster', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let coreflow: string;
  const nodes = Array.from({ length: NODES }, (_, i) => `big-${String(i).padStart(4, '0')}`);

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    coreflow = await t.token('cluster', { clusterId: 'cbig', subject: 'coreflow-cbig' });
    await registerCluster(t.app, admin, 'cbig', nodes);
  }, 120_000);
  afterAll(async () => { await t.close(); });

  it(`${NODES} nodes × ${REPLICAS_PER_NODE} replicas, all verified, within REPORT_BODY_LIMIT_BYTES: accepted, and the rollout succeeds`, async () => {
    const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['cbig'], replicasPerNode: REPLICAS_PER_NODE });
    expect(plan.targetScope.requiredReplicaCount).toBe(NODES * REPLICAS_PER_NODE);
    const body = reportBody(plan, svc.id, { session: 's-big', sequence: 1, nodeNames: nodes, deployments: fullReplicas(plan, svc.id, nodes) });
    const bytes = Buffer.byteLength(JSON.stringify(body));
    expect(bytes).toBeLessThan(t.config.REPORT_BODY_LIMIT_BYTES);
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: body });
    expect(res.statusCode, res.body.slice(0, 400)).toBe(200);
    expect(res.json().status).toMatchObject({ status: 'succeeded', verifiedReplicaCount: NODES * REPLICAS_PER_NODE });
  }, 120_000);
});
