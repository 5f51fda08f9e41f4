import type { Collection, Db } from 'mongodb';
import type { IImageRolloutReporterStatus, IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../contracts/index.js';
import { contractLimits } from '../contracts/index.js';
import type { ReportedDeployment } from '../contracts/reports.js';
import { initialLifecycle } from '../domain/lifecycle.js';
import { rolloutRecordId, serviceRecordId } from '../domain/reports.js';
import {
  bucketId, bucketOf, contributionOf, emptySummary, entryDelta, reporterKeyOf,
  type MismatchCounts, type StatusSummary, type StatusTotals, type SummaryEntry, zeroTotals,
} from '../domain/rolloutStatus.js';
import { isDuplicateKeyError } from './driverErrors.js';
import { collections } from './indexPlan.js';
import type { ReleaseDocument } from './releaseStore.js';
import type { ReportDocument } from './reportStore.js';
import type { ServiceDocument } from './serviceDocument.js';
import { bucketKey, sumsOf, type BucketDocument } from './statusBuckets.js';

/**
 * Start-up migrations: each rewrites the documents that earlier versions of this service wrote in
 * an earlier shape to the current one, so that the read and report paths handle one shape only
 * (docs/architecture.md "Migrations"). Each is idempotent (it selects only documents still in the
 * earlier shape, and every rewrite is a compare-and-swap on what it read) and is recorded in the
 * `migrations` collection, one document per version (`_id` = version).
 *
 * Concurrent starts: a process claims a version by inserting its record (`state: 'running'`, a
 * lease); the unique `_id` lets one process in, the others wait until the record says `applied`.
 * A claim whose lease ran out (its process died mid-way) is taken over: safe, because every
 * migration is idempotent. The holder renews its lease while it runs.
 */
export interface Migration {
  version: number;
  name: string;
  /** Rewrites the documents of the earlier shape; answers how many it rewrote. */
  apply(db: Db, now: number): Promise<number>;
}

/** A version's record in the `migrations` collection. */
export interface MigrationDocument {
  _id: number;
  name: string;
  state: 'running' | 'applied';
  /** The process that holds (or held) the claim. */
  owner: string;
  /** While running: the claim is the owner's until then (renewed while it runs). */
  leaseUntil: number;
  /** How many times the migration was started (more than one: a claim was taken over). */
  runs: number;
  appliedAt?: number;
  /** Documents rewritten. */
  migrated?: number;
}

export const MIGRATIONS_COLLECTION = 'migrations';

/** A report record as written before fences, or before `deploymentsJson` (the deployments as nested documents). */
interface EarlierReportDocument extends Omit<ReportDocument, 'fence' | 'deploymentsJson'> {
  fence?: string;
  deploymentsJson?: string;
  deployments?: ReportedDeployment[];
}

/** Records without a fence, or with the deployments as nested documents: fenced (`<_id>@<version>`), the deployments as one JSON text. */
async function fenceReportRecords (db: Db): Promise<number> {
  const reports: Collection<EarlierReportDocument> = db.collection(collections.reports);
  const earlier = reports.find({ $or: [{ fence: { $exists: false } }, { deployments: { $exists: true } }] }, { projection: { version: 1, deployments: 1 } });
  let migrated = 0;
  for await (const doc of earlier) {
    const set = { fence: `${doc._id}@${doc.version}`, ...(doc.deployments === undefined ? {} : { deploymentsJson: JSON.stringify(doc.deployments) }) };
    const result = await reports.updateOne({ _id: doc._id, version: doc.version }, { $set: set, $unset: { deployments: '' } });
    migrated += result.modifiedCount;
  }
  return migrated;
}

/** A summary entry as written before entries were contributions: the reporter's whole entry and its record's version. */
interface EarlierSummaryEntry { entry: IImageRolloutReporterStatus, version: number }

/** Summary entries of the earlier format (`{ entry, version }`): rewritten as contributions (`{ v, c, m }`), the sums unchanged. */
async function contributionEntries (db: Db): Promise<number> {
  const services: Collection<ServiceDocument> = db.collection(collections.services);
  const withSummary = services.find({ 'rolloutStatus.entries': { $exists: true } }, { projection: { 'rolloutStatus.entries': 1 } });
  let migrated = 0;
  for await (const doc of withSummary) {
    const entries = (doc.rolloutStatus?.entries ?? {}) as Record<string, SummaryEntry | EarlierSummaryEntry>;
    const earlier = Object.entries(entries).flatMap(([key, stored]) => ('entry' in stored ? [[key, stored] as const] : []));
    if (earlier.length === 0) continue;
    const filter = Object.fromEntries(earlier.map(([key, stored]) => [`rolloutStatus.entries.${key}.version`, stored.version]));
    const set = Object.fromEntries(earlier.map(([key, stored]) => [`rolloutStatus.entries.${key}`, contributionOf(stored.entry, stored.version)]));
    migrated += (await services.updateOne({ _id: doc._id, ...filter }, { $set: set })).modifiedCount;
  }
  return migrated;
}

/**
 * A plan written before status summaries existed (its status stored whole in `data.imageRolloutStatus`):
 * its summary, made from the entries of its reporters' records (the stored status's entry where a
 * record has none). A reporter the stored status names without a record is not counted: its next
 * report counts it (as the report path did for such a plan).
 */
async function summariesOfEarlierPlans (db: Db, now: number): Promise<number> {
  const services: Collection<ServiceDocument> = db.collection(collections.services);
  const projection = { 'data.imageDeployment': 1, 'data.imageRolloutStatus': 1, 'rolloutStatus.rolloutId': 1 };
  const planned = services.find({ 'data.imageDeployment': { $exists: true } }, { projection });
  let migrated = 0;
  for await (const doc of planned) {
    const plan = doc.data.imageDeployment;
    if (!plan || doc.rolloutStatus?.rolloutId === plan.rolloutId) continue;
    const summary = await summaryFromRecords(db, plan, doc.data.imageRolloutStatus, now);
    const result = await services.updateOne(
      { _id: doc._id, 'data.imageDeployment.rolloutId': plan.rolloutId, 'rolloutStatus.rolloutId': { $ne: plan.rolloutId } },
      { $set: { rolloutStatus: summary }, $unset: { 'data.imageRolloutStatus': '' } }
    );
    migrated += result.modifiedCount;
  }
  return migrated;
}

/** The summary of a plan: each counted reporter's contribution at its record's version, summed (the delta of each from none). */
async function summaryFromRecords (db: Db, plan: IImmutableImageDeploymentPlan, stored: IImageRolloutStatus | undefined, now: number): Promise<StatusSummary> {
  const reports: Collection<ReportDocument> = db.collection(collections.reports);
  const reporters = stored?.rolloutId === plan.rolloutId ? stored.reporters ?? [] : [];
  const updatedAt = stored?.rolloutId === plan.rolloutId ? stored.updatedAt ?? now : now;
  const entries: Record<string, SummaryEntry> = {};
  const summary: StatusSummary = { ...emptySummary(plan, updatedAt), totals: zeroTotals(), entries };
  for (const reporter of reporters) {
    const id = rolloutRecordId(plan.rolloutId, reporter.reporterId);
    const record = await reports.findOne({ _id: id }, { projection: { version: 1, entry: 1 } });
    if (!record) continue;
    if (!record.entry) await reports.updateOne({ _id: id, version: record.version, entry: { $exists: false } }, { $set: { entry: reporter } });
    const contribution = contributionOf(record.entry ?? reporter, record.version);
    const delta = entryDelta(undefined, contribution);
    entries[reporterKeyOf(reporter.reporterId)] = contribution;
    for (const [name, value] of Object.entries(delta.totals)) summary.totals[name as keyof typeof summary.totals] += value;
    for (const [reason, value] of Object.entries(delta.mismatched)) {
      const key = reason as keyof typeof summary.mismatched;
      summary.mismatched[key] = (summary.mismatched[key] ?? 0) + (value ?? 0);
    }
  }
  return summary;
}

/** Summaries written before lifecycles existed: their lifecycle started at the summary's last change (as the sweeper started it). */
async function startLifecycles (db: Db): Promise<number> {
  const services: Collection<ServiceDocument> = db.collection(collections.services);
  const filter = { rolloutStatus: { $exists: true }, 'rolloutStatus.lifecycle': { $exists: false } };
  const without = services.find(filter, { projection: { 'rolloutStatus.updatedAt': 1 } });
  let migrated = 0;
  for await (const doc of without) {
    const at = doc.rolloutStatus?.updatedAt ?? 0;
    const result = await services.updateOne({ _id: doc._id, ...filter }, { $set: { 'rolloutStatus.lifecycle': initialLifecycle(at) } });
    migrated += result.modifiedCount;
  }
  return migrated;
}

/**
 * Service records of the earlier per-reporter kind (`service:<serviceId>:<reporterId>`): the newest
 * of a cluster that has no record of its own becomes the cluster's record (`service:<serviceId>:<clusterId>`),
 * naming the per-reporter one it replaces, which is removed then (a crash in between leaves both; the
 * migration, run again before any request reads, removes the one the cluster's record names). The
 * cluster's other per-reporter records, if any, stay as they were: read as they are, as the report
 * path left them.
 */
async function clusterServiceRecords (db: Db): Promise<number> {
  const reports: Collection<ReportDocument & { replaces?: string }> = db.collection(collections.reports);
  const projection = { _id: 1, serviceId: 1, clusterId: 1, replaces: 1, 'position.receivedAt': 1 };
  const unscoped = await reports.find({ rolloutId: { $exists: false } }, { projection }).toArray();
  const byId = new Map(unscoped.map((r) => [r._id, r]));
  const newest = new Map<string, (typeof unscoped)[number]>();
  for (const record of unscoped) {
    const id = serviceRecordId(record.serviceId, record.clusterId);
    if (record._id === id) continue;
    // A run a crash interrupted wrote the cluster's record naming this one and did not remove it yet.
    if (byId.get(id)?.replaces === record._id) await reports.deleteOne({ _id: record._id });
    if (byId.has(id)) continue;
    const kept = newest.get(id);
    if (!kept || kept.position.receivedAt < record.position.receivedAt) newest.set(id, record);
  }
  let migrated = 0;
  for (const [id, earlier] of newest) {
    const whole = await reports.findOne({ _id: earlier._id });
    if (!whole) continue;
    const { _id: earlierId, fence: _fence, ...rest } = whole;
    // `replaces` names the record this one replaces until it is removed (the next report rewrites the record without it).
    const inserted = await reports.insertOne({ ...rest, _id: id, fence: `${id}@${rest.version}`, replaces: earlierId }).then(() => true, (err: unknown) => {
      if ((err as { code?: unknown }).code === 11000) return false;
      throw err;
    });
    await reports.deleteOne({ _id: earlierId });
    if (inserted) migrated++;
  }
  return migrated;
}

/** Releases holding more tags than the contract's limit (written before tags were bounded): the newest within the limit kept. */
async function boundTags (db: Db): Promise<number> {
  const releases: Collection<ReleaseDocument> = db.collection(collections.releases);
  const limit = contractLimits.observedTags;
  const over = releases.find({ [`data.observedTags.${limit}`]: { $exists: true } }, { projection: { 'data.observedTags': 1 } });
  let migrated = 0;
  for await (const doc of over) {
    const kept = doc.data.observedTags.slice(-limit);
    migrated += (await releases.updateOne({ _id: doc._id, 'data.observedTags': doc.data.observedTags }, { $set: { 'data.observedTags': kept } })).modifiedCount;
  }
  return migrated;
}

/**
 * Summaries that hold a contribution per reporter (`rolloutStatus.entries`, in the service document
 * every report rewrote): the contributions moved into the rollout's bucket documents, the service
 * keeping each bucket's sums (./statusBuckets.ts). A bucket is inserted only where none is (one left
 * by a run that stopped half-way holds the same contributions: entries are never written now); the
 * service is rewritten only at the summary state read (its seq), its totals unchanged.
 */
async function bucketSummaries (db: Db): Promise<number> {
  const services: Collection<ServiceDocument> = db.collection(collections.services);
  const buckets: Collection<BucketDocument> = db.collection(collections.statusBuckets);
  const projection = { 'rolloutStatus.rolloutId': 1, 'rolloutStatus.seq': 1, 'rolloutStatus.entries': 1 };
  const withEntries = services.find({ 'rolloutStatus.entries': { $exists: true } }, { projection });
  let migrated = 0;
  for await (const doc of withEntries) {
    const summary = doc.rolloutStatus;
    if (!summary) continue;
    const grouped = new Map<number, BucketDocument>();
    for (const [key, entry] of Object.entries(summary.entries ?? {})) {
      const bucket = bucketOf(key);
      const made: BucketDocument = { _id: bucketId(summary.rolloutId, bucket), serviceId: doc._id, rolloutId: summary.rolloutId, v: 1 };
      const held = grouped.get(bucket) ?? made;
      const delta = entryDelta(undefined, entry);
      const t = { ...zeroTotals(), ...held.t };
      held.t = Object.fromEntries(Object.entries(t).map(([name, n]) => [name, n + delta.totals[name as keyof StatusTotals]]));
      const m: MismatchCounts = { ...held.m };
      for (const [reason, n] of Object.entries(delta.mismatched) as Array<[keyof MismatchCounts, number]>) m[reason] = (m[reason] ?? 0) + n;
      held.m = m;
      held.entries = { ...held.entries, [key]: entry };
      grouped.set(bucket, held);
    }
    for (const { _id, ...bucket } of grouped.values()) await buckets.updateOne({ _id }, { $setOnInsert: bucket }, { upsert: true });
    const set = Object.fromEntries([...grouped].map(([bucket, held]) => [`rolloutStatus.buckets.${bucketKey(bucket)}`, sumsOf(held)]));
    const result = await services.updateOne(
      { _id: doc._id, 'rolloutStatus.rolloutId': summary.rolloutId, 'rolloutStatus.seq': summary.seq, 'rolloutStatus.entries': { $exists: true } },
      { $set: grouped.size === 0 ? { 'rolloutStatus.buckets': {} } : set, $unset: { 'rolloutStatus.entries': '' } }
    );
    migrated += result.modifiedCount;
  }
  return migrated;
}

/**
 * The migrations, in the order they run (ascending versions). To add one: a new version at the
 * end, whose `apply` selects only documents still in the earlier shape and rewrites each with a
 * compare-and-swap on what it read (it may run again after a crash, or concurrently after a lease
 * ran out); then remove the read path's branch for that shape.
 */
export const migrations: readonly Migration[] = [
  { version: 1, name: 'report records fenced, deployments as one JSON text', apply: fenceReportRecords },
  { version: 2, name: 'summary entries as contributions', apply: contributionEntries },
  { version: 3, name: 'status summaries of plans written before summaries', apply: summariesOfEarlierPlans },
  { version: 4, name: 'lifecycles of summaries written before lifecycles', apply: startLifecycles },
  { version: 5, name: 'service records per cluster', apply: clusterServiceRecords },
  { version: 6, name: 'release tags within the contract limit', apply: boundTags },
  { version: 7, name: 'status summaries in buckets, not an entry per reporter', apply: bucketSummaries },
];

/** A migration this process applied: what `runMigrations` answers (the start-up log line counts them). */
export interface AppliedMigration { version: number, name: string, migrated: number }

export interface MigrationOptions {
  /** This process (the claim's owner). */
  owner: string;
  /** How long a claim holds without renewal (renewed every third of it while the migration runs); default 60 s. */
  leaseMs?: number;
  /** How often a process waiting for another's claim looks again; default 200 ms. */
  pollMs?: number;
  now?: () => number;
  /** The migrations to run; default `migrations` (tests pass their own). */
  list?: readonly Migration[];
}

type Claim = 'claimed' | 'applied' | 'held';

/**
 * Runs every migration not yet recorded as applied, in version order: each claimed by one process
 * at a time, the others waiting for its record. Answers the ones this process applied.
 */
export async function runMigrations (db: Db, options: MigrationOptions): Promise<AppliedMigration[]> {
  const records: Collection<MigrationDocument> = db.collection(MIGRATIONS_COLLECTION);
  const applied: AppliedMigration[] = [];
  for (const migration of options.list ?? migrations) {
    for (;;) {
      const claim = await claimVersion(records, migration, options);
      if (claim === 'applied') break;
      if (claim === 'claimed') {
        applied.push(await applyClaimed(db, records, migration, options));
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
    }
  }
  return applied;
}

/** Claims a version: its record inserted (the unique `_id` lets one process in), or taken over when its holder's lease ran out. */
async function claimVersion (records: Collection<MigrationDocument>, migration: Migration, options: MigrationOptions): Promise<Claim> {
  const at = (options.now ?? Date.now)();
  const leaseUntil = at + (options.leaseMs ?? 60_000);
  try {
    await records.insertOne({ _id: migration.version, name: migration.name, state: 'running', owner: options.owner, leaseUntil, runs: 1 });
    return 'claimed';
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err;
  }
  const held = await records.findOne({ _id: migration.version });
  if (!held) return 'held';
  if (held.state === 'applied') return 'applied';
  if (held.leaseUntil > at) return 'held';
  // Its holder stopped renewing (died mid-way): taken over, safe because every migration is idempotent.
  const taken = await records.updateOne(
    { _id: migration.version, state: 'running', owner: held.owner, leaseUntil: held.leaseUntil },
    { $set: { owner: options.owner, leaseUntil }, $inc: { runs: 1 } }
  );
  return taken.modifiedCount === 1 ? 'claimed' : 'held';
}

/** Applies a claimed migration, renewing the lease meanwhile, and records it applied. */
async function applyClaimed (db: Db, records: Collection<MigrationDocument>, migration: Migration, options: MigrationOptions): Promise<AppliedMigration> {
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? 60_000;
  const mine = { _id: migration.version, owner: options.owner, state: 'running' as const };
  const renewal = setInterval(() => {
    records.updateOne(mine, { $set: { leaseUntil: now() + leaseMs } }).catch(() => undefined);
  }, Math.max(10, Math.floor(leaseMs / 3)));
  renewal.unref();
  try {
    const migrated = await migration.apply(db, now());
    // (Taken over meanwhile, the record is the other process's to write: both rewrote the same documents.)
    await records.updateOne(mine, { $set: { state: 'applied', appliedAt: now(), migrated } });
    return { version: migration.version, name: migration.name, migrated };
  } finally {
    clearInterval(renewal);
  }
}
