/**
 * The start-up migrations (src/store/migrations.ts, docs/architecture.md "Migrations"): a database
 * holding documents in the shape earlier versions wrote them — report records without a fence and
 * with their deployments as nested documents, a plan written before status summaries (its status
 * stored whole in `data.imageRolloutStatus`) — is rewritten when an app starts over it, once, and
 * every read answers what it answered before; a report on the old rollout is applied. Two apps
 * starting at once over such a database migrate it once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Db } from 'mongodb';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { migrations } from '../../../src/store/migrations.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

const CLUSTERS = ['mig-c1', 'mig-c2'];
const nodesOf = (c: string) => [`${c}-n1`, `${c}-n2`];

/** A rollout on two clusters, the first reported in full, the second with one replica failed: made through the API. */
async function rolloutMade (t: TestApp) {
  const admin = await t.token('admin');
  const api = await t.token('api');
  for (const c of CLUSTERS) await registerCluster(t.app, admin, c, nodesOf(c));
  const svc = await createFixtureService(t.app, admin, { clusterIds: CLUSTERS, replicasPerNode: 1 });
  const pushed = await pushRelease(t.app, api, svc);
  const res = await promote(t.app, api, svc.id, pushed.releaseId, { generation: 0 });
  expect(res.statusCode, res.body).toBe(200);
  const plan = res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
  await report(t, plan, svc.id, CLUSTERS[0]!, 1, 0);
  await report(t, plan, svc.id, CLUSTERS[1]!, 1, 1);
  return { serviceId: svc.id, plan };
}

async function report (t: TestApp, plan: IImmutableImageDeploymentPlan, serviceId: string, c: string, sequence: number, failed: number) {
  const token = await t.token('cluster', { clusterId: c, subject: `coreflow-${c}` });
  const deployments = fullReplicas(plan, serviceId, nodesOf(c)).map((r, i) => (i < failed ? { ...r, status: 'failed' } : r));
  const body = reportBody(plan, serviceId, { session: `s-${c}`, sequence, nodeNames: nodesOf(c), deployments });
  return t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
}

/** What the reads answer: the service (its composed status), the stored deployments, the rollout history, the status events. */
async function reads (t: TestApp, serviceId: string) {
  const admin = await t.token('admin');
  const get = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url, headers: bearer(admin) });
    expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    return res.json() as Record<string, unknown>;
  };
  const rollout = await get(`/v1/services/${serviceId}/rollout`);
  return {
    service: await get(`/v1/services/${serviceId}`),
    deployments: await get(`/v1/services/${serviceId}/deployments`),
    history: await get(`/v1/services/${serviceId}/rollouts`),
    rolloutStatus: (rollout as { status?: unknown }).status,
  };
}

/**
 * Rewrites the current documents of a service into the shape earlier versions wrote (what the removed
 * shims read): its report records unfenced with nested deployments, its summary gone and its status
 * stored whole; and forgets that any migration ran.
 */
async function toEarlierShape (db: Db, serviceId: string, storedStatus: unknown): Promise<void> {
  const records = await db.collection('reports').find({ serviceId }).toArray();
  for (const record of records) {
    await db.collection('reports').updateOne({ _id: record._id }, {
      $set: { deployments: JSON.parse(String(record['deploymentsJson'])) as unknown[] }, $unset: { deploymentsJson: '', fence: '' },
    });
  }
  await db.collection('services').updateOne({ _id: serviceId as never }, {
    $set: { 'data.imageRolloutStatus': storedStatus }, $unset: { rolloutStatus: '', statusPublished: '' },
  });
  await db.collection('migrations').deleteMany({});
}

describe('start-up migrations', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    // The database is shared: each app's close drops it, so the last one closes it for all.
    for (const app of apps) await app.app.close();
    await apps[0]?.close();
  });

  it('an app started over documents of the earlier shapes migrates them, and every read and report works as on the current shape', async () => {
    const made = await buildTestApp();
    apps.push(made);
    const { serviceId, plan } = await rolloutMade(made);
    const before = await reads(made, serviceId);
    const storedStatus = (before.service as { service: { data: { imageRolloutStatus: unknown } } }).service.data.imageRolloutStatus;
    expect(storedStatus).toBeDefined();
    await toEarlierShape(made.db, serviceId, storedStatus);

    const later = await buildTestApp({ MONGODB_DB: made.config.MONGODB_DB });
    apps.push(later);
    expect(await reads(later, serviceId)).toEqual(before);
    const records = await later.db.collection('reports').find({ serviceId }).toArray();
    expect(records.map((r) => [typeof r['fence'], typeof r['deploymentsJson'], r['deployments']])).toEqual(records.map(() => ['string', 'string', undefined]));
    const doc = await later.db.collection('services').findOne({ _id: serviceId as never });
    expect(doc?.['data']?.imageRolloutStatus).toBeUndefined();
    expect(doc?.['rolloutStatus']?.rolloutId).toBe(plan.rolloutId);
    expect(doc?.['rolloutStatus']?.lifecycle).toBeDefined();

    // A report on the old rollout: the second cluster's failed replica recovers, counted exactly once.
    const res = await report(later, plan, serviceId, CLUSTERS[1]!, 2, 0);
    expect(res.statusCode, res.body).toBe(200);
    const after = (await reads(later, serviceId)).service as { service: { data: { imageRolloutStatus: Record<string, number> } } };
    const status = after.service.data.imageRolloutStatus;
    expect({ failed: status['failedReplicaCount'], verified: status['verifiedReplicaCount'] }).toEqual({ failed: 0, verified: 4 });
    const summary = (await later.db.collection('services').findOne({ _id: serviceId as never }))?.['rolloutStatus'] as { totals: unknown };
    expect(summary.totals).toEqual({ observed: 4, healthy: 4, verified: 4, failed: 0 });
  }, 60_000);

  it('two apps starting at once over a database of the earlier shapes migrate it once', async () => {
    const [made] = apps as [TestApp];
    // A second service, on the clusters of the first test (registered again: idempotent).
    const { serviceId } = await rolloutMade(made);
    const before = await reads(made, serviceId);
    const storedStatus = (before.service as { service: { data: { imageRolloutStatus: unknown } } }).service.data.imageRolloutStatus;
    await toEarlierShape(made.db, serviceId, storedStatus);
    const both = await Promise.all([buildTestApp({ MONGODB_DB: made.config.MONGODB_DB }), buildTestApp({ MONGODB_DB: made.config.MONGODB_DB })]);
    apps.push(...both);
    const recorded = await made.db.collection('migrations').find().sort({ _id: 1 }).toArray();
    expect(recorded.map((m) => [m._id, m['state'], m['runs']])).toEqual(migrations.map((m) => [m.version, 'applied', 1]));
    // Exactly one summary was made, and its document rewritten once (the records counted by the first migration).
    expect(recorded.find((m) => m._id === (3 as never))?.['migrated']).toBe(1);
    expect(recorded.find((m) => m._id === (1 as never))?.['migrated']).toBe(2);
    for (const app of both) expect(await reads(app, serviceId)).toEqual(before);
  }, 60_000);
});
