/**
 * How the rollout status is stored (docs/api.md "How reports are stored"): the service document
 * holds the sums and, per reporter, only its contribution to them (a few dozen bytes); each
 * reporter's entry lives in its own report record, and every full read composes the upstream
 * status from both. What this pins: the cost of the one service-document update a report makes
 * does not grow with the reporters' entries (issue: "the cost of a report does not depend on the
 * rest of the fleet"), and a summary written in the earlier format is still applied exactly.
 */
import { BSON } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import {
  IImageRolloutStatus as ImageRolloutStatusSchema, validateImageRolloutStatus, type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
} from '../../../src/contracts/index.js';
import { reporterKeyOf } from '../../../src/domain/rolloutStatus.js';
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

  it('each reporter adds a few dozen bytes to the service document, its entry lives in its record, and reads compose the whole status', async () => {
    const { serviceId, plan } = await promoted();
    const empty = BSON.calculateObjectSize(await serviceDoc(serviceId));
    for (const c of clusterIds) await report(plan, serviceId, c, 1);
    const full = await serviceDoc(serviceId);
    const grown = BSON.calculateObjectSize(full) - empty;
    // Each report also appends a status event (bounded: STATUS_EVENTS_KEPT); what the summary itself
    // holds per reporter is its contribution, not its entry (an entry of a 3-node reporter is ~600 bytes).
    const summary = full['rolloutStatus'] as { entries: Record<string, unknown> };
    const perReporter = BSON.calculateObjectSize(summary.entries) / CLUSTERS;
    expect(perReporter).toBeLessThan(120);
    expect(Object.keys(summary.entries)).toHaveLength(CLUSTERS);
    expect(JSON.stringify(summary.entries)).not.toContain('reporterNodeNames');
    expect(grown).toBeLessThan(CLUSTERS * 600);

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
  }, 120_000);

  it('a summary entry stored in the earlier format ({ entry, version }) is replaced by the next report with the exact delta', async () => {
    const { serviceId, plan } = await promoted();
    const [first, second] = clusterIds as [string, string];
    await report(plan, serviceId, first, 1);
    await report(plan, serviceId, second, 1);
    // Rewrite the first reporter's contribution as the earlier format held it: its whole entry and the record's version.
    const record = await t.db.collection('reports').findOne({ serviceId, clusterId: first });
    if (!record) throw new Error('no record');
    const key = reporterKeyOf(String(record['reporterId']));
    await t.db.collection('services').updateOne(
      { _id: serviceId as never },
      { $set: { [`rolloutStatus.entries.${key}`]: { entry: record['entry'], version: record['version'] } } }
    );
    await migrate();
    // The same counts: nothing to write, the entry in the earlier format still counts.
    await report(plan, serviceId, first, 2);
    const all = 2 * NODES * 2;
    expect((await statusOf(serviceId)).verifiedReplicaCount).toBe(all);
    // Then one replica fails: the delta from the earlier-format entry, exactly once.
    await report(plan, serviceId, first, 3, 1);
    const doc = await serviceDoc(serviceId);
    const summary = doc['rolloutStatus'] as { totals: Record<string, number>, entries: Record<string, { v?: number, entry?: unknown }> };
    expect(summary.totals).toEqual({ observed: all, healthy: all - 1, verified: all - 1, failed: 1 });
    expect(summary.entries[key]?.v).toBe(3);
    expect(summary.entries[key]?.entry).toBeUndefined();
    const status = await statusOf(serviceId);
    expect(status.failedReplicaCount).toBe(1);
    expect(status.reporters.find((r) => r.clusterId === first)?.reportSequence).toBe(3);
  });
});
