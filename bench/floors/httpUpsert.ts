// Floor of the report path that pays HTTP too (bench/scenarios/reporters.ts, criterion "server ÷ this
// floor at R = 50 ≥ 0.7"): plain Fastify answering POST /v1/deployment-snapshots by parsing the same
// JSON report body (Fastify's default parser) and making ONE conditional upsert of the reporter's
// record — a document of the same shape and size as the server's record of that reporter (the bench
// hands it the server's stored record as a template, without its deployments; the deployments
// written are the request's, as one JSON text like the server's) — replaced by its fence
// `<_id>@<version>` with `upsert: true`, exactly the filter shape of the server's record write
// (src/store/reportStore.ts `#bulkWrite`), on the same database, in a collection of its own with
// the same unique sparse index on `fence`. It answers the server's own answer (set by the bench).
// No authentication, schemas, evidence checks, claims, status summary or logging, and no group
// commit: one `replaceOne` per request, as a plain handler makes it.
import Fastify, { type FastifyReply } from 'fastify';
import { MongoClient, MongoServerError, type Document } from 'mongodb';

/** The bench's templates: per reporter (`<serviceId>/<reporterSessionId>`), the server's record of it without `_id` and deployments. */
interface Template { id: string, record: Document, version: number }

interface ReportBody {
  serviceId: string;
  deployments: unknown[];
  reportedAt: number;
  immutableReport: { reporterSessionId: string, reportSequence: number };
}

/** Its own collection (bench/scenarios/reporters.ts reads its records' sizes under this name). */
const FLOOR_COLLECTION = 'floor_http_upsert_reports';

// The server's driver options (src/store/mongo.ts, MONGODB_TIMEOUT_MS at its default of 2 s).
const client = await new MongoClient(process.env['MONGODB_URI'] ?? '', {
  serverSelectionTimeoutMS: 2_000,
  connectTimeoutMS: 2_000,
  socketTimeoutMS: 5_000,
  waitQueueTimeoutMS: 5_000,
  heartbeatFrequencyMS: 2_000,
  maxPoolSize: 50,
  retryWrites: true,
  ignoreUndefined: true,
}).connect();
const records = client.db(process.env['MONGODB_DB']).collection<Document>(FLOOR_COLLECTION);
// As the server's `reports` (src/store/indexPlan.ts): the fence's equality is served by a unique index on every server.
await records.createIndex({ fence: 1 }, { unique: true, sparse: true, name: 'reports_fence_unique' });

const templates = new Map<string, Template>();
let answer: { status: number, body: unknown } = { status: 500, body: { error: 'no answer set' } };

const app = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });
app.get('/healthz', async () => ({ status: 'ok' }));
app.put('/__bench/templates', async (request) => {
  const set = request.body as { templates: Record<string, { id: string, record: Document }>, answer: { status: number, body: unknown } };
  for (const [key, t] of Object.entries(set.templates)) if (!templates.has(key)) templates.set(key, { ...t, version: 0 });
  answer = set.answer;
  return { templates: templates.size };
});

app.post('/v1/deployment-snapshots', async (request, reply): Promise<FastifyReply> => {
  const body = request.body as ReportBody;
  const envelope = body.immutableReport;
  const t = templates.get(`${body.serviceId}/${envelope.reporterSessionId}`);
  if (!t) return reply.code(404).send({ code: 'unknown-reporter' });
  const version = t.version + 1;
  const now = Date.now();
  const position = { ...(t.record['position'] as Document), sequence: envelope.reportSequence, reportedAt: body.reportedAt, receivedAt: now };
  const document = {
    ...t.record,
    _id: t.id,
    version,
    fence: `${t.id}@${version}`,
    position,
    entry: { ...(t.record['entry'] as Document), reportSequence: envelope.reportSequence, reportedAt: body.reportedAt },
    deploymentsJson: JSON.stringify(body.deployments),
  };
  try {
    await records.replaceOne({ fence: `${t.id}@${t.version}` }, document, { upsert: true });
  } catch (err) {
    // The fence moved (another write of this record won): the upsert's insert meets the unique `_id`.
    if (err instanceof MongoServerError && err.code === 11000) return reply.code(409).send({ code: 'superseded' });
    throw err;
  }
  t.version = version;
  return reply.code(answer.status).send(answer.body);
});

process.once('SIGTERM', () => { void app.close().then(() => client.close()); });
await app.listen({ host: process.env['HOST'] ?? '127.0.0.1', port: Number(process.env['PORT'] ?? 0) });
