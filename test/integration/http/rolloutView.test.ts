import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { blockingReasons, type ReporterEvidence } from '../../../src/domain/rolloutView.js';
import type { ReplicaDetail } from '../../../src/domain/rolloutStatus.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, promotedService, registerCluster, rollback } from '../../support/fixtures.js';
import { fullReplicas, reportBody, reportsFor, verifiedReplica } from '../../support/reports.js';

/** The stability fields of a replica running (and verified) since `at`, stable for a window of 0. */
const stableSince = (at: number, verified: boolean) =>
  ({ runningSince: at, runningStable: true, ...(verified ? { verifiedSince: at, stable: true } : { stable: false }) });

describe('GET /v1/services/:serviceId/rollout', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let user: string;
  let c1: string;
  let c2: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    user = await t.token('user');
    c1 = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    c2 = await t.token('cluster', { clusterId: 'c2', subject: 'coreflow-c2' });
    await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
    await registerCluster(t.app, admin, 'c2', ['m1']);
  });
  afterAll(async () => { await t.close(); });

  /** A service on c1 (n1, n2) and c2 (m1), 2 replicas per node (6 required), promoted once. */
  const promoted = async () => await promotedService(t.app, { admin, api });

  const send = async (token: string, body: Record<string, unknown>) => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().status as Omit<IImageRolloutStatus, 'reporters'>;
  };
  const view = async (serviceId: string, token = admin) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('before any report: pending, no reporters, every target node missing all its replicas', async () => {
    const { svc, plan } = await promoted();
    const v = await view(svc.id);
    expect(v.serviceId).toBe(svc.id);
    expect(v.plan).toEqual(plan);
    expect(v.status).toMatchObject({ status: 'pending', rolloutId: plan.rolloutId, requiredReplicaCount: 6, observedReplicaCount: 0, reporters: [] });
    expect(v.revision).toBe(1);
    expect(v.reporters).toEqual([]);
    expect(v.automationHold).toBeUndefined();
    expect(v.blocking).toEqual(['m1', 'n1', 'n2'].map((nodeName) => ({
      kind: 'node-not-reported',
      reason: 'required-replica-missing',
      nodeName,
      missingReplicaCount: 2,
      detail: `no reporter covers node '${nodeName}': 2 required replicas missing`,
    })));
  });

  it('a service without a rollout: no plan, no status, empty lists', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
    expect(await view(svc.id)).toEqual({ serviceId: svc.id, revision: 0, reporters: [], blocking: [] });
  });

  it('after partial reports: the mismatched replica first, then the missing node, the short node, the unhealthy and the unverified ' +
    'replicas with their exact reasons', async () => {
    const { svc, plan } = await promoted();
    const wrong = `sha256:${'f'.repeat(64)}`;
    const reportedAt = Date.now() - 5_000;
    await send(c1, reportBody(plan, svc.id, {
      session: 'coreflow-c1-boot-7',
      sequence: 41,
      reportedAt,
      nodeNames: ['n1', 'n2'],
      deployments: [
        verifiedReplica(plan, svc.id, 'n1', 0),
        verifiedReplica(plan, svc.id, 'n1', 1, { status: 'starting', evidence: null }),
        verifiedReplica(plan, svc.id, 'n2', 0, { evidence: { resolvedDigest: wrong } }),
      ],
    }));
    const v = await view(svc.id);
    expect(v.status).toMatchObject({
      status: 'mismatched', mismatchReason: 'pulled-digest-mismatch', observedReplicaCount: 3, healthyReplicaCount: 2, verifiedReplicaCount: 1,
    });
    expect(v.revision).toBe(2);
    // The decisive reason first: the replica that runs another digest; then what the rollout still waits for.
    expect(v.blocking).toEqual([
      {
        kind: 'replica-unverified',
        reason: 'pulled-digest-mismatch',
        nodeName: 'n2',
        deploymentId: 'n2-task-0',
        reporterId: 'c1/coreflow-c1',
        // The digest the replica runs instead, from its evidence.
        detail: `replica 'n2-task-0' on node 'n2' does not run the planned digest: pulled-digest-mismatch (it runs ${wrong})`,
      },
      {
        kind: 'node-not-reported',
        reason: 'required-replica-missing',
        nodeName: 'm1',
        missingReplicaCount: 2,
        detail: "no reporter covers node 'm1': 2 required replicas missing",
      },
      {
        kind: 'replica-unhealthy',
        reason: 'replica-unhealthy',
        nodeName: 'n1',
        deploymentId: 'n1-task-1',
        reporterId: 'c1/coreflow-c1',
        detail: "replica 'n1-task-1' on node 'n1' is unhealthy (deployment status 'starting')",
      },
      {
        kind: 'replica-unverified',
        reason: 'runtime-attestation-missing',
        nodeName: 'n1',
        deploymentId: 'n1-task-1',
        reporterId: 'c1/coreflow-c1',
        detail: "replica 'n1-task-1' on node 'n1' has no verified runtime evidence yet (runtime-attestation-missing)",
      },
      {
        kind: 'replicas-missing',
        reason: 'required-replica-missing',
        nodeName: 'n2',
        reporterId: 'c1/coreflow-c1',
        missingReplicaCount: 1,
        detail: "node 'n2' runs 1 of 2 required replicas: 1 missing",
      },
    ]);

    // The reporter's evidence freshness and per-replica detail.
    expect(v.reporters).toHaveLength(1);
    expect(v.reporters[0]).toEqual({
      reporterId: 'c1/coreflow-c1',
      clusterId: 'c1',
      reporterSessionId: 'coreflow-c1-boot-7',
      lastSequence: 41,
      lastReportAt: reportedAt,
      lastReceivedAt: expect.any(Number),
      observedGeneration: plan.rolloutGeneration,
      nodeNames: ['n1', 'n2'],
      requiredReplicaCount: 4,
      observedReplicaCount: 3,
      healthyReplicaCount: 2,
      verifiedReplicaCount: 1,
      failedReplicaCount: 0,
      mismatchReason: 'pulled-digest-mismatch',
      replicas: [
        {
          nodeName: 'n1',
          deploymentId: 'n1-task-0',
          deploymentStatus: 'running',
          health: 'healthy',
          verification: 'verified',
          counted: true,
          // Stable at once: the fixtures' stability window is 0.
          ...stableSince(v.reporters[0].lastReceivedAt, true),
          stability: { state: 'stable', windowMs: 0, runningVerifiedSince: v.reporters[0].lastReceivedAt, stableAt: v.reporters[0].lastReceivedAt },
        },
        {
          nodeName: 'n1',
          deploymentId: 'n1-task-1',
          deploymentStatus: 'starting',
          health: 'unhealthy',
          verification: 'missing',
          mismatchReason: 'runtime-attestation-missing',
          counted: true,
          runningStable: false,
          stable: false,
        },
        {
          nodeName: 'n2',
          deploymentId: 'n2-task-0',
          deploymentStatus: 'running',
          health: 'healthy',
          verification: 'mismatched',
          mismatchReason: 'pulled-digest-mismatch',
          runningDigest: wrong,
          counted: true,
          // Running for the window counts as healthy; never as verified.
          runningSince: v.reporters[0].lastReceivedAt,
          runningStable: true,
          stable: false,
        },
      ],
    });

    // A failed replica on m1 (its evidence is fine): replica-failed, and nothing about verification.
    await send(c2, reportBody(plan, svc.id, {
      sequence: 1,
      nodeNames: ['m1'],
      deployments: [verifiedReplica(plan, svc.id, 'm1', 0), verifiedReplica(plan, svc.id, 'm1', 1, { status: 'failed' })],
    }));
    const v2 = await view(svc.id);
    expect(v2.blocking.filter((b: { nodeName: string }) => b.nodeName === 'm1')).toEqual([{
      kind: 'replica-unhealthy',
      reason: 'replica-failed',
      nodeName: 'm1',
      deploymentId: 'm1-task-1',
      reporterId: 'c2/coreflow-c2',
      detail: "replica 'm1-task-1' on node 'm1' is failed (deployment status 'failed')",
    }]);
    expect(v2.reporters.map((r: { reporterId: string, failedReplicaCount: number }) => [r.reporterId, r.failedReplicaCount])).toEqual([
      ['c1/coreflow-c1', 0], ['c2/coreflow-c2', 1],
    ]);
    expect(v2.revision).toBe(3);
  });

  it('verifying: every replica up, the unattested ones are what blocks', async () => {
    const { svc, plan } = await promoted();
    await send(c1, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) }));
    const status = await send(c2, reportBody(plan, svc.id, {
      sequence: 1,
      nodeNames: ['m1'],
      deployments: [verifiedReplica(plan, svc.id, 'm1', 0), verifiedReplica(plan, svc.id, 'm1', 1, { evidence: null })],
    }));
    expect(status.status).toBe('verifying');
    const v = await view(svc.id);
    expect(v.blocking).toEqual([{
      kind: 'replica-unverified',
      reason: 'runtime-attestation-missing',
      nodeName: 'm1',
      deploymentId: 'm1-task-1',
      reporterId: 'c2/coreflow-c2',
      detail: "replica 'm1-task-1' on node 'm1' has no verified runtime evidence yet (runtime-attestation-missing)",
    }]);
  });

  it('after success nothing blocks; reporters still show their latest report', async () => {
    const { svc, plan } = await promoted();
    const at1 = Date.now() - 2_000;
    const at2 = Date.now() - 1_000;
    const { report, full } = reportsFor(plan, svc.id);
    await send(c1, report({ sequence: 3, reportedAt: at1, nodeNames: ['n1', 'n2'], deployments: full(['n1', 'n2']) }));
    const status = await send(c2, report({ session: 's-m1', sequence: 9, reportedAt: at2, nodeNames: ['m1'], deployments: full(['m1']) }));
    expect(status.status).toBe('succeeded');
    const v = await view(svc.id);
    // The report answers the aggregate; the view's status adds every reporter's entry.
    const { reporters: entries, ...aggregate } = v.status;
    expect(aggregate).toEqual(status);
    expect(entries).toHaveLength(2);
    expect(v.blocking).toEqual([]);
    const fields = ['reporterId', 'reporterSessionId', 'lastSequence', 'lastReportAt', 'observedGeneration', 'verifiedReplicaCount'];
    expect(v.reporters.map((r: Record<string, unknown>) => fields.map((field) => r[field]))).toEqual([
      ['c1/coreflow-c1', 'session-n1', 3, at1, 1, 4],
      ['c2/coreflow-c2', 's-m1', 9, at2, 1, 2],
    ]);
    expect(v.reporters[1].replicas.every((r: ReplicaDetail) => r.counted && r.verification === 'verified' && r.health === 'healthy')).toBe(true);
  });

  it('a rollback: rolling-back blocks on the missing nodes, rolled-back does not; the automation hold is shown', async () => {
    const { svc, plan, releases } = await promoted();
    await send(c1, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) }));
    await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
    const second = (await promote(t.app, api, svc.id, releases.b, { generation: 1 })).json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const rb = await rollback(t.app, api, svc.id, releases.a, { generation: 2, currentRolloutId: second.rolloutId });
    expect(rb.statusCode, rb.body).toBe(200);
    const rbPlan = rb.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;

    const during = await view(svc.id);
    expect(during.plan).toEqual(rbPlan);
    expect(during.status.status).toBe('rolling-back');
    // The reporters of the superseded rollouts are not this rollout's reporters.
    expect(during.reporters).toEqual([]);
    expect(during.blocking.map((b: { kind: string, nodeName: string }) => [b.kind, b.nodeName])).toEqual([
      ['node-not-reported', 'm1'], ['node-not-reported', 'n1'], ['node-not-reported', 'n2'],
    ]);
    expect(during.automationHold).toEqual({ since: expect.any(Number), rolloutId: rbPlan.rolloutId, by: 'test-api' });

    await send(c1, reportBody(rbPlan, svc.id, { sequence: 2, nodeNames: ['n1', 'n2'], deployments: fullReplicas(rbPlan, svc.id, ['n1', 'n2']) }));
    await send(c2, reportBody(rbPlan, svc.id, { sequence: 2, nodeNames: ['m1'], deployments: fullReplicas(rbPlan, svc.id, ['m1']) }));
    const after = await view(svc.id);
    expect(after.status.status).toBe('rolled-back');
    expect(after.blocking).toEqual([]);
    expect(after.reporters.map((r: { observedGeneration: number }) => r.observedGeneration)).toEqual([3, 3]);
  });

  it('unknown service: 404 service-not-found', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/services/svc_nope/rollout', headers: bearer(admin) });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'service-not-found', serviceId: 'svc_nope' });
  });

  it('roles: admin, user and api read it; a cluster token is 403; no token is 401', async () => {
    const { svc } = await promoted();
    for (const token of [admin, user, api]) expect((await view(svc.id, token)).serviceId).toBe(svc.id);
    const cluster = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(c1) });
    expect(cluster.statusCode).toBe(403);
    expect(cluster.json().code).toBe('forbidden');
    const anonymous = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout` });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('unauthenticated');
  });

  it('is in the OpenAPI document with its response schema', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const op = doc.paths['/v1/services/{serviceId}/rollout'].get;
    expect(Object.keys(op.responses['200'].content['application/json'].schema.properties)).toEqual(
      ['serviceId', 'plan', 'status', 'revision', 'reporters', 'blocking', 'automationHold', 'lifecycle']);
    expect(Object.keys(doc.paths['/v1/services/{serviceId}/rollout/events'].get.responses['200'].content)).toEqual(['text/event-stream']);
  });
});

describe('blockingReasons (pure)', () => {
  const plan: IImmutableImageDeploymentPlan = {
    policy: 'immutable-digest',
    rolloutId: 'ro_1',
    rolloutGeneration: 1,
    releaseId: 'rel_1',
    registryHost: 'registry.example.com',
    repository: 'team/app',
    requestedDigest: `sha256:${'a'.repeat(64)}`,
    digestPinnedImageReference: `registry.example.com/team/app@sha256:${'a'.repeat(64)}`,
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
    createdAt: 1,
    mode: 'promotion',
    targetScope: { targetClusterIds: ['c1'], targetNodeNames: ['a', 'b'], replicasPerNode: 1, requiredReplicaCount: 2 },
  };
  const reporter = (nodeNames: string[]) => ({
    reporterId: 'c1/r',
    reporterSessionId: 's',
    clusterId: 'c1',
    reporterNodeNames: nodeNames,
    rolloutId: 'ro_1',
    rolloutGeneration: 1,
    reportSequence: 1,
    reportedAt: 1,
    requiredReplicaCount: nodeNames.length,
    observedReplicaCount: 0,
    healthyReplicaCount: 0,
    verifiedReplicaCount: 0,
    failedReplicaCount: 0,
  });
  const status = (s: IImageRolloutStatus['status'], nodeNames: string[]): IImageRolloutStatus => ({
    rolloutId: 'ro_1',
    rolloutGeneration: 1,
    expectedDigest: plan.requestedDigest,
    status: s,
    requiredReplicaCount: 2,
    observedReplicaCount: 0,
    healthyReplicaCount: 0,
    verifiedReplicaCount: 0,
    failedReplicaCount: 0,
    updatedAt: 1,
    reporters: [reporter(nodeNames)],
  });
  const replica = (nodeName: string, deploymentId: string, extra: Partial<ReplicaDetail> = {}): ReplicaDetail => ({
    nodeName,
    deploymentId,
    deploymentStatus: 'running',
    health: 'healthy',
    verification: 'verified',
    counted: true,
    runningStable: true,
    stable: true,
    ...extra,
  });
  const evidence = (replicas: ReplicaDetail[], rolloutId = 'ro_1'): ReporterEvidence[] =>
    [{ reporterId: 'c1/r', rolloutId, receivedAt: 1, replicas }];

  it('no plan, or a finished rollout: nothing blocks', () => {
    expect(blockingReasons(undefined, undefined, undefined)).toEqual([]);
    expect(blockingReasons(plan, status('succeeded', ['a', 'b']), evidence([replica('a', 'x'), replica('b', 'y')]))).toEqual([]);
    expect(blockingReasons({ ...plan, mode: 'rollback' }, status('rolled-back', ['a', 'b']), evidence([]))).toEqual([]);
  });

  it('replicas that do not count never block; evidence of another rollout is ignored', () => {
    const extra = replica('a', 'z', { counted: false, health: 'failed', verification: 'other-rollout' });
    expect(blockingReasons(plan, status('deploying', ['a', 'b']), evidence([replica('a', 'x'), extra, replica('b', 'y')]))).toEqual([]);
    expect(blockingReasons(plan, status('deploying', ['a', 'b']), evidence([replica('a', 'x'), replica('b', 'y')], 'ro_0')).map((b) => b.kind))
      .toEqual(['replicas-missing', 'replicas-missing']);
  });

  it('the order is: the decisive reasons first (a mismatch), then node, then deployment id, whatever order the evidence comes in', () => {
    const replicas = [
      replica('b', 'q', { verification: 'mismatched', mismatchReason: 'task-image-digest-mismatch' }),
      replica('a', 'p', { health: 'unhealthy', deploymentStatus: 'starting' }),
    ];
    const expected = blockingReasons(plan, status('mismatched', ['a', 'b']), evidence(replicas));
    expect(expected.map((b) => [b.nodeName, b.deploymentId, b.reason])).toEqual([
      ['b', 'q', 'task-image-digest-mismatch'], ['a', 'p', 'replica-unhealthy'],
    ]);
    expect(blockingReasons(plan, status('mismatched', ['a', 'b']), evidence([...replicas].reverse()))).toEqual(expected);
  });
});
