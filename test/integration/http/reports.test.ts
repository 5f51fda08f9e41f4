import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, callTypedRequest, typedRequest, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, promotedService, registerCluster, rollback } from '../../support/fixtures.js';
import { fullReplicas, reportBody, reportsFor, verifiedReplica } from '../../support/reports.js';

describe('snapshot reports and rollout status', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let c1: string;
  let c2: string;
  let c3: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    c1 = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    c2 = await t.token('cluster', { clusterId: 'c2', subject: 'coreflow-c2' });
    c3 = await t.token('cluster', { clusterId: 'c3', subject: 'coreflow-c3' });
    await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
    await registerCluster(t.app, admin, 'c2', ['m1']);
    await registerCluster(t.app, admin, 'c3', ['x1']);
  });
  afterAll(async () => { await t.close(); });

  /** A service on c1 and c2 (3 nodes × 2 replicas = 6 required) with a first promotion. */
  const promoted = async (opts: { clusterIds?: string[] } = {}) => await promotedService(t.app, { admin, api }, opts);

  const send = (token: string, body: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
  /** Everything a report may write: the status summary, its events, the reporters' records and the rollout's claims. */
  const stored = async (serviceId: string) => {
    const db = t.db;
    const projection = { rolloutStatus: 1, statusRevision: 1, statusPublished: 1, statusEvents: 1 };
    const doc = await db.collection('services').findOne({ _id: serviceId as never }, { projection });
    const reports = await db.collection('reports').find({ serviceId }).sort({ _id: 1 }).toArray();
    const claims = await db.collection('reportClaims').find({ rolloutId: doc?.['rolloutStatus']?.rolloutId }).sort({ _id: 1 }).toArray();
    return JSON.stringify({ doc, reports, claims });
  };
  const statusOf = async (serviceId: string) =>
    (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageRolloutStatus;

  describe('the transition table', () => {
    it('pending → deploying → verifying → succeeded, and the counts on the way', async () => {
      const { svc, plan } = await promoted();
      const { report, replica } = reportsFor(plan, svc.id);
      expect((await statusOf(svc.id)).status).toBe('pending');

      const firstReplica = replica('n1', 0, { status: 'starting', evidence: null });
      const starting = await send(c1, report({ sequence: 1, nodeNames: ['n1', 'n2'], deployments: [firstReplica] }));
      expect(starting.statusCode, starting.body).toBe(200);
      expect(starting.json().status).toMatchObject({
        status: 'deploying', requiredReplicaCount: 6, observedReplicaCount: 1, healthyReplicaCount: 0, verifiedReplicaCount: 0,
      });

      // Every replica running, none attested yet: healthy but unverified.
      const unattested = ['n1', 'n2'].flatMap((n) => [0, 1].map((i) => verifiedReplica(plan, svc.id, n, i, { evidence: null })));
      const r2 = await send(c1, reportBody(plan, svc.id, { sequence: 2, nodeNames: ['n1', 'n2'], deployments: unattested }));
      expect(r2.json().status).toMatchObject({ status: 'deploying', observedReplicaCount: 4, healthyReplicaCount: 4 });
      const r3 = await send(c2, report({ sequence: 1, nodeNames: ['m1'], deployments: [0, 1].map((i) => replica('m1', i, { evidence: null })) }));
      expect(r3.json().status).toMatchObject({ status: 'verifying', observedReplicaCount: 6, healthyReplicaCount: 6, verifiedReplicaCount: 0 });

      const r4 = await send(c1, reportBody(plan, svc.id, { sequence: 3, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) }));
      expect(r4.json().status).toMatchObject({ status: 'verifying', verifiedReplicaCount: 4 });
      const r5 = await send(c2, reportBody(plan, svc.id, { sequence: 2, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
      expect(r5.json().status).toMatchObject({
        status: 'succeeded', observedReplicaCount: 6, healthyReplicaCount: 6, verifiedReplicaCount: 6, failedReplicaCount: 0,
      });
      // The report answers the aggregate; the service's status has it and every reporter's latest report.
      const { reporters, ...aggregate } = await statusOf(svc.id);
      expect(reporters.map((r: { reporterId: string }) => r.reporterId)).toEqual(['c1/coreflow-c1', 'c2/coreflow-c2']);
      expect(aggregate).toEqual(r5.json().status);
      // The plan did not move: reports never change the rollout generation.
      const service = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service;
      expect(service.data.imageDeployment).toEqual(plan);
    });

    it('succeeded → failed when a replica fails, → deploying again when it restarts, → succeeded', async () => {
      const { svc, plan } = await promoted({ clusterIds: ['c2'] });
      await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
      expect((await statusOf(svc.id)).status).toBe('succeeded');
      const failing = [verifiedReplica(plan, svc.id, 'm1', 0), verifiedReplica(plan, svc.id, 'm1', 1, { status: 'failed' })];
      const failed = await send(c2, reportBody(plan, svc.id, { sequence: 2, nodeNames: ['m1'], deployments: failing }));
      expect(failed.json().status).toMatchObject({ status: 'failed', failedReplicaCount: 1, mismatchReason: 'replica-failed' });
      const restarting = [verifiedReplica(plan, svc.id, 'm1', 0), verifiedReplica(plan, svc.id, 'm1', 2, { status: 'starting' })];
      const back = await send(c2, reportBody(plan, svc.id, { sequence: 3, nodeNames: ['m1'], deployments: restarting }));
      expect(back.json().status).toMatchObject({ status: 'deploying', failedReplicaCount: 0 });
      expect(back.json().status.mismatchReason).toBeUndefined();
      const ok = await send(c2, reportBody(plan, svc.id, { sequence: 4, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
      expect(ok.json().status.status).toBe('succeeded');
    });

    it('verifying → mismatched when a replica runs another digest (and it never succeeds while it does)', async () => {
      const { svc, plan } = await promoted({ clusterIds: ['c2'] });
      const wrong = `sha256:${'f'.repeat(64)}`;
      const deployments = [verifiedReplica(plan, svc.id, 'm1', 0), verifiedReplica(plan, svc.id, 'm1', 1, { evidence: { resolvedDigest: wrong } })];
      const res = await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments }));
      expect(res.json().status).toMatchObject({ status: 'mismatched', mismatchReason: 'pulled-digest-mismatch', verifiedReplicaCount: 1 });
      const fixed = await send(c2, reportBody(plan, svc.id, { sequence: 2, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
      expect(fixed.json().status.status).toBe('succeeded');
    });

    it('rolling-back → rolled-back, with the right counts; reports for the superseded rollout are stale', async () => {
      const { svc, plan, releases } = await promoted({ clusterIds: ['c2'] });
      await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
      const second = (await promote(t.app, api, svc.id, releases.b, { generation: 1 })).json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
      expect((await statusOf(svc.id))).toMatchObject({ status: 'pending', rolloutId: second.rolloutId, observedReplicaCount: 0, reporters: [] });

      const old = await send(c2, reportBody(plan, svc.id, { sequence: 2, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']) }));
      expect(old.statusCode).toBe(409);
      expect(old.json()).toMatchObject({ code: 'stale-rollout-report', currentRolloutId: second.rolloutId, currentGeneration: 2 });

      const rolledBack = await rollback(t.app, api, svc.id, releases.a, { generation: 2, currentRolloutId: second.rolloutId });
      const rb = rolledBack.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
      expect((await statusOf(svc.id)).status).toBe('rolling-back');
      const partial = await send(c2, reportBody(rb, svc.id, { sequence: 3, nodeNames: ['m1'], deployments: [verifiedReplica(rb, svc.id, 'm1', 0)] }));
      expect(partial.json().status).toMatchObject({ status: 'rolling-back', observedReplicaCount: 1, verifiedReplicaCount: 1 });
      const done = await send(c2, reportBody(rb, svc.id, { sequence: 4, nodeNames: ['m1'], deployments: fullReplicas(rb, svc.id, ['m1']) }));
      expect(done.json().status).toMatchObject({
        status: 'rolled-back',
        requiredReplicaCount: 2,
        observedReplicaCount: 2,
        healthyReplicaCount: 2,
        verifiedReplicaCount: 2,
        failedReplicaCount: 0,
        rolloutId: rb.rolloutId,
      });
    });

    it('nodes nobody reports count as missing: never succeeded with a silent cluster', async () => {
      const { svc, plan } = await promoted();
      const res = await send(c1, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) }));
      expect(res.json().status).toMatchObject({ status: 'deploying', requiredReplicaCount: 6, observedReplicaCount: 4, verifiedReplicaCount: 4 });
    });

    it('extra replicas beyond replicasPerNode and replicas of an older rollout do not count', async () => {
      const { svc, plan } = await promoted({ clusterIds: ['c2'] });
      const deployments = [
        ...fullReplicas(plan, svc.id, ['m1']),
        verifiedReplica(plan, svc.id, 'm1', 7),
        verifiedReplica(plan, svc.id, 'm1', 8, { deployment: { rolloutId: 'ro_old', rolloutGeneration: 0 } }),
      ];
      const res = await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments }));
      expect(res.json().status).toMatchObject({ status: 'succeeded', observedReplicaCount: 2 });
    });
  });

  describe('refused reports change nothing', () => {
    it('old generation, old rolloutId, lower sequence, node outside the plan, node of another cluster, cluster outside the scope', async () => {
      const { svc, plan } = await promoted();
      const ok = await send(c1, reportBody(plan, svc.id, { sequence: 5, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) }));
      expect(ok.statusCode).toBe(200);
      const before = await stored(svc.id);
      const { report, replica } = reportsFor(plan, svc.id);
      const both = ['n1', 'n2'];
      const unknownCapability = { reporterCapabilities: { immutableImageDeploymentVersion: 2 } };
      const cases: Array<[string, string, Record<string, unknown>, number, string]> = [
        ['old generation', c1, report({ sequence: 6, nodeNames: both, deployments: [], rolloutGeneration: 0 }), 409, 'stale-rollout-report'],
        ['old rolloutId', c1, report({ sequence: 6, nodeNames: both, deployments: [], rolloutId: 'ro_old' }), 409, 'stale-rollout-report'],
        ['lower sequence', c1, report({ sequence: 4, nodeNames: both, deployments: [] }), 409, 'stale-rollout-report'],
        ['node outside the plan', c3, report({ sequence: 1, nodeNames: ['x1'], deployments: [] }), 403, 'forbidden'],
        ['node of another cluster', c1, report({ sequence: 6, nodeNames: ['n1', 'm1'], deployments: [] }), 403, 'forbidden'],
        ['older session', c1, report({ session: 'session-0', sequence: 99, nodeNames: both, deployments: [], reportedAt: 1 }), 409, 'stale-rollout-report'],
        ['no envelope', c1, report({ sequence: 6, nodeNames: both, deployments: [], envelope: null }), 422, 'runtime-attestation-missing'],
        ['capability missing', c1, report({ sequence: 6, nodeNames: both, deployments: [], envelope: unknownCapability }), 422, 'runtime-capability-missing'],
        [
          'deployment of another service',
          c1, report({ sequence: 6, nodeNames: ['n1'], deployments: [verifiedReplica(plan, 'svc_other', 'n1', 0)] }), 400, 'validation-failed',
        ],
        ['deployment on a node outside the report', c1, report({ sequence: 6, nodeNames: ['n1'], deployments: [replica('n2', 0)] }), 400, 'validation-failed'],
      ];
      for (const [name, token, body, status, code] of cases) {
        const res = await send(token, body);
        expect(res.statusCode, `${name}: ${res.body}`).toBe(status);
        expect(res.json().code, name).toBe(code);
        expect(await stored(svc.id), name).toBe(before);
      }
      // A node that is registered to c1 but not in the plan: a service placed on c2 only.
      const onlyC2 = await promoted({ clusterIds: ['c2'] });
      const outside = await send(c1, reportBody(onlyC2.plan, onlyC2.svc.id, { sequence: 1, nodeNames: ['n1'], deployments: [] }));
      expect(outside.statusCode).toBe(403);
      expect(outside.json().detail).toContain("cluster 'c1' is outside the target scope");
    });

    it('an equal sequence is a harmless replay', async () => {
      const { svc, plan } = await promoted();
      const body = reportBody(plan, svc.id, { sequence: 3, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) });
      expect((await send(c1, body)).json().outcome).toBe('applied');
      const before = await stored(svc.id);
      const again = await send(c1, { ...body, deployments: [] });
      expect(again.statusCode).toBe(200);
      expect(again.json().outcome).toBe('replayed');
      expect(await stored(svc.id)).toBe(before);
    });

    it('a session id belongs to one reporter', async () => {
      const { svc, plan } = await promoted();
      expect((await send(c1, reportBody(plan, svc.id, { session: 'shared', sequence: 1, nodeNames: ['n1', 'n2'], deployments: [] }))).statusCode).toBe(200);
      const before = await stored(svc.id);
      const res = await send(c2, reportBody(plan, svc.id, { session: 'shared', sequence: 1, nodeNames: ['m1'], deployments: [] }));
      expect(res.statusCode).toBe(400);
      expect(res.json().problems[0].field).toBe('/body/immutableReport/reporterSessionId');
      expect(await stored(svc.id)).toBe(before);
    });

    it('over TypedRequest, refusals arrive as error envelopes with the same codes', async () => {
      const { svc, plan } = await promoted();
      const call = (body: Record<string, unknown>) => callTypedRequest(t.app, 'reportDeploymentSnapshots', { identity: { jwt: c1 }, ...body });
      const stale = await call(reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1', 'n2'], deployments: [], rolloutGeneration: 7 }));
      expect(stale.json().error.data).toMatchObject({ code: 'stale-rollout-report', currentGeneration: 1 });
      const noCapability = await call(reportBody(plan, svc.id, {
        sequence: 1, nodeNames: ['n1', 'n2'], deployments: [], envelope: { reporterCapabilities: {} },
      }));
      expect(noCapability.json().error.data.code).toBe('runtime-capability-missing');
      const ok = await call(reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1', 'n2'], deployments: fullReplicas(plan, svc.id, ['n1', 'n2']) }));
      expect(ok.json().response).toEqual({});
      expect((await statusOf(svc.id))).toMatchObject({ status: 'deploying', verifiedReplicaCount: 4 });
    });

    it('only cluster tokens report', async () => {
      const { svc, plan } = await promoted();
      for (const token of [admin, api]) {
        const res = await send(token, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1'], deployments: [] }));
        expect(res.statusCode).toBe(403);
      }
    });
  });

  describe('forged evidence never verifies', () => {
    const forgeries: Array<[string, Record<string, unknown>, string]> = [
      ['a wrong resolvedDigest', { resolvedDigest: `sha256:${'e'.repeat(64)}` }, 'pulled-digest-mismatch'],
      ['a tag-only task reference', { taskImageReference: 'registry.example.com/team/app:latest' }, 'task-image-not-digest-pinned'],
      ['a missing repo digest', { repoDigests: [] }, 'container-repodigest-missing'],
    ];
    for (const [name, mutation, reason] of forgeries) {
      it(`a replica claiming "verified" with ${name} is mismatched: ${reason}`, async () => {
        const { svc, plan } = await promoted({ clusterIds: ['c2'] });
        const forged = verifiedReplica(plan, svc.id, 'm1', 1, { evidence: { verificationStatus: 'verified', ...mutation } });
        const deployments = [verifiedReplica(plan, svc.id, 'm1', 0), forged];
        const res = await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments }));
        expect(res.json().status).toMatchObject({ status: 'mismatched', mismatchReason: reason, verifiedReplicaCount: 1 });
        expect((await statusOf(svc.id)).reporters[0].mismatchReason).toBe(reason);
      });
    }
  });

  describe('every mismatch reason the server assigns from evidence', () => {
    const cases: Array<[string, Record<string, unknown> | null, Record<string, unknown>]> = [
      ['container-inspection-unavailable', { evidenceSource: 'task-spec' }, {}],
      ['stale-rollout-report', { rolloutGeneration: 99 }, {}],
      ['requested-digest-missing', { expectedDigest: undefined }, {}],
      ['requested-digest-malformed', { expectedDigest: 'sha256:XYZ' }, {}],
      ['registry-digest-inconsistent', { expectedDigest: `sha256:${'a'.repeat(64)}` }, {}],
      ['service-image-not-digest-pinned', { serviceImageReference: 'registry.example.com/team/app:1.0' }, {}],
      ['service-image-digest-mismatch', { serviceImageReference: `registry.example.com/team/app@sha256:${'b'.repeat(64)}` }, {}],
      ['task-image-not-digest-pinned', { taskImageReference: 'registry.example.com/team/app' }, {}],
      ['task-image-digest-mismatch', { taskImageReference: `registry.example.com/team/app@sha256:${'c'.repeat(64)}` }, {}],
      ['pulled-digest-missing', { taskReportedDigest: undefined }, {}],
      ['pulled-digest-mismatch', { taskReportedDigest: `sha256:${'d'.repeat(64)}` }, {}],
      ['container-image-id-missing', { containerImageId: undefined }, {}],
      ['container-repodigest-missing', { repoDigests: undefined }, {}],
      ['container-repodigest-mismatch', { repoDigests: [`registry.example.com/team/app@sha256:${'0'.repeat(64)}`] }, {}],
    ];
    for (const [reason, mutation] of cases) {
      it(reason, async () => {
        const { svc, plan } = await promoted({ clusterIds: ['c2'] });
        const evidence = Object.fromEntries(Object.entries(mutation ?? {}).map(([k, v]) => [k, v]));
        const replica = verifiedReplica(plan, svc.id, 'm1', 1, { evidence });
        const ev = replica['runtimeImageEvidence'] as Record<string, unknown>;
        for (const [k, v] of Object.entries(evidence)) if (v === undefined) delete ev[k];
        const deployments = [verifiedReplica(plan, svc.id, 'm1', 0), replica];
        const res = await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments }));
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().status).toMatchObject({ status: 'mismatched', mismatchReason: reason });
      });
    }

    it('runtime-attestation-missing: a replica without evidence is never verified (listed in the evidence detail)', async () => {
      const { svc, plan } = await promoted({ clusterIds: ['c2'] });
      const { report, replica } = reportsFor(plan, svc.id);
      const res = await send(c2, report({ sequence: 1, nodeNames: ['m1'], deployments: [replica('m1', 0), replica('m1', 1, { evidence: null })] }));
      expect(res.json().status).toMatchObject({ status: 'verifying', verifiedReplicaCount: 1 });
      const view = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) })).json();
      const replicas = view.reporters[0].replicas as Array<{ verification: string, mismatchReason?: string }>;
      expect(replicas.find((r) => r.verification === 'missing')?.mismatchReason).toBe('runtime-attestation-missing');
    });

    it('immutable-plan-missing: immutable policy without a plan', async () => {
      const { svc, plan } = await promoted({ clusterIds: ['c2'] });
      await t.db.collection('services').updateOne({ _id: svc.id as never }, { $unset: { 'data.imageDeployment': '' } });
      const res = await send(c2, reportBody(plan, svc.id, { sequence: 1, nodeNames: ['m1'], deployments: [] }));
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('immutable-plan-missing');
    });
  });

  describe('services without the immutable policy', () => {
    it('persist deployments: node-scoped replacement with reporterNodeNames, the whole cluster without', async () => {
      const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
      const dep = (id: string, nodeName: string) => ({ id, serviceId: svc.id, nodeName, status: 'running', deploymentLog: [] });
      const list = async () => (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/deployments`, headers: bearer(admin) }))
        .json().deployments.map((d: { deployment: { id: string } }) => d.deployment.id).sort();
      const r1 = await send(c1, { serviceId: svc.id, deployments: [dep('a', 'n1'), dep('b', 'n2')], reportedAt: 1 });
      expect(r1.json()).toEqual({ outcome: 'recorded' });
      expect(await list()).toEqual(['a', 'b']);
      await send(c1, { serviceId: svc.id, deployments: [dep('c', 'n1')], reporterNodeNames: ['n1'], reportedAt: 2 });
      expect(await list()).toEqual(['b', 'c']);
      await send(c1, { serviceId: svc.id, deployments: [dep('d', 'n2')], reportedAt: 3 });
      expect(await list()).toEqual(['d']);
    });

    it('over TypedRequest the answer is the upstream empty object', async () => {
      const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
      const res = await t.app.inject({
        method: 'POST',
        url: '/typedrequest',
        payload: typedRequest('reportDeploymentSnapshots', { identity: { jwt: c1 }, serviceId: svc.id, deployments: [], reportedAt: 5 }),
      });
      expect(res.json()).toMatchObject({ response: {} });
      expect(res.json().error).toBeUndefined();
    });
  });
});
