import { BSON } from 'mongodb';
import { bucketId, bucketOf, reporterKeyOf } from '../../src/domain/rolloutStatus.js';
import { httpLoop, measureTriples, probesFor, setCanned, type BenchContext, type Subject, type Triple } from '../lib/context.js';
import type { Samples } from '../lib/stats.js';
import { bearer } from '../lib/fixtures.js';
import { nextReport, reporterIdOf, type ReadyFleet, type Reporter, type RolloutFleets } from '../lib/fleet.js';
import { HttpClient, closedLoop } from '../lib/load.js';
import { singleHostOf, startWireMeter } from '../lib/meter.js';
import { REPORTER_NODES, errorsOf, upsertFloor } from './reporters.js';

/**
 * Report size: one rollout with ONE reporter whose cluster has N nodes × 2 replicas,
 * N ∈ {10, 100, 500, 1000}; one report in flight. Server CPU per report (from /proc) against N,
 * beside the plain-Fastify floor and the one-upsert floor of a record of the same size.
 *
 * Bytes per report, independent of the fleet: a second server process whose database connection
 * goes through a byte-counting proxy (bench/lib/meter.ts) sends reports of one 4-node reporter of
 * the 1-reporter rollout and of one 4-node reporter of the 150-reporter rollout; the bytes it
 * sends to the database per report (the record, the summary delta, the filters) and receives
 * from it (what it reads) are compared.
 *
 * Body limit: a full report of the 1,000-node cluster (REST and TypedRequest) at the server's
 * default REPORT_BODY_LIMIT_BYTES (8 MiB): accepted or not, and its body size.
 */

export interface SizeLevel {
  nodes: number;
  replicas: number;
  /** Request body of one full report (bytes). */
  bodyBytes: number;
  /** server; plain Fastify; bare driver = one conditional upsert of a record of this size. */
  triple: Triple;
  /** Server process CPU per report (ms). */
  serverCpuPerReportMs: number;
}

export interface BodyLimitCheck {
  nodes: number;
  replicas: number;
  rest: { status: number, bodyBytes: number, detail: string };
  typedRequest: { status: number, bodyBytes: number, error: string | undefined };
}

export interface BytesPerReport {
  /** The reporters of the rollouts compared: reporters in the rollout → bytes per report. */
  byRollout: Array<{ reporters: number, toDatabase: number, fromDatabase: number, reports: number }>;
  /**
   * What a report that changes its counts rewrites, as stored (BSON bytes): the service document, its
   * status summary (`rolloutStatus`), and the reporter's bucket (src/store/statusBuckets.ts).
   */
  stored?: Array<{ reporters: number, serviceBytes: number, summaryBytes: number, bucketBytes: number }>;
  note?: string;
}

export interface ReportSizeResult {
  levels: SizeLevel[];
  bodyLimit: BodyLimitCheck | undefined;
  bytes: BytesPerReport;
}

export interface ReportSizePlan {
  rounds: number;
  /** Reports per measured block at N nodes. */
  perBlock: (nodes: number) => number;
  warmMs: number;
  /** The first size's warm-up (longer when nothing ran before). */
  firstWarmMs: number;
  /** Reports per measured window of the bytes measurement. */
  bytesReports: number;
}

/** One full report of the fleet's only reporter through REST and through /typedrequest; both must be accepted. */
async function checkBodyLimit (ctx: BenchContext, fleet: ReadyFleet): Promise<BodyLimitCheck> {
  const r = fleet.reporters[0] as Reporter;
  const client = new HttpClient(ctx.server.url, 1);
  try {
    const restBody = JSON.stringify(nextReport(r));
    const rest = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), restBody);
    const request = { identity: { name: 'coreflow', userId: 'coreflow', expiresAt: 0, jwt: r.token }, ...nextReport(r) };
    const envelope = JSON.stringify({ method: 'reportDeploymentSnapshots', request, response: null, correlation: { id: 'bench-limit', phase: 'request' } });
    const typed = await client.request('POST', '/typedrequest', {}, envelope);
    let error: string | undefined;
    try {
      const parsed = JSON.parse(typed.body) as { error?: { text?: string } };
      error = parsed.error === undefined ? undefined : JSON.stringify(parsed.error).slice(0, 200);
    } catch {
      error = `not JSON: ${typed.body.slice(0, 100)}`;
    }
    return {
      nodes: r.nodes.length,
      replicas: r.deployments.length,
      rest: { status: rest.status, bodyBytes: Buffer.byteLength(restBody), detail: rest.status === 200 ? '' : rest.body.slice(0, 200) },
      typedRequest: { status: typed.status, bodyBytes: Buffer.byteLength(envelope), error },
    };
  } finally {
    client.close();
  }
}

/** The stored documents a report of `r` that changes its counts rewrites: its service document (and the summary in it), its bucket. */
async function storedBytesOf (ctx: BenchContext, r: Reporter): Promise<{ serviceBytes: number, summaryBytes: number, bucketBytes: number }> {
  const service = await ctx.db.collection('services').findOne({ _id: r.serviceId as never });
  const bucket = await ctx.db.collection('statusBuckets').findOne({ _id: bucketId(r.plan.rolloutId, bucketOf(reporterKeyOf(reporterIdOf(r)))) as never });
  return {
    serviceBytes: service ? BSON.calculateObjectSize(service) : 0,
    summaryBytes: service?.['rolloutStatus'] ? BSON.calculateObjectSize(service['rolloutStatus'] as object) : 0,
    bucketBytes: bucket ? BSON.calculateObjectSize(bucket) : 0,
  };
}

/** Reports of one reporter of each rollout through a metered server, alternately, after a few unmeasured ones. */
async function measureBytes (ctx: BenchContext, fleets: RolloutFleets, rollouts: number[], perWindow: number): Promise<BytesPerReport> {
  const target = singleHostOf(ctx.mongoUri);
  if (!target) return { byRollout: [], note: 'not measured: the database URI is not a single mongodb://host:port' };
  const meter = await startWireMeter(target);
  const server = await ctx.startServer('metered server', meter.uri);
  const client = new HttpClient(server.url, 1);
  const totals = new Map<number, { toDatabase: number, fromDatabase: number, reports: number }>();
  // The reporter in the middle of the fleet (its entry is neither the first nor the last key of the summary).
  const reporterOf = async (reporters: number): Promise<Reporter> => {
    const fleet = await fleets.get(reporters, REPORTER_NODES);
    return fleet.reporters[Math.floor(fleet.reporters.length / 2)] as Reporter;
  };
  try {
    const send = async (r: Reporter): Promise<void> => {
      const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
      if (res.status !== 200) throw new Error(`metered report: ${res.status} ${res.body.slice(0, 200)}`);
    };
    for (const reporters of rollouts) {
      const r = await reporterOf(reporters);
      for (let i = 0; i < 5; i++) await send(r); // the metered server's pool connects, its code warms up
    }
    for (let round = 0; round < 2; round++) {
      for (const reporters of round === 0 ? rollouts : [...rollouts].reverse()) {
        const r = await reporterOf(reporters);
        meter.reset();
        for (let i = 0; i < perWindow; i++) await send(r);
        const bytes = meter.read();
        const t = totals.get(reporters) ?? { toDatabase: 0, fromDatabase: 0, reports: 0 };
        t.toDatabase += bytes.toDatabase;
        t.fromDatabase += bytes.fromDatabase;
        t.reports += perWindow;
        totals.set(reporters, t);
      }
    }
  } finally {
    client.close();
    await server.stop();
    await meter.close();
  }
  const stored = await Promise.all(rollouts.map(async (reporters) => ({ reporters, ...await storedBytesOf(ctx, await reporterOf(reporters)) })));
  return {
    stored,
    byRollout: rollouts.map((reporters) => {
      const t = totals.get(reporters) ?? { toDatabase: 0, fromDatabase: 0, reports: 0 };
      return { reporters, toDatabase: t.toDatabase / t.reports, fromDatabase: t.fromDatabase / t.reports, reports: t.reports };
    }),
  };
}

/**
 * Every size's fleet set up and warmed up first (the largest also checks the body limit), then
 * the sizes measured in the same interleaved rounds (bench/lib/context.ts `measureTriples`): CPU
 * per report depends on the other load on the machine, so sizes compared must meet the same.
 */
export async function runReportSize (
  ctx: BenchContext, fleets: RolloutFleets, sizes: number[], bytesRollouts: number[], plan: ReportSizePlan,
): Promise<ReportSizeResult> {
  let bodyLimit: BodyLimitCheck | undefined;
  type Block = (total: number, maxMs?: number) => Promise<Samples>;
  const prepared = new Map<number, { fleet: ReadyFleet, r: Reporter, bodyBytes: number, blocks: Record<Subject, Block> }>();
  for (const nodes of sizes) {
    const fleet = await fleets.get(1, nodes);
    const r = fleet.reporters[0] as Reporter;
    if (nodes === Math.max(...sizes)) {
      bodyLimit = await checkBodyLimit(ctx, fleet);
      ctx.opts.log(`  a full report of ${bodyLimit.nodes} nodes × 2 replicas: REST ${bodyLimit.rest.status} (${bodyLimit.rest.bodyBytes} bytes), ` +
        `TypedRequest ${bodyLimit.typedRequest.status}${bodyLimit.typedRequest.error ? ` error ${bodyLimit.typedRequest.error}` : ''} ` +
        `(${bodyLimit.typedRequest.bodyBytes} bytes)`);
    }
    const floorOp = await upsertFloor(ctx, fleet);
    const httpBlock = (subject: 'server' | 'fastify') => (total: number, maxMs?: number) =>
      httpLoop(ctx, subject, subject === 'server' ? ctx.server.url : ctx.fastify.url, { concurrency: 1, total, maxMs }, async (client) => {
        const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
        return String(res.status);
      });
    const blocks = {
      server: httpBlock('server'),
      fastify: httpBlock('fastify'),
      driver: (total: number, maxMs?: number) =>
        closedLoop({ concurrency: 1, total, ...(maxMs === undefined ? {} : { maxMs }), cpu: probesFor(ctx, 'driver'), op: () => floorOp(r) }),
    };
    const warmMs = prepared.size === 0 ? plan.firstWarmMs : plan.warmMs;
    await blocks.server(Number.MAX_SAFE_INTEGER, warmMs);
    await blocks.driver(Number.MAX_SAFE_INTEGER, warmMs / 3);
    await setCanned(ctx, 'report', 200, fleet.lastAnswer);
    await blocks.fastify(Number.MAX_SAFE_INTEGER, 300);
    prepared.set(nodes, { fleet, r, bodyBytes: Buffer.byteLength(JSON.stringify(nextReport({ ...r }))), blocks });
  }
  const at = (nodes: number) => prepared.get(nodes) as NonNullable<ReturnType<typeof prepared.get>>;
  const triples = await measureTriples(ctx, (n) => `report size, ${n} nodes × 2 replicas, one in flight`, plan.rounds, sizes, (n) => ({
    server: () => at(n).blocks.server(plan.perBlock(n)),
    fastify: () => at(n).blocks.fastify(plan.perBlock(n)),
    driver: () => at(n).blocks.driver(plan.perBlock(n)),
  }), () => ({}), (n) => setCanned(ctx, 'report', 200, at(n).fleet.lastAnswer));
  const levels: SizeLevel[] = sizes.map((nodes) => {
    const triple = triples.get(nodes) as Triple;
    const errors = errorsOf(triple.server);
    if (errors.fiveXx > 0 || Object.keys(errors.other).length > 0) {
      ctx.opts.log(`  WARNING report size ${nodes}: server outcomes ${JSON.stringify(triple.server.outcomes)}`);
    }
    const { r, bodyBytes } = at(nodes);
    return { nodes, replicas: r.deployments.length, bodyBytes, triple, serverCpuPerReportMs: triple.server.cpuPerOpMs['service'] ?? Number.NaN };
  });
  const bytes = bytesRollouts.length > 1 ? await measureBytes(ctx, fleets, bytesRollouts, plan.bytesReports) : { byRollout: [] };
  return { levels, bodyLimit, bytes };
}
