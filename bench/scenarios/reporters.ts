import { BSON, type Collection, type Document } from 'mongodb';
import { rolloutRecordId } from '../../src/domain/reports.js';
import { httpLoop, measureTriples, probesFor, setCanned, type BenchContext, type Triple } from '../lib/context.js';
import type { Child, CpuProbe } from '../lib/processes.js';
import { bearer } from '../lib/fixtures.js';
import { nextReport, reporterIdOf, type ReadyFleet, type Reporter, type RolloutFleets } from '../lib/fleet.js';
import { HttpClient, closedLoop, expectStatus, openLoop, seededRandom, type OpenLoopSamples } from '../lib/load.js';
import { emptySamples, merge, summarize, type Samples, type Summary } from '../lib/stats.js';
import { driverReport } from './reports.js';
import { measureRoundTrips, type RoundTripCost } from './roundTrips.js';

/**
 * One rollout, many reporters: one service placed on R clusters, each reporter the Coreflow of
 * one cluster with 4 nodes × 2 replicas (bench/lib/fleet.ts `RolloutFleets`), R ∈ {1, 10, 50, 150}.
 *
 * - Reporters curve (closed loop): every reporter has one report in flight, always (no pause):
 *   R reports in flight. Beside the server, the plain-Fastify floor and the minimal bare-driver
 *   floor `upsertFloor` (one conditional upsert of a record of the same size per report, no HTTP:
 *   information since issue 24), and the HTTP-inclusive floor (bench/floors/httpUpsert.ts: plain
 *   Fastify, the same body parsed, the one conditional upsert), which the criterion at R = 50 uses.
 * - Open loop: every reporter reports once per second as an agent does, at phases fixed in
 *   advance (offered load R reports/s); latency from the scheduled send time (bench/lib/load.ts
 *   `openLoop`). Each round first runs one period unmeasured on the same client, so that the
 *   measured periods, like an agent's steady reporting, use connections already open.
 */

export const REPORTER_NODES = 4;
const SERVER_ROUND_TRIPS = 'the server\'s round trips (bare driver)';
const HTTP_UPSERT_FLOOR = 'HTTP-inclusive floor (plain Fastify + one conditional upsert)';
/** The HTTP-inclusive floor's collection (bench/floors/httpUpsert.ts). */
const HTTP_UPSERT_COLLECTION = 'floor_http_upsert_reports';

/** One R of the reporters curve. */
export interface ReportersLevel {
  reporters: number;
  /** server; plain Fastify; bare driver = one conditional upsert per report. */
  triple: Triple;
  /** Reports answered 200 per second (the floor: upserts that wrote). */
  acceptedPerSecond: { server: number, floor: number };
  /** Server answers ≥ 500 (and transport errors), over all rounds. */
  serverErrors: { fiveXx: number, other: Record<string, number> };
  /** The service document (BSON bytes) after the level, its status history full. */
  serviceDocumentBytes: number;
  /** One reporter's record (BSON bytes). */
  recordBytes: number;
  /**
   * The bare driver making the server's round trips for each report (bench/scenarios/reports.ts `driverReport`), R in flight:
   * reports/s and p50.
   */
  serverRoundTrips?: { accepted: number, p50: number };
  /** The database cost of each of a report's round trips, alone (smallest and largest R only). */
  roundTrips?: RoundTripCost[];
  /**
   * The HTTP-inclusive floor (bench/floors/httpUpsert.ts: plain Fastify, the same body parsed, one conditional upsert of
   * a record of the same size), measured in the same rounds with the same load: its figures, reports/s answered 200,
   * server ÷ floor per round, and the BSON size of the record it writes.
   */
  httpFloor?: { summary: Summary, accepted: number, perRound: number[], recordBytes: number };
}

/** Answers ≥ 500 and any other non-200 outcome of a summary. */
export function errorsOf (s: Summary): { fiveXx: number, other: Record<string, number> } {
  let fiveXx = 0;
  const other: Record<string, number> = {};
  for (const [k, n] of Object.entries(s.outcomes)) {
    if (/^5\d\d$/.test(k)) fiveXx += n;
    else if (k !== '200') other[k] = n;
  }
  return { fiveXx, other };
}

const accepted = (s: Summary): number => ((s.outcomes['200'] ?? 0) * 1000) / s.elapsedMs;

/** The server's request for reporter `r`'s next report. */
async function postReport (client: HttpClient, r: Reporter): Promise<string> {
  const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
  return String(res.status);
}

/**
 * The minimal floor of a report: ONE conditional upsert of the reporter's record — same shape
 * and size as the server's record (a copy of the server's own record of that reporter, its
 * position and entry moved on), found by its fence `<_id>@<version>` (as the server's), `upsert: true` — from the
 * bench process, against the same database and collection, under twin ids (`…~floor`) so that
 * the server's own records are untouched. It is what the storage design costs at least: one
 * fenced write per report, nothing else (no read, no status, no HTTP).
 */
export async function upsertFloor (ctx: BenchContext, fleet: ReadyFleet): Promise<(r: Reporter) => Promise<string>> {
  const reports = ctx.db.collection('reports') as Collection<Document>;
  const templates = new Map<Reporter, { id: string, record: Document, version: number, sequence: number }>();
  for (const r of fleet.reporters) {
    const stored = await reports.findOne({ _id: rolloutRecordId(r.plan.rolloutId, reporterIdOf(r)) as never });
    if (!stored) throw new Error(`no record of ${reporterIdOf(r)}`);
    const { _id, ...record } = stored;
    const rolloutId = `${r.plan.rolloutId}~floor`;
    templates.set(r, { id: rolloutRecordId(rolloutId, reporterIdOf(r)), record: { ...record, rolloutId }, version: 0, sequence: 0 });
  }
  return async (r: Reporter): Promise<string> => {
    const t = templates.get(r);
    if (!t) throw new Error('unknown reporter');
    const now = Date.now();
    const sequence = ++t.sequence;
    const record = {
      ...t.record,
      _id: t.id,
      version: t.version + 1,
      fence: `${t.id}@${t.version + 1}`,
      position: { ...(t.record['position'] as Document), sequence, reportedAt: now, receivedAt: now },
      entry: { ...(t.record['entry'] as Document), reportSequence: sequence, reportedAt: now },
    };
    const result = await reports.replaceOne({ _id: t.id as never, fence: `${t.id}@${t.version}` }, record as never, { upsert: true });
    if (result.matchedCount + result.upsertedCount !== 1) return 'not-written';
    t.version++;
    return '200';
  };
}

/** The HTTP-inclusive floor's id of a reporter's record (in its own collection). */
const httpFloorRecordId = (r: Reporter): string => `${rolloutRecordId(r.plan.rolloutId, reporterIdOf(r))}~http-floor`;

/** BSON sizes of the fleet's service document, of its first reporter's record, and of the HTTP-inclusive floor's record of it. */
async function sizesOf (ctx: BenchContext, fleet: ReadyFleet): Promise<{ service: number, record: number, floorRecord: number }> {
  const r = fleet.reporters[0] as Reporter;
  const [service, record, floorRecord] = await Promise.all([
    ctx.db.collection('services').findOne({ _id: r.serviceId as never }),
    ctx.db.collection('reports').findOne({ _id: rolloutRecordId(r.plan.rolloutId, reporterIdOf(r)) as never }),
    ctx.db.collection(HTTP_UPSERT_COLLECTION).findOne({ _id: httpFloorRecordId(r) as never }),
  ]);
  const size = (doc: Document | null): number => (doc ? BSON.calculateObjectSize(doc) : 0);
  return { service: size(service), record: size(record), floorRecord: size(floorRecord) };
}

/**
 * Hands the HTTP-inclusive floor (bench/floors/httpUpsert.ts) its templates — each reporter's record as the server stored
 * it, without `_id`, fence and deployments (the floor writes the request's deployments), keyed as the floor finds the
 * reporter in a report body: `<serviceId>/<reporterSessionId>` (`session-<clusterId>`, bench/lib/fleet.ts `nextReport`) —
 * and the server's answer to the fleet, which it answers.
 */
async function teachHttpFloor (ctx: BenchContext, floor: Child, fleet: ReadyFleet): Promise<void> {
  const reports = ctx.db.collection('reports') as Collection<Document>;
  const entries = await Promise.all(fleet.reporters.map(async (r) => {
    const id = rolloutRecordId(r.plan.rolloutId, reporterIdOf(r));
    const stored = await reports.findOne({ _id: id as never }, { projection: { deploymentsJson: 0, fence: 0 } });
    if (!stored) throw new Error(`no record of ${reporterIdOf(r)}`);
    const { _id, ...record } = stored;
    return [`${r.serviceId}/session-${r.clusterId}`, { id: httpFloorRecordId(r), record }] as const;
  }));
  const answer = { status: 200, body: JSON.parse(fleet.lastAnswer) as unknown };
  await expectStatus([200], floor.url, 'PUT', '/__bench/templates', {}, { templates: Object.fromEntries(entries), answer });
}

export interface ReportersPlan {
  rounds: number;
  /** Reports per measured block at R reporters. */
  perBlock: (reporters: number) => number;
  warmMs: number;
  /** The first level's warm-up (longer when nothing ran before: JIT of the processes and the database). */
  firstWarmMs: number;
  /** Times each round trip runs alone, for the smallest and the largest R. */
  roundTrips: number;
}

/** What one R of the curve runs: its fleet, the blocks of the three subjects, of the server's round trips and of the HTTP-inclusive floor. */
interface CurveLevel {
  fleet: ReadyFleet;
  httpBlock: (subject: 'server' | 'fastify', total: number, maxMs?: number) => Promise<Samples>;
  floorBlock: (total: number, maxMs?: number) => Promise<Samples>;
  tripsBlock: (total: number, maxMs?: number) => Promise<Samples>;
  httpFloorBlock: (total: number, maxMs?: number) => Promise<Samples>;
}

async function curveLevel (ctx: BenchContext, fleets: RolloutFleets, reporters: number, httpFloor: Child): Promise<CurveLevel> {
  const fleet = await fleets.get(reporters, REPORTER_NODES);
  const floorOp = await upsertFloor(ctx, fleet);
  await teachHttpFloor(ctx, httpFloor, fleet);
  // The floor process's CPU in the place of the server's, the database's, and the load generator's (this process).
  const httpFloorCpu: CpuProbe[] = [{ ...httpFloor.cpu, name: 'service' }, ...(ctx.probes.db ? [ctx.probes.db] : []), { ...ctx.probes.self, name: 'client' }];
  // Worker w is reporter w: each reporter has exactly one report in flight, one after the other.
  const reporterOf = (w: number): Reporter => fleet.reporters[w] as Reporter;
  const loop = (total: number, maxMs: number | undefined, op: (w: number) => Promise<string>) =>
    closedLoop({ concurrency: reporters, total, ...(maxMs === undefined ? {} : { maxMs }), cpu: probesFor(ctx, 'driver'), op });
  // The server's own round trips from the bare driver (the headline floor): how much of the curve the storage itself makes.
  const tripsOp = driverReport(ctx);
  return {
    fleet,
    httpBlock: (subject, total, maxMs) => httpLoop(ctx, subject, subject === 'server' ? ctx.server.url : ctx.fastify.url,
      { concurrency: reporters, total, maxMs }, (client, w) => postReport(client, reporterOf(w))),
    floorBlock: (total, maxMs) => loop(total, maxMs, (w) => floorOp(reporterOf(w))),
    tripsBlock: (total, maxMs) => loop(total, maxMs, (w) => tripsOp(reporterOf(w))),
    // The same load generator, workers and reports as the server's block: worker w is reporter w.
    httpFloorBlock: (total, maxMs) => httpLoop(ctx, 'fastify', httpFloor.url, { concurrency: reporters, total, maxMs },
      (client, w) => postReport(client, reporterOf(w)), httpFloorCpu),
  };
}

/**
 * The reporters curve: every fleet set up and warmed up first, then the levels measured in the
 * same interleaved rounds (each round: every R in turn; per R the server, plain Fastify, the
 * upsert floor, the server's round trips from the bare driver and the HTTP-inclusive floor), so
 * that the levels compared meet the same drift and the same other load on the machine.
 */
export async function runReportersCurve (ctx: BenchContext, fleets: RolloutFleets, levels: number[], plan: ReportersPlan): Promise<ReportersLevel[]> {
  const httpFloor = await ctx.startFloor('http-upsert floor', 'httpUpsert.js');
  try {
    const prepared = new Map<number, CurveLevel>();
    for (const reporters of levels) {
      const level = await curveLevel(ctx, fleets, reporters, httpFloor);
      const warmMs = prepared.size === 0 ? plan.firstWarmMs : plan.warmMs;
      await level.httpBlock('server', Number.MAX_SAFE_INTEGER, warmMs);
      await level.floorBlock(Number.MAX_SAFE_INTEGER, warmMs / 3);
      await level.tripsBlock(Number.MAX_SAFE_INTEGER, warmMs / 3);
      await level.httpFloorBlock(Number.MAX_SAFE_INTEGER, warmMs / 3);
      prepared.set(reporters, level);
    }
    await prepared.get(levels[0] ?? 0)?.httpBlock('fastify', Number.MAX_SAFE_INTEGER, 300);
    const at = (reporters: number): CurveLevel => prepared.get(reporters) as CurveLevel;
    const triples = await measureTriples(ctx, (r) => `reporters curve, one rollout, ${r} reporters in flight`, plan.rounds, levels, (r) => ({
      server: () => at(r).httpBlock('server', plan.perBlock(r)),
      fastify: () => at(r).httpBlock('fastify', plan.perBlock(r)),
      driver: () => at(r).floorBlock(plan.perBlock(r)),
    }), (r) => ({
      [SERVER_ROUND_TRIPS]: () => at(r).tripsBlock(plan.perBlock(r)),
      [HTTP_UPSERT_FLOOR]: () => at(r).httpFloorBlock(plan.perBlock(r)),
    }), (r) => setCanned(ctx, 'report', 200, at(r).fleet.lastAnswer));
    const out: ReportersLevel[] = [];
    for (const reporters of levels) {
      const ends = reporters === Math.min(...levels) || reporters === Math.max(...levels);
      out.push(await levelResult(ctx, reporters, at(reporters).fleet, triples.get(reporters) as Triple, ends ? plan.roundTrips : 0));
    }
    return out;
  } finally {
    await httpFloor.stop();
  }
}

/** One R's figures from its triple (and its round trips alone, `roundTrips` times each, when > 0). */
async function levelResult (ctx: BenchContext, reporters: number, fleet: ReadyFleet, triple: Triple, roundTrips: number): Promise<ReportersLevel> {
  const trips = triple.extra?.[SERVER_ROUND_TRIPS];
  const floor = triple.extra?.[HTTP_UPSERT_FLOOR];
  const sizes = await sizesOf(ctx, fleet);
  const costs = roundTrips > 0 ? await measureRoundTrips(ctx, fleet, roundTrips) : undefined;
  const errors = errorsOf(triple.server);
  if (errors.fiveXx > 0 || Object.keys(errors.other).length > 0) {
    ctx.opts.log(`  WARNING reporters curve, ${reporters} reporters: server outcomes ${JSON.stringify(triple.server.outcomes)}`);
  }
  if (floor && (floor.outcomes['200'] ?? 0) !== floor.ops) {
    ctx.opts.log(`  WARNING reporters curve, ${reporters} reporters: HTTP-inclusive floor outcomes ${JSON.stringify(floor.outcomes)}`);
  }
  const perRound = triple.rounds.flatMap((round) => {
    const f = round.extra?.[HTTP_UPSERT_FLOOR];
    return f ? [accepted(round.server) / accepted(f)] : [];
  });
  return {
    reporters,
    triple,
    acceptedPerSecond: { server: accepted(triple.server), floor: accepted(triple.driver) },
    serverErrors: errors,
    serviceDocumentBytes: sizes.service,
    recordBytes: sizes.record,
    ...(trips ? { serverRoundTrips: { accepted: accepted(trips), p50: trips.p50 } } : {}),
    ...(costs ? { roundTrips: costs } : {}),
    ...(floor ? { httpFloor: { summary: floor, accepted: accepted(floor), perRound, recordBytes: sizes.floorRecord } } : {}),
  };
}

/** One R of the open loop. */
export interface OpenLoopLevel {
  reporters: number;
  /** Offered load: R reports per second. */
  offeredPerSecond: number;
  /** Latency from the scheduled send time; throughput = completed ÷ wall time. */
  summary: Summary;
  /** Requests that started more than 10 ms late (their reporter's previous report was still running). */
  late: number;
  serverErrors: { fiveXx: number, other: Record<string, number> };
  rounds: Summary[];
}

export interface OpenLoopPlan {
  rounds: number;
  /** How long each R runs per round (ms). */
  durationMs: (reporters: number) => number;
  /** A closed-loop warm-up of the server on the largest fleet first (ms). */
  warmMs: number;
}

/**
 * The open loop: per round, each R in turn (the order alternates between rounds), every reporter
 * of that fleet reporting once per second at its own phase — uniform in the second, drawn from a
 * fixed seed, so every run offers the same arrival times — for `durationMs(R)`.
 */
export async function runOpenLoop (ctx: BenchContext, fleets: RolloutFleets, levels: number[], plan: OpenLoopPlan): Promise<OpenLoopLevel[]> {
  const perLevel = new Map<number, { samples: OpenLoopSamples[] }>();
  for (const reporters of levels) perLevel.set(reporters, { samples: [] });
  const largest = await fleets.get(Math.max(...levels), REPORTER_NODES);
  await httpLoop(ctx, 'server', ctx.server.url, { concurrency: Math.min(10, largest.reporters.length), total: Number.MAX_SAFE_INTEGER, maxMs: plan.warmMs },
    (client, w) => postReport(client, largest.reporters[w] as Reporter));
  for (let round = 1; round <= plan.rounds; round++) {
    const order = round % 2 === 1 ? levels : [...levels].reverse();
    for (const reporters of order) {
      const fleet = await fleets.get(reporters, REPORTER_NODES);
      const random = seededRandom(reporters * 7919 + round);
      const offsets = fleet.reporters.map(() => random() * 1000);
      const client = new HttpClient(ctx.server.url, reporters);
      try {
        const loop = { senders: reporters, periodMs: 1000, offsets, op: (s: number) => postReport(client, fleet.reporters[s] as Reporter) };
        // One period first, not measured: its connections opened (an agent reports over a keep-alive connection it holds).
        await openLoop({ ...loop, durationMs: loop.periodMs });
        const samples = await openLoop({ ...loop, durationMs: plan.durationMs(reporters), cpu: probesFor(ctx, 'server') });
        perLevel.get(reporters)?.samples.push(samples);
        const s = summarize(samples);
        ctx.opts.log(`  open loop, ${reporters} reports/s offered: round ${round}/${plan.rounds}: ${s.throughput.toFixed(0)}/s done, ` +
          `p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms (from the scheduled time), ${samples.late} late`);
      } finally {
        client.close();
      }
    }
  }
  return levels.map((reporters) => {
    const all = perLevel.get(reporters)?.samples ?? [];
    const summary = summarize(all.reduce((into, s) => merge(into, s), emptySamples()));
    const late = all.reduce((n, s) => n + s.late, 0);
    return { reporters, offeredPerSecond: reporters, summary, late, serverErrors: errorsOf(summary), rounds: all.map(summarize) };
  });
}
