import { BSON, type Collection, type Document } from 'mongodb';
import { rolloutRecordId } from '../../src/domain/reports.js';
import type { IImageRolloutReporterStatus } from '../../src/contracts/index.js';
import { bucketId, bucketOf, contributionOf, reporterKeyOf, type BucketSums, type SummaryEntry } from '../../src/domain/rolloutStatus.js';
import { httpLoop, measureTriple, probesFor, serverCounter, setCanned, type BenchContext, type Triple } from '../lib/context.js';
import { bearer } from '../lib/fixtures.js';
import { nextReport, reportOnce, reporterIdOf, seedStatusHistory, setupFleet, takeReporter, type FleetShape, type Reporter } from '../lib/fleet.js';
import { closedLoop } from '../lib/load.js';

/**
 * Report ingestion: a fleet of Coreflow reporters (bench/lib/fleet.ts), each reporting snapshots
 * of its own nodes' replicas (all running and verified) for the current rollout of the service it
 * runs, concurrently; services hold `reportersPerService` reporters each, so a service's rollout
 * status holds at most that many reporters whatever the fleet size. Load: min(R, 10) reports in
 * flight; each next report comes from a reporter picked at random among those not in flight, so
 * reports to one service meet (the published status seq moves under them) as often as chance
 * makes them.
 */

export type { FleetShape } from '../lib/fleet.js';

/** The summary fields the status write returns (src/store/serviceStore.ts `statusHead`). */
export const STATUS_HEAD = {
  ...Object.fromEntries(['rolloutId', 'totals', 'mismatched', 'seq', 'updatedAt', 'lifecycle'].map((field) => [`rolloutStatus.${field}`, 1])),
  statusRevision: 1,
  statusPublished: 1,
};

/**
 * What the report path reads of the service (src/store/serviceStore.ts `findReportTarget`), without the reporter's entry:
 * the current rollout's id, not its plan (the server reads a rollout's plan once per process: plans never change).
 */
export const REPORT_TARGET = { 'data.immutableImageRequired': 1, 'data.imageDeployment.rolloutId': 1, 'data.rolloutPolicy': 1 } as const;

/** `REPORT_TARGET` with the summary head and the sums of the reporter's bucket, as the report path reads it. */
export const reportTargetOf = (reporterId: string): Document =>
  ({ ...REPORT_TARGET, ...STATUS_HEAD, [`rolloutStatus.buckets.b${bucketOf(reporterKeyOf(reporterId))}`]: 1 });

/**
 * Floor (b) for one report: exactly the database round trips the handler makes for a report of
 * a reporter that reported before (src/operations/reportSnapshot.ts and the stores it calls), in
 * the same order, with documents of the same size — but no HTTP, no token, no schema, no
 * evidence checks:
 *   findOne(service: report target — the current rollout id, not the plan —, summary head, the sums of the reporter's bucket)
 *   ‖ find(node owners) → [findOne(the reporter's bucket: its contribution) — only when this process has not
 *   written or read it before]
 *   → [findOne(the reporter's record, without its deployments) — only when this process did not
 *   write it last] → replaceOne(record, CAS on its fence `<_id>@<version>`)
 *   → [findOneAndUpdate(the bucket: this reporter's contribution, guarded by its version, the sums
 *   by $inc) → findOneAndUpdate(the service: the bucket's sums, guarded by the bucket version it
 *   holds, $inc seq) — only when the report changes the contribution]
 * — and no publication: the aggregate stays the same, and an equal aggregate writes nothing
 * (src/operations/statusEvents.ts). (The lifecycle pass after a status change,
 * src/operations/lifecycle.ts `afterStatusChange`, reads nothing once the rollout has succeeded and
 * its progress stays: the steady state measured here.) In that steady state every replica stays
 * verified, so the contribution does not change and, as in the server, the summary is not
 * written: the record is marked `coveredBy` the summary's version.
 * It writes the record it read with the new position and entry (the same bytes as the server
 * writes, a real change), so it runs on the server's own documents and the server's next report
 * of that reporter finds them consistent.
 */
export function driverReport (ctx: BenchContext) {
  const services = ctx.db.collection('services') as Collection<Document>;
  const nodes = ctx.db.collection('nodes') as Collection<Document>;
  const reports = ctx.db.collection('reports') as Collection<Document>;
  const buckets = ctx.db.collection('statusBuckets') as Collection<Document>;
  const deploymentsSeen = new Map<string, unknown>();
  const contributions = new Map<string, { entry: SummaryEntry, w: number }>();
  /** The record heads this process wrote last (src/store/reportStore.ts `knownHead`): the CAS proves them current. */
  const heads = new Map<string, Document>();
  /** A reporter's deployments, read once (the server has them from the report's body). */
  const deploymentsOf = async (recordId: string): Promise<unknown> => {
    if (!deploymentsSeen.has(recordId)) {
      const whole = await reports.findOne({ _id: recordId as never }, { projection: { deploymentsJson: 1 } });
      deploymentsSeen.set(recordId, JSON.parse(String(whole?.['deploymentsJson'] ?? '[]')));
    }
    return deploymentsSeen.get(recordId);
  };
  return async (r: Reporter): Promise<string> => {
    r.sequence++;
    const reportedAt = Date.now();
    const reporterId = reporterIdOf(r);
    const key = reporterKeyOf(reporterId);
    const recordId = rolloutRecordId(r.plan.rolloutId, reporterId);
    const [target] = await Promise.all([
      services.findOne({ _id: r.serviceId as never }, { projection: reportTargetOf(reporterId) }),
      nodes.find({ _id: { $in: r.nodes as never[] } }, { projection: { _id: 1, clusterId: 1, createdAt: 1 } }).toArray(),
    ]);
    if (!target) throw new Error('service missing');
    const b = bucketOf(key);
    const applied = (target['rolloutStatus'] as { buckets?: Record<string, BucketSums> } | undefined)?.buckets?.[`b${b}`];
    // The contribution as this process last wrote or read it (src/store/statusStore.ts `#contributions`), else from its bucket.
    const knownId = `${r.plan.rolloutId}:${key}`;
    let known = contributions.get(knownId);
    if (!known) {
      const bucket = await buckets.findOne({ _id: bucketId(r.plan.rolloutId, b) as never }, { projection: { v: 1, [`entries.${key}`]: 1 } });
      const entry = (bucket?.['entries'] as Record<string, SummaryEntry> | undefined)?.[key];
      known = entry ? { entry, w: bucket?.['v'] as number } : undefined;
      if (known) contributions.set(knownId, known);
    }
    const held = known && (applied?.v ?? 0) >= known.w ? known.entry : undefined;
    // The head this process wrote last when it has one; after a CAS miss (the server wrote since), the stored one.
    let guess = heads.get(recordId);
    heads.delete(recordId);
    for (let attempt = 0; attempt < 2; attempt++) {
      const record = guess ?? await reports.findOne({ _id: recordId as never }, { projection: { deployments: 0, deploymentsJson: 0 } });
      guess = undefined;
      if (!record) throw new Error(`record ${recordId} missing`);
      const { _id, coveredBy: _was, ...stored } = record;
      const version = (stored['version'] as number) + 1;
      const now = Date.now();
      const entry = { ...(stored['entry'] as Document), reportSequence: r.sequence, reportedAt } as IImageRolloutReporterStatus;
      const position = { ...(stored['position'] as Document), sequence: r.sequence, reportedAt, receivedAt: now };
      const contribution = contributionOf(entry, version);
      const accounted = (record['coveredBy'] as number | undefined) ?? (version - 1);
      const covered = held !== undefined && held.v === accounted && held.m === contribution.m && held.c.every((n, i) => n === contribution.c[i]);
      // The report's deployments (the server writes the ones the report states, as one JSON text: the same as last time here).
      const deploymentsJson = JSON.stringify(await deploymentsOf(recordId));
      const next = { ...stored, version, fence: `${recordId}@${version}`, position, entry, deploymentsJson, ...(covered ? { coveredBy: held.v } : {}) };
      const written = await reports.replaceOne({ _id: recordId as never, fence: `${recordId}@${version - 1}` }, next);
      if (written.matchedCount !== 1) continue;
      heads.set(recordId, { _id: recordId, ...next, deploymentsJson: undefined });
      if (covered) return target['statusPublished'] === undefined ? 'unpublished' : '200';
      const path = `entries.${key}`;
      const sums = await buckets.findOneAndUpdate(
        { _id: bucketId(r.plan.rolloutId, b) as never, [`${path}.v`]: held?.v },
        { $set: { [path]: contribution }, $inc: { v: 1 } },
        { returnDocument: 'after', projection: { v: 1, t: 1, m: 1 } },
      );
      if (!sums) return 'entry-cas-miss';
      contributions.set(knownId, { entry: contribution, w: sums['v'] as number });
      const state = await services.findOneAndUpdate(
        { _id: r.serviceId as never, 'rolloutStatus.rolloutId': r.plan.rolloutId, [`rolloutStatus.buckets.b${b}.v`]: applied?.v },
        { $set: { [`rolloutStatus.buckets.b${b}.v`]: sums['v'] as number }, $max: { 'rolloutStatus.updatedAt': now }, $inc: { 'rolloutStatus.seq': 1 } },
        { returnDocument: 'after', projection: STATUS_HEAD },
      );
      if (!state) return 'entry-cas-miss';
      return state['statusPublished'] === undefined ? 'unpublished' : '200';
    }
    return 'record-cas-miss';
  };
}

export interface IngestionMeasurement {
  /** Reports in flight (closed loop). */
  concurrency: number;
  triple: Triple;
  /** The server's status compare-and-swap conflicts per report, from GET /metrics (`rollout-status-revision`; the report path counts none: 0). */
  casRetriesPerReport: { server: number | null };
}

export interface IngestionResult {
  shape: FleetShape;
  services: number;
  /** Size of one service document in steady state (BSON bytes). */
  serviceDocumentBytes: number;
  /** Report records in the collection (all fleets so far). */
  reportRecords: number;
  measurements: IngestionMeasurement[];
}

const CONFLICT_SERIES = 'cloudly_release_cas_conflicts_total{kind="rollout-status-revision"}';

/**
 * Sets up a fleet, lets every reporter report once (statuses reach their full size), then, for
 * each concurrency, warms up and measures the three subjects in interleaved rounds.
 */
export interface IngestionLevel {
  /** Reports in flight (at most the number of reporters). */
  concurrency: number;
  /** Reports per measured block (there are `rounds` blocks per subject). */
  perBlock: number;
  /** Warm-up of the server before measuring (the bare-driver floor gets 0.6 of it). */
  warmMs: number;
}

/** `rounds`: interleaved rounds per concurrency (default 3). */
export async function runIngestion (
  ctx: BenchContext, name: string, shape: FleetShape, levels: IngestionLevel[], rounds: Record<number, number>,
): Promise<IngestionResult> {
  const { log } = ctx.opts;
  log(`ingestion ${name}: ${shape.reporters} reporters × ${shape.nodesPerReporter} nodes × ${shape.replicasPerNode} replicas, ` +
    `${shape.reportersPerService} reporters per service: setting up`);
  const fleet = await setupFleet(ctx, name, shape);

  const withReporter = async (op: (r: Reporter) => Promise<string>): Promise<string> => {
    const r = takeReporter(fleet);
    try {
      return await op(r);
    } finally {
      r.inFlight = false;
    }
  };
  const httpBlock = async (url: string, subject: 'server' | 'fastify', concurrency: number, total: number, maxMs?: number) =>
    await httpLoop(ctx, subject, url, { concurrency, total, maxMs }, async (client) => await withReporter(async (r) => {
      const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
      return String(res.status);
    }));
  const floorOp = driverReport(ctx);
  const driverBlock = (concurrency: number, total: number, maxMs?: number) =>
    closedLoop({ concurrency, total, ...(maxMs === undefined ? {} : { maxMs }), cpu: probesFor(ctx, 'driver'), op: () => withReporter(floorOp) });

  // Every reporter once, in order: each status then holds all its reporters.
  const lastAnswer = await reportOnce(ctx, fleet);
  await setCanned(ctx, 'report', 200, lastAnswer);
  await seedStatusHistory(ctx, fleet.serviceIds);

  const measurements: IngestionMeasurement[] = [];
  for (const { concurrency: wanted, perBlock, warmMs } of levels) {
    const concurrency = Math.min(wanted, fleet.reporters.length);
    // Warm-up by time (JIT of the server, this process and the database), not measured.
    const warm = await httpBlock(ctx.server.url, 'server', concurrency, Number.MAX_SAFE_INTEGER, warmMs);
    if ((warm.outcomes['200'] ?? 0) !== warm.ops) throw new Error(`warm-up reports failed: ${JSON.stringify(warm.outcomes)}`);
    await driverBlock(concurrency, Number.MAX_SAFE_INTEGER, warmMs * 0.6);
    await httpBlock(ctx.fastify.url, 'fastify', concurrency, Number.MAX_SAFE_INTEGER, 500);
    let serverConflicts: number | undefined = 0;
    const triple = await measureTriple(ctx, `ingestion ${name}, ${concurrency} in flight`, rounds[concurrency] ?? 3, {
      server: async () => {
        const before = await serverCounter(ctx, CONFLICT_SERIES);
        const samples = await httpBlock(ctx.server.url, 'server', concurrency, perBlock);
        const after = await serverCounter(ctx, CONFLICT_SERIES);
        serverConflicts = before === undefined || after === undefined || serverConflicts === undefined ? undefined : serverConflicts + after - before;
        return samples;
      },
      fastify: () => httpBlock(ctx.fastify.url, 'fastify', concurrency, perBlock),
      driver: () => driverBlock(concurrency, perBlock),
    });
    for (const subject of ['server', 'fastify', 'driver'] as const) {
      const outcomes = triple[subject].outcomes;
      if (Object.keys(outcomes).some((k) => k !== '200')) log(`  WARNING ingestion ${name} (${subject}): unexpected outcomes ${JSON.stringify(outcomes)}`);
    }
    measurements.push({
      concurrency,
      triple,
      casRetriesPerReport: {
        server: serverConflicts === undefined ? null : serverConflicts / triple.server.ops,
      },
    });
  }
  const doc = await ctx.db.collection('services').findOne({ _id: fleet.serviceIds[0] as never });
  return {
    shape,
    services: fleet.serviceIds.length,
    serviceDocumentBytes: doc ? BSON.calculateObjectSize(doc) : 0,
    reportRecords: await ctx.db.collection('reports').countDocuments(),
    measurements,
  };
}
