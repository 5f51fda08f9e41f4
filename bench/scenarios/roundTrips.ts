import { performance } from 'node:perf_hooks';
import type { Collection, Document } from 'mongodb';
import { rolloutRecordId } from '../../src/domain/reports.js';
import type { IImageRolloutReporterStatus } from '../../src/contracts/index.js';
import { bucketId, bucketOf, contributionOf, reporterKeyOf } from '../../src/domain/rolloutStatus.js';
import type { BenchContext } from '../lib/context.js';
import { reporterIdOf, type ReadyFleet, type Reporter } from '../lib/fleet.js';
import { reportTargetOf, STATUS_HEAD } from './reports.js';

/**
 * Where a report's database time goes: each round trip the server makes for a report of a
 * reporter that reported before (the headline floor's list, bench/scenarios/reports.ts), run
 * alone `times` times in a row, one in flight, with the database's CPU per operation (from /proc)
 * and the mean latency. It runs on twins of the fleet's service document and of one reporter's
 * record (same bytes, other ids), so the server's own documents are untouched; comparing a small
 * rollout's fleet with a large one's shows which round trips grow with the rollout.
 */

export interface RoundTripCost {
  name: string;
  meanMs: number;
  /** Database CPU per operation (ms); NaN without the local development database. */
  dbCpuMs: number;
  /** This process's CPU per operation (ms): the driver's work, both ways. */
  driverCpuMs: number;
}

/** `times` measured runs of each round trip, after `times / 2` unmeasured ones (JIT of the driver's and the database's paths). */
export async function measureRoundTrips (ctx: BenchContext, fleet: ReadyFleet, times: number): Promise<RoundTripCost[]> {
  const services = ctx.db.collection('services') as Collection<Document>;
  const reports = ctx.db.collection('reports') as Collection<Document>;
  const nodes = ctx.db.collection('nodes') as Collection<Document>;
  const r = fleet.reporters[Math.floor(fleet.reporters.length / 2)] as Reporter;
  const twinId = `${r.serviceId}~trips`;
  const service = await services.findOne({ _id: r.serviceId as never });
  const stored = await reports.findOne({ _id: rolloutRecordId(r.plan.rolloutId, reporterIdOf(r)) as never });
  if (!service || !stored) throw new Error('round trips: the fleet has no service document or record');
  const data = service['data'] as Document;
  await services.insertOne({ ...service, _id: twinId as never, data: { ...data, name: `${data['name'] as string}~trips` } });
  const recordId = `${String(stored['_id'])}~trips`;
  const { _id, ...record } = stored;
  await reports.insertOne({ ...record, _id: recordId as never, fence: `${recordId}@${record['version'] as number}` });
  const key = reporterKeyOf(reporterIdOf(r));
  const b = bucketOf(key);
  const buckets = ctx.db.collection('statusBuckets') as Collection<Document>;
  const bucket = await buckets.findOne({ _id: bucketId(r.plan.rolloutId, b) as never });
  if (!bucket) throw new Error('round trips: the reporter has no status bucket');
  const twinBucketId = `${String(bucket['_id'])}~trips`;
  await buckets.insertOne({ ...bucket, _id: twinBucketId as never });
  const path = `entries.${key}`;
  const current = { _id: twinId as never, 'rolloutStatus.rolloutId': r.plan.rolloutId };
  let version = record['version'] as number;
  // The bucket's version of the reporter's contribution (behind the record's when its last reports changed nothing).
  const held = (bucket['entries'] as Record<string, { v?: number }> | undefined)?.[key];
  let entryVersion = held?.v ?? version;
  let bucketVersion = bucket['v'] as number;
  let appliedVersion = (service['rolloutStatus'] as { buckets?: Record<string, { v: number }> } | undefined)?.buckets?.[`b${b}`]?.v;
  const ops: Array<[string, () => Promise<unknown>]> = [
    ['findOne service (report target: immutable flag, rollout id, policy, summary head, the sums of the reporter\'s bucket)', () =>
      services.findOne({ _id: twinId as never }, { projection: reportTargetOf(reporterIdOf(r)) })],
    ['find node owners (`_id` $in the reporter\'s nodes)', () =>
      nodes.find({ _id: { $in: r.nodes as never[] } }, { projection: { _id: 1, clusterId: 1, createdAt: 1 } }).toArray()],
    ['findOne the reporter\'s bucket (its contribution)', () =>
      buckets.findOne({ _id: twinBucketId as never }, { projection: { v: 1, [path]: 1 } })],
    ['findOne the reporter\'s record (without its deployments; only when another process wrote it last)',
      () => reports.findOne({ _id: recordId as never }, { projection: { deployments: 0, deploymentsJson: 0 } })],
    ['replaceOne the record (CAS on its fence)', async () => {
      const next = { ...record, version: version + 1, fence: `${recordId}@${version + 1}` };
      await reports.replaceOne({ _id: recordId as never, fence: `${recordId}@${version}` }, next);
      version++;
    }],
    ['findOneAndUpdate the bucket (the contribution guarded by its version, $inc the sums; only when the counts change)', async () => {
      const entry = { ...(record['entry'] as Document), reportedAt: Date.now() } as IImageRolloutReporterStatus;
      const updated = await buckets.findOneAndUpdate(
        { _id: twinBucketId as never, [`${path}.v`]: entryVersion },
        { $set: { [path]: contributionOf(entry, entryVersion + 1) }, $inc: { v: 1, 't.observed': 0 } },
        { returnDocument: 'after', projection: { v: 1, t: 1, m: 1 } },
      );
      entryVersion++;
      bucketVersion++;
      if (!updated) throw new Error('round trips: the bucket update matched nothing');
    }],
    ['findOneAndUpdate the service (the bucket\'s sums guarded by the version it holds, $inc seq, returns the status head; only when the counts change)',
      async () => {
        const field = `rolloutStatus.buckets.b${b}`;
        const updated = await services.findOneAndUpdate(
          { ...current, [`${field}.v`]: appliedVersion },
          { $set: { [field]: { v: bucketVersion + 1, c: [0, 0, 0, 0] } }, $max: { 'rolloutStatus.updatedAt': Date.now() }, $inc: { 'rolloutStatus.seq': 1 } },
          { returnDocument: 'after', projection: STATUS_HEAD },
        );
        appliedVersion = bucketVersion + 1;
        bucketVersion++;
        if (!updated) throw new Error('round trips: the service update matched nothing');
      }],
  ];
  const out: RoundTripCost[] = [];
  try {
    for (const [name, op] of ops) {
      for (let i = 0; i < times / 2; i++) await op();
      const db0 = ctx.probes.db?.read() ?? Number.NaN;
      const self0 = ctx.probes.self.read();
      const t0 = performance.now();
      for (let i = 0; i < times; i++) await op();
      const elapsed = performance.now() - t0;
      out.push({
        name,
        meanMs: elapsed / times,
        dbCpuMs: ((ctx.probes.db?.read() ?? Number.NaN) - db0) / times,
        driverCpuMs: (ctx.probes.self.read() - self0) / times,
      });
    }
  } finally {
    await services.deleteOne({ _id: twinId as never });
    await reports.deleteOne({ _id: recordId as never });
    await buckets.deleteOne({ _id: twinBucketId as never });
  }
  return out;
}
