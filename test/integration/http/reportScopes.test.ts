/**
 * Found by an independent acceptance run (each test failed on the code before its fix): snapshot reports
 * (docs/lifecycle.md "Snapshot reports", docs/api.md "Snapshot reports and rollout status", docs/lifecycle.md
 * "Stability window"). Each test pins one defect: it fails on the code it was written against, for the
 * reason its name states.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { migrations } from '../../../src/store/migrations.js';
import { earlierServiceRecord } from '../../support/deployments.js';
import { bearer, createFixtureService, promote, promotedService, pushRelease, registerCluster, registryHost } from '../../support/fixtures.js';
import { fullReplicas, reportBody, verifiedReplica } from '../../support/reports.js';

describe('snapshot reports: scopes, fail-closed counting, stability', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let c1: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    c1 = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
  });
  afterAll(async () => { await t.close(); });

  const send = (token: string, body: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
  const serviceStatus = async (serviceId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().service.data.imageRolloutStatus as Record<string, unknown> | undefined;
  };
  /** What the start-up migrations do to documents of an earlier shape (they ran on the empty database at start-up). */
  const migrate = async () => { for (const m of migrations) await m.apply(t.db, Date.now()); };
  const storedDeployments = async (serviceId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/deployments`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().deployments as Array<{ clusterId: string, reporterId: string, deployment: { id: string, nodeName?: string } }>)
      .map((d) => `${d.clusterId}/${d.deployment.nodeName ?? ''}/${d.deployment.id}`).sort();
  };

  it('fail-closed: an extra RUNNING task of the current rollout with no runtime evidence at all keeps the rollout from succeeding', async () => {
    // replicasPerNode 1: each node's first task is counted and verifies; n1 runs a second task of the
    // SAME rollout (deployment rolloutId/generation are the plan's) that carries no evidence at all.
    // Nothing proves which digest that running container runs: docs/api.md "Counting" says a running
    // task of the current rollout whose evidence does not verify keeps the rollout from succeeding,
    // even when it is an extra one (fail-closed: never silently dropped).
    const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['c1'], replicasPerNode: 1 });
    const unproven = verifiedReplica(plan, svc.id, 'n1', 9, { evidence: null });
    expect(unproven['rolloutId']).toBe(plan.rolloutId);
    expect(unproven['status']).toBe('running');
    const deployments = [...fullReplicas(plan, svc.id, ['n1', 'n2']), unproven];
    const res = await send(c1, reportBody(plan, svc.id, { session: 's-extra', sequence: 1, nodeNames: ['n1', 'n2'], deployments }));
    expect(res.statusCode, res.body).toBe(200);
    const status = await serviceStatus(svc.id);
    expect(status?.['status'], JSON.stringify(status)).not.toBe('succeeded');
  });

  describe('node-scoped reports (reporterNodeNames) replace only that node set', () => {
    /** One Coreflow that reports node by node (reporterNodeNames = [one node]), one session, growing sequence. */
    async function reportNodeByNode (plan: IImmutableImageDeploymentPlan, serviceId: string): Promise<void> {
      const scoped = (sequence: number, node: string) =>
        reportBody(plan, serviceId, { session: 's-per-node', sequence, nodeNames: [node], deployments: fullReplicas(plan, serviceId, [node]) });
      const one = await send(c1, scoped(1, 'n1'));
      expect(one.statusCode, one.body).toBe(200);
      const two = await send(c1, scoped(2, 'n2'));
      expect(two.statusCode, two.body).toBe(200);
    }

    it('immutable policy: a report scoped to n2 keeps the deployments the same cluster stated for n1', async () => {
      // docs/api.md: "with reporterNodeNames only that node set's deployments are replaced".
      const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['c1'], replicasPerNode: 1 });
      await reportNodeByNode(plan, svc.id);
      expect(await storedDeployments(svc.id)).toEqual(['c1/n1/n1-task-0', 'c1/n2/n2-task-0']);
    });

    it('immutable policy: every target node reported verified, node by node, makes the rollout succeed ' +
      '(n1 stays claimed by the reporter, yet is counted as "no reporter covers it")', async () => {
      const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['c1'], replicasPerNode: 1 });
      await reportNodeByNode(plan, svc.id);
      const status = await serviceStatus(svc.id);
      expect({ status: status?.['status'], observed: status?.['observedReplicaCount'] }).toEqual({ status: 'succeeded', observed: 2 });
    });
  });

  it('without the immutable policy: a report without reporterNodeNames replaces ALL of the reporting cluster\'s deployments, ' +
    'also those an earlier token of the same cluster (rotated subject) reported', async () => {
    // docs/api.md: "without it all of the reporting cluster's deployments of the service (a cluster
    // never replaces another cluster's)". The cluster is the unit, not the token subject: a Coreflow
    // whose token was rotated (new `sub`) must not leave the old token's tasks behind forever.
    const rotated = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1-rotated' });
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
    const task = (id: string, nodeName: string) => ({ id, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [] });
    const before = await send(c1, { serviceId: svc.id, deployments: [task('old-task', 'n1')], reportedAt: Date.now() });
    expect(before.statusCode, before.body).toBe(200);
    const after = await send(rotated, { serviceId: svc.id, deployments: [task('new-task', 'n2')], reportedAt: Date.now() });
    expect(after.statusCode, after.body).toBe(200);
    expect(await storedDeployments(svc.id)).toEqual(['c1/n2/new-task']);
  });

  it('without the immutable policy: node-scoped reports of two tokens of one cluster each replace their nodes\' deployments, ' +
    'and each deployment names the token and time that stated it', async () => {
    const other = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1-node-agent' });
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
    const task = (id: string, nodeName: string) => ({ id, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [] });
    const full = await send(c1, { serviceId: svc.id, deployments: [task('a1', 'n1'), task('b1', 'n2')], reportedAt: 1_000 });
    expect(full.statusCode, full.body).toBe(200);
    const scoped = await send(other, { serviceId: svc.id, reporterNodeNames: ['n2'], deployments: [task('b2', 'n2')], reportedAt: 2_000 });
    expect(scoped.statusCode, scoped.body).toBe(200);
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/deployments`, headers: bearer(admin) });
    const rows = (res.json().deployments as Array<{ reporterId: string, reportedAt: number, deployment: { id: string } }>)
      .map((d) => `${d.deployment.id} by ${d.reporterId} at ${d.reportedAt}`);
    expect(rows).toEqual(['a1 by c1/coreflow-c1 at 1000', 'b2 by c1/coreflow-c1-node-agent at 2000']);
  });

  it('without the immutable policy: a reporter\'s record of the earlier per-reporter kind becomes its cluster\'s record at start-up, ' +
    'where the cluster\'s reports go on from', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
    const task = (id: string, nodeName: string) => ({ id, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [] });
    // As records were written before they were kept per cluster: one per reporter.
    const earlier = earlierServiceRecord(svc.id, 'c1/coreflow-c1', [task('old-n1', 'n1'), task('old-n2', 'n2')]);
    const earlierId = earlier._id as string;
    await t.db.collection('reports').insertOne(earlier);
    await migrate();
    expect(await storedDeployments(svc.id)).toEqual(['c1/n1/old-n1', 'c1/n2/old-n2']);
    expect(await t.db.collection('reports').countDocuments({ _id: earlierId as never })).toBe(0);
    const scoped = await send(c1, { serviceId: svc.id, reporterNodeNames: ['n2'], deployments: [task('new-n2', 'n2')], reportedAt: Date.now() });
    expect(scoped.statusCode, scoped.body).toBe(200);
    expect(await storedDeployments(svc.id)).toEqual(['c1/n1/old-n1', 'c1/n2/new-n2']);
  });

  it('without the immutable policy: a migration interrupted between writing the cluster\'s record and removing the reporter\'s ' +
    'earlier one is finished by the next start-up; the deployments are never shown twice', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
    const task = (id: string, nodeName: string) => ({ id, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [] });
    const earlier = earlierServiceRecord(svc.id, 'c1/coreflow-c1', [task('old-n1', 'n1'), task('old-n2', 'n2')]);
    const earlierId = earlier._id as string;
    await t.db.collection('reports').insertOne(earlier);
    await migrate();
    // What a crash right after the cluster's record was written leaves: the earlier record still stored.
    await t.db.collection('reports').insertOne(earlier);
    await migrate();
    expect(await t.db.collection('reports').countDocuments({ _id: earlierId as never })).toBe(0);
    expect(await storedDeployments(svc.id)).toEqual(['c1/n1/old-n1', 'c1/n2/old-n2']);
    const next = await send(c1, { serviceId: svc.id, deployments: [task('next-n1', 'n1')], reportedAt: Date.now() });
    expect(next.statusCode, next.body).toBe(200);
    expect(await storedDeployments(svc.id)).toEqual(['c1/n1/next-n1']);
  });

  it('immutable policy: node-scoped reports whose record together would pass the document limit are refused (413), ' +
    'nothing is written or claimed', async () => {
    await registerCluster(t.app, admin, 'c-heavy', ['h1', 'h2', 'h3']);
    const heavyToken = await t.token('cluster', { clusterId: 'c-heavy', subject: 'coreflow-heavy' });
    const otherToken = await t.token('cluster', { clusterId: 'c-heavy', subject: 'coreflow-heavy-2' });
    const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['c-heavy'], replicasPerNode: 1 });
    // Three node scopes of about 6.6 MB each: each report is within REPORT_BODY_LIMIT_BYTES, the record of all three would not be.
    const heavy = (node: string, i: number) => verifiedReplica(plan, svc.id, node, i, {
      deployment: { deploymentLog: Array.from({ length: 1_000 }, (_, l) => `${node} line ${l} ${'x'.repeat(3_300)}`) },
    });
    const scoped = (sequence: number, node: string) =>
      reportBody(plan, svc.id, { session: 's-heavy', sequence, nodeNames: [node], deployments: [heavy(node, 0), heavy(node, 1)] });
    expect((await send(heavyToken, scoped(1, 'h1'))).statusCode).toBe(200);
    expect((await send(heavyToken, scoped(2, 'h2'))).statusCode).toBe(200);
    const third = await send(heavyToken, scoped(3, 'h3'));
    expect(third.statusCode, third.body.slice(0, 300)).toBe(413);
    expect(third.json()).toMatchObject({ code: 'payload-too-large', limitBytes: 16 * 1024 * 1024 - 64 * 1024 });
    const record = await t.db.collection('reports').findOne({ serviceId: svc.id, rolloutId: plan.rolloutId });
    expect({ version: record?.['version'], nodes: record?.['nodeNames'] }).toEqual({ version: 2, nodes: ['h1', 'h2'] });
    // h3 was not claimed: another reporter of the cluster may report it.
    const otherReport = reportBody(plan, svc.id, { session: 's-other', sequence: 1, nodeNames: ['h3'], deployments: fullReplicas(plan, svc.id, ['h3']) });
    const other = await send(otherToken, otherReport);
    expect(other.statusCode, other.body.slice(0, 300)).toBe(200);
  }, 60_000);

  it('stability window: a replica the server saw MISMATCHED in the previous report is not "verified for the window" ' +
    'on the next report just because its deployedAt is old', async () => {
    // docs/lifecycle.md: verified "only once it has been running with verified evidence for the
    // window"; "a report in between showing it not running, or not verified, starts the run again".
    const repository = `team/stability-${Date.now()}`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        rolloutPolicy: { stabilityWindowSeconds: 600 },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const svc = { id: created.json().service.id as string, repository };
    const release = await pushRelease(t.app, api, svc);
    const promoted = await promote(t.app, api, svc.id, release.releaseId, { generation: 0 });
    expect(promoted.statusCode, promoted.body).toBe(200);
    const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const deployedAt = Date.now() - 3_600_000; // the task started an hour ago, and still is the same task
    const wrongDigest = `sha256:${'e'.repeat(64)}`;
    const node = (n: string, evidence?: Record<string, unknown>) =>
      verifiedReplica(plan, svc.id, n, 0, { deployment: { deployedAt }, ...(evidence ? { evidence } : {}) });

    const first = await send(c1, reportBody(plan, svc.id, {
      session: 's-stab', sequence: 1, nodeNames: ['n1', 'n2'], reportedAt: Date.now(), deployments: [node('n1', { resolvedDigest: wrongDigest }), node('n2')],
    }));
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().status).toMatchObject({ status: 'mismatched', mismatchReason: 'pulled-digest-mismatch' });

    const second = await send(c1, reportBody(plan, svc.id, {
      session: 's-stab', sequence: 2, nodeNames: ['n1', 'n2'], reportedAt: Date.now(), deployments: [node('n1'), node('n2')],
    }));
    expect(second.statusCode, second.body).toBe(200);
    // n1 has been verified for milliseconds, not 600 s: it must not count as verified yet.
    const status = await serviceStatus(svc.id);
    expect({ status: status?.['status'], verified: status?.['verifiedReplicaCount'] }).toEqual({ status: 'verifying', verified: 1 });
  });
});
