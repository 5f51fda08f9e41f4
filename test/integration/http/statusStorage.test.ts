/**
 * How the rollout status is stored (docs/api.md "How reports are stored"): the service document
 * holds the sums and each bucket's sums (at most STATUS_BUCKETS of them); the reporters'
 * contributions (a few dozen bytes each) are in the rollout's bucket documents, each reporter's
 * entry in its own report record, and every full read composes the upstream status from them.
 * What this pins: the bytes a report rewrites do not grow with the number of reporters (issue 24
 * item 3), and a summary written by an earlier version is moved into buckets and applied exactly.
 */
import { BSON } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import {
  IImageRolloutStatus as ImageRolloutStatusSchema, validateImageRolloutStatus, type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
} from '../../../src/contracts/index.js';
import { reporterKeyOf, STATUS_BUCKETS } from '../../../src/domain/rolloutStatus.js';
import { migrations } from '../../../src/store/migrations.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

const CLUSTERS = 24;
const NODES = 3;

describe('rollout status storage', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  const clusterIds = Array.from({ length: CLUSTERS }, (_, i) => `store-c${i}`);
  const nodesOf = (c: string) => Array.from({ length: NODES }, (_, n) => `${c}-n${n}`);

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    for (const c of clusterIds) await registerCluster(t.app, admin, c, nodesOf(c));
  }, 60_000);
  afterAll(async () => { await t?.close(); });

  async function promoted (): Promise<{ serviceId: string, plan: IImmutableImageDeploymentPlan }> {
    const svc = await createFixtureService(t.app, admin, { clusterIds, replicasPerNode: 2 });
    const pushed = await pushRelease(t.app, api, svc);
    const res = await promote(t.app, api, svc.id, pushed.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return { serviceId: svc.id, plan: res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan };
  }

  /** The reporter's report of all its replicas, running and verified; with `failed`, that many of them failed (the counts change). */
  const report = async (plan: IImmutableImageDeploymentPlan, serviceId: string, c: string, sequence: number, failed = 0) => {
    const token = await t.token('cluster', { clusterId: c, subject: `coreflow-${c}` });
    const nodeNames = nodesOf(c);
    const deployments = fullReplicas(plan, serviceId, nodeNames).map((r, i) => (i < failed ? { ...r, status: 'failed' } : r));
    const body = reportBody(plan, serviceId, { session: `s-${c}`, sequence, nodeNames, deployments });
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
    expect(res.statusCode, res.body).toBe(200);
  };

  /** What the start-up migrations do to documents of an earlier shape (they ran on the empty database at start-up). */
  const migrate = async () => { for (const m of migrations) await m.apply(t.db, Date.now()); };

  const serviceDoc = async (serviceId: string) => {
    const doc = await t.db.collection('services').findOne({ _id: serviceId as never });
    if (!doc) throw new Error('no service document');
    return doc;
  };
  const statusOf = async (serviceId: string): Promise<IImageRolloutStatus> => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().service.data.imageRolloutStatus as IImageRolloutStatus;
  };

  /** The rollout's bucket documents (./src/store/statusBuckets.ts). */
  const bucketsOf = async (rolloutId: string) => t.db.collection('statusBuckets').find({ rolloutId }).toArray();

  it('the service document holds no contribution per reporter, only bucket sums; the contributions are in the buckets, ' +
    'each entry in its record; reads compose the whole status', async () => {
    const { serviceId, plan } = await promoted();
    for (const c of clusterIds) await report(plan, serviceId, c, 1);
    const full = await serviceDoc(serviceId);
    const summary = full['rolloutStatus'] as { entries?: unknown, buckets: Record<string, { v: number, c: number[] }>, totals: Record<string, number> };
    expect(summary.entries).toBeUndefined();
    const buckets = await bucketsOf(plan.rolloutId);
    const contributions = buckets.flatMap((b) => Object.keys((b['entries'] ?? {}) as object));
    expect(contributions.sort()).toEqual(clusterIds.map((c) => reporterKeyOf(`${c}/coreflow-${c}`)).sort());
    expect(JSON.stringify(buckets)).not.toContain('reporterNodeNames');
    // The service holds each bucket's sums at the bucket's version, and its totals are their sum.
    expect(Object.keys(summary.buckets).sort()).toEqual(buckets.map((b) => `b${String(b._id).split(':').at(-1)}`).sort());
    for (const b of buckets) expect(summary.buckets[`b${String(b._id).split(':').at(-1)}`]?.v).toBe(b['v']);
    const summed = Object.values(summary.buckets).reduce((n, b) => n + b.c[2]!, 0);
    expect(summed).toBe(summary.totals['verified']);
    expect(summed).toBe(CLUSTERS * NODES * 2);

    const status = await statusOf(serviceId);
    expect(status.status).toBe('succeeded');
    expect(status.reporters.map((r) => r.clusterId).sort()).toEqual([...clusterIds].sort());
    expect(status.reporters.every((r) => r.reporterNodeNames.length === NODES)).toBe(true);
    expect(validateImageRolloutStatus(status)).toEqual([]);
    const view = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(admin) });
    expect(view.statusCode, view.body).toBe(200);
    expect(view.json().reporters).toHaveLength(CLUSTERS);
  });

  it('a report that changes nothing in the summary writes only its record; the next one that changes something applies the exact delta', async () => {
    const { serviceId, plan } = await promoted();
    const [first, second] = clusterIds as [string, string];
    await report(plan, serviceId, first, 1);
    await report(plan, serviceId, second, 1);
    const summaryOf = async () => (await serviceDoc(serviceId))['rolloutStatus'] as { seq: number, totals: Record<string, number> };
    const before = await summaryOf();
    // The same counts again, three times: the summary (and the service document) stays as it was.
    for (const sequence of [2, 3, 4]) await report(plan, serviceId, first, sequence);
    const steady = await summaryOf();
    expect(steady.seq).toBe(before.seq);
    expect(steady.totals).toEqual(before.totals);
    const record = await t.db.collection('reports').findOne({ serviceId, clusterId: first });
    expect(record?.['position']?.sequence).toBe(4);
    expect((await statusOf(serviceId)).reporters.find((r) => r.clusterId === first)?.reportSequence).toBe(4);
    // Then one replica fails: the delta from the covered contribution is applied once, exactly.
    await report(plan, serviceId, first, 5, 1);
    const changed = await summaryOf();
    expect(changed.seq).toBe(before.seq + 1);
    expect(changed.totals['failed']).toBe(1);
    const status = await statusOf(serviceId);
    expect(status.failedReplicaCount).toBe(1);
    expect(status.observedReplicaCount).toBe(status.reporters.reduce((n, r) => n + r.observedReplicaCount, 0));
  });

  it('a record keeps the deployments it stated as one JSON text; one written with nested deployments is still read, ' +
    'and the next report rewrites it', async () => {
    const { serviceId, plan } = await promoted();
    const [first] = clusterIds as [string];
    await report(plan, serviceId, first, 1);
    const stored = async () => {
      const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/deployments`, headers: bearer(admin) });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json().deployments as Array<{ deployment: { id: string, status: string } }>).map((d) => `${d.deployment.id}:${d.deployment.status}`).sort();
    };
    const ids = fullReplicas(plan, serviceId, nodesOf(first)).map((d) => `${String(d['id'])}:running`).sort();
    expect(await stored()).toEqual(ids);
    const records = t.db.collection('reports');
    const record = await records.findOne({ serviceId, clusterId: first });
    expect(typeof record?.['deploymentsJson']).toBe('string');
    expect(record).not.toHaveProperty('deployments');
    // As records were written before: the deployments as nested documents.
    await records.updateOne({ _id: record?._id }, {
      $set: { deployments: JSON.parse(String(record?.['deploymentsJson'])) as unknown[] }, $unset: { deploymentsJson: '' },
    });
    await migrate();
    expect(await stored()).toEqual(ids);
    expect((await statusOf(serviceId)).reporters.find((r) => r.clusterId === first)?.verifiedReplicaCount).toBe(NODES * 2);
    await report(plan, serviceId, first, 2, 1);
    const rewritten = await records.findOne({ serviceId, clusterId: first });
    expect(rewritten).not.toHaveProperty('deployments');
    expect(await stored()).toEqual(ids.map((id, i) => (i === 0 ? id.replace(':running', ':failed') : id)).sort());
  });

  it('a record is replaced by its fence (<_id>@<version>); one written before fences existed is found by its version once, then fenced', async () => {
    const { serviceId, plan } = await promoted();
    const [first] = clusterIds as [string];
    await report(plan, serviceId, first, 1);
    const records = t.db.collection('reports');
    const record = await records.findOne({ serviceId, clusterId: first });
    expect(record?.['fence']).toBe(`${String(record?._id)}@1`);
    // As records were written before fences: no fence field.
    await records.updateOne({ _id: record?._id }, { $unset: { fence: '' } });
    await migrate();
    await report(plan, serviceId, first, 2, 1);
    const rewritten = await records.findOne({ _id: record?._id });
    expect({ version: rewritten?.['version'], fence: rewritten?.['fence'] }).toEqual({ version: 2, fence: `${String(record?._id)}@2` });
    await report(plan, serviceId, first, 3);
    expect((await records.findOne({ _id: record?._id }))?.['fence']).toBe(`${String(record?._id)}@3`);
    expect((await statusOf(serviceId)).reporters.find((r) => r.clusterId === first)?.verifiedReplicaCount).toBe(NODES * 2);
  });

  it('a rollout with more reporters than 1,024 (each reporting one node of its cluster) answers a status its own schema accepts', async () => {
    // A reporter holds at least one target node and a node one reporter: a rollout has at most as many reporters as target nodes.
    const clusterId = 'store-wide';
    const nodes = Array.from({ length: 1030 }, (_, n) => `wide-n${n}`);
    await registerCluster(t.app, admin, clusterId, nodes);
    const svc = await createFixtureService(t.app, admin, { clusterIds: [clusterId], replicasPerNode: 1 });
    const pushed = await pushRelease(t.app, api, svc);
    const promotedRes = await promote(t.app, api, svc.id, pushed.releaseId, { generation: 0 });
    expect(promotedRes.statusCode, promotedRes.body).toBe(200);
    const plan = promotedRes.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const refused: string[] = [];
    for (let from = 0; from < nodes.length; from += 10) {
      await Promise.all(nodes.slice(from, from + 10).map(async (node) => {
        const token = await t.token('cluster', { clusterId, subject: `agent-${node}` });
        const body = reportBody(plan, svc.id, { session: `s-${node}`, sequence: 1, nodeNames: [node], deployments: fullReplicas(plan, svc.id, [node]) });
        const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
        if (res.statusCode !== 200) refused.push(`${node}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }));
    }
    expect(refused).toEqual([]);
    const status = await statusOf(svc.id);
    expect({ reporters: status.reporters.length, status: status.status }).toEqual({ reporters: nodes.length, status: 'succeeded' });
    expect(validateImageRolloutStatus(status)).toEqual([]);
    expect([...Value.Errors(ImageRolloutStatusSchema, status)].map((e) => `${e.path}: ${e.message}`).slice(0, 3)).toEqual([]);
    // What a report rewrites does not grow with the reporters (issue 24 item 3): the summary in the
    // service document is at most STATUS_BUCKETS bucket sums, a bucket ~1/STATUS_BUCKETS of the contributions.
    const summaryBytes = BSON.calculateObjectSize((await serviceDoc(svc.id))['rolloutStatus'] as object);
    expect(summaryBytes).toBeLessThan(STATUS_BUCKETS * 64 + 1024);
    const buckets = await bucketsOf(plan.rolloutId);
    expect(buckets.reduce((n, b) => n + Object.keys((b['entries'] ?? {}) as object).length, 0)).toBe(nodes.length);
    expect(Math.max(...buckets.map((b) => BSON.calculateObjectSize(b)))).toBeLessThan(2048);
  }, 120_000);

  it('a summary stored by an earlier version (a contribution per reporter in the service document, one in the { entry, version } ' +
    'format) is moved into buckets by the start-up migrations, and the next report applies the exact delta', async () => {
    const { serviceId, plan } = await promoted();
    const [first, second] = clusterIds as [string, string];
    await report(plan, serviceId, first, 1);
    await report(plan, serviceId, second, 1);
    // The service document as the earlier versions wrote it: every contribution in `rolloutStatus.entries`, no buckets.
    const buckets = await bucketsOf(plan.rolloutId);
    const entries = Object.assign({}, ...buckets.map((b) => b['entries'] as object)) as Record<string, unknown>;
    const record = await t.db.collection('reports').findOne({ serviceId, clusterId: first });
    if (!record) throw new Error('no record');
    const key = reporterKeyOf(String(record['reporterId']));
    entries[key] = { entry: record['entry'], version: record['version'] };
    await t.db.collection('statusBuckets').deleteMany({ rolloutId: plan.rolloutId });
    await t.db.collection('services').updateOne(
      { _id: serviceId as never },
      { $set: { 'rolloutStatus.entries': entries }, $unset: { 'rolloutStatus.buckets': '' } }
    );
    await migrate();
    const migrated = await serviceDoc(serviceId);
    expect((migrated['rolloutStatus'] as { entries?: unknown }).entries).toBeUndefined();
    expect((await bucketsOf(plan.rolloutId)).flatMap((b) => Object.keys(b['entries'] as object)).sort()).toEqual(Object.keys(entries).sort());
    // The same counts: nothing to write, the migrated contribution still counts.
    await report(plan, serviceId, first, 2);
    const all = 2 * NODES * 2;
    expect((await statusOf(serviceId)).verifiedReplicaCount).toBe(all);
    // Then one replica fails: the delta from the migrated contribution, exactly once.
    await report(plan, serviceId, first, 3, 1);
    const summary = (await serviceDoc(serviceId))['rolloutStatus'] as { totals: Record<string, number> };
    expect(summary.totals).toEqual({ observed: all, healthy: all - 1, verified: all - 1, failed: 1 });
    const bucket = (await bucketsOf(plan.rolloutId)).find((b) => (b['entries'] as Record<string, unknown>)[key] !== undefined);
    expect((bucket?.['entries'] as Record<string, { v: number, entry?: unknown }>)[key]).toMatchObject({ v: 3 });
    const status = await statusOf(serviceId);
    expect(status.failedReplicaCount).toBe(1);
    expect(status.reporters.find((r) => r.clusterId === first)?.reportSequence).toBe(3);
  });
});
