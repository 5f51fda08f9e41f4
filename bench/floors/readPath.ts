// Floor of the read path: GET /v1/services/:serviceId/rollout answered by plain Fastify with the
// bare driver — the reads the server makes (src/operations/readRollout.ts and the stores: the
// service document with the same projection, then the buckets of its summary and the report records of the reporters
// they count, each by `_id` `$in`, with the same projection)
// and the same answer, built by the server's own pure functions from dist/src (composeStatus,
// rolloutView). No authentication, no schemas (JSON.stringify), no logging.
import Fastify from 'fastify';
import { MongoClient, type Document } from 'mongodb';
import type { IImmutableImageDeploymentPlan, IServiceData } from '../../src/contracts/index.js';
import { effectiveRolloutPolicy } from '../../src/domain/lifecycle.js';
import { rolloutRecordId, type ReportRecord } from '../../src/domain/reports.js';
import { bucketId, composeStatus, reporterIdOfKey, type StatusSummary } from '../../src/domain/rolloutStatus.js';
import { rolloutView } from '../../src/domain/rolloutView.js';

const uri = process.env['MONGODB_URI'] ?? '';
const client = await new MongoClient(uri, { maxPoolSize: 50, ignoreUndefined: true }).connect();
const db = client.db(process.env['MONGODB_DB']);
const services = db.collection<Document>('services');
const reports = db.collection<Document>('reports');
const statusBuckets = db.collection<Document>('statusBuckets');

/** What the server reads of each record (src/store/serviceStore.ts `recordsOf`): the entry and the evidence, never the deployments. */
const EVIDENCE = { entry: 1, reporterId: 1, rolloutId: 1, 'position.receivedAt': 1, replicas: 1 };

const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ status: 'ok' }));
app.get('/v1/services/:serviceId/rollout', async (request, reply) => {
  const { serviceId } = request.params as { serviceId: string };
  const projection = { data: 1, rolloutStatus: 1, statusRevision: 1, automationHold: 1, automationQueue: 1 };
  const doc = await services.findOne({ _id: serviceId as never }, { projection });
  if (!doc) return reply.code(404).send({ code: 'service-not-found' });
  const data = doc['data'] as IServiceData;
  const plan = data.imageDeployment as IImmutableImageDeploymentPlan | undefined;
  const summary = doc['rolloutStatus'] as StatusSummary | undefined;
  const current = plan !== undefined && summary?.rolloutId === plan.rolloutId;
  // The reporters the summary counts: the contributions in its buckets (src/store/statusBuckets.ts), by `_id` `$in`.
  const bucketIds = current ? Object.keys(summary.buckets ?? {}).map((key) => bucketId(plan.rolloutId, key.slice(1))) : [];
  const buckets = bucketIds.length === 0 ? [] : await statusBuckets.find({ _id: { $in: bucketIds as never[] } }, { projection: { entries: 1 } }).toArray();
  const keys = buckets.flatMap((b) => Object.keys((b['entries'] ?? {}) as object));
  const ids = current ? keys.map((key) => rolloutRecordId(plan.rolloutId, reporterIdOfKey(key))) : [];
  const records = ids.length === 0
    ? []
    : (await reports.find({ _id: { $in: ids as never[] } }, { projection: EVIDENCE }).toArray()) as unknown as ReportRecord[];
  const status = current ? composeStatus(plan, summary, records.flatMap((r) => (r.entry ? [r.entry] : []))) : undefined;
  return rolloutView({
    serviceId,
    plan,
    status,
    revision: (doc['statusRevision'] as number | undefined) ?? 0,
    evidence: records.map((r) => ({ reporterId: r.reporterId, rolloutId: r.rolloutId ?? '', receivedAt: r.position.receivedAt, replicas: r.replicas })),
    automationHold: doc['automationHold'],
    lifecycle: current ? summary.lifecycle : undefined,
    policy: effectiveRolloutPolicy(data.rolloutPolicy),
    queued: doc['automationQueue'],
    now: Date.now(),
  });
});

process.once('SIGTERM', () => { void app.close().then(() => client.close()); });
await app.listen({ host: process.env['HOST'] ?? '127.0.0.1', port: Number(process.env['PORT'] ?? 0) });
