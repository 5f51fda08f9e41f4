import { type Collection } from 'mongodb';
import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type {
  EntryWrite, EntryWriteResult, ReportTarget, StatusEvents, StatusSummaries, ServiceRolloutState, StatusPublication, StatusSnapshot, StatusState,
} from '../domain/ports/index.js';
import { remember } from '../domain/objects.js';
import { STATUS_BUCKETS, bucketDelta, bucketId, bucketOf, type BucketSums, type SummaryEntry } from '../domain/rolloutStatus.js';
import { coalesced } from './coalesce.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import {
  ServiceViews, asError, atStatusRevision, outboxOf, publishedBefore, pushEvent, rolloutState, stateOf, statusHead, type ServiceDocument,
} from './serviceDocument.js';
import { bucketKey, deltaInc, sumsOf, type BucketDocument } from './statusBuckets.js';
import { collections } from './indexPlan.js';

/** Plans kept per process for the report path (the rollouts reported on most recently). */
const PLANS_KEPT = 256;

/** Buckets whose sums in the service document a process remembers (a guess its guarded write checks). */
const APPLIED_KEPT = 8192;

/** Reporters' contributions a process remembers (as it last wrote or read them). */
const CONTRIBUTIONS_KEPT = 16_384;

/**
 * A reporter's contribution as this process last wrote or read it, and a bucket version from which on the
 * service includes it (`w`: the bucket's version its write made; read from the bucket: the bucket's version then).
 */
interface KnownContribution { entry: SummaryEntry, w: number }

/** Rounds a bucket's sums may take into the service document against the same bucket's other writers. */
const SYNC_ROUNDS = 32;

/** What writing a reporter's contribution into its bucket did. */
type BucketWrite = { kind: 'written', sums: BucketSums } | { kind: 'moved', stored?: SummaryEntry, sums?: BucketSums };

/** The current rollout's status summary (what reports change and reads compose) and the status stream. */
export class StatusStore implements StatusSummaries, StatusEvents {
  readonly collection: Collection<ServiceDocument>;
  private readonly buckets: Collection<BucketDocument>;
  private readonly views: ServiceViews;
  /** `bucketId` → the bucket's sums as this process last saw them in the service document (null: none there). */
  readonly #applied = new Map<string, BucketSums | null>();

  constructor (database: Database) {
    this.collection = database.db.collection(collections.services);
    this.buckets = database.db.collection(collections.statusBuckets);
    this.views = new ServiceViews(database);
  }

  /**
   * `<rolloutId>:<reporter key>` → its contribution as this process last wrote or read it. Safe to use
   * without reading the bucket: a contribution is only ever written as the one of a record version
   * (`contributionOf`), so whatever another process wrote since, a report compares the remembered
   * version with the record its own compare-and-swap proves current — a newer record, or one whose
   * contribution the bucket does not hold yet, does not match, and the report writes its delta.
   */
  readonly #contributions = new Map<string, KnownContribution>();

  #remember (id: string, sums: BucketSums | null): void {
    remember(this.#applied, id, sums, APPLIED_KEPT);
  }

  #know (rolloutId: string, key: string, known: KnownContribution | undefined): void {
    const id = `${rolloutId}:${key}`;
    if (known) remember(this.#contributions, id, known, CONTRIBUTIONS_KEPT);
    else this.#contributions.delete(id);
  }

  /**
   * The service with its composed status and each reporter's evidence (the rollout view). The reads
   * asked for in one turn of the event loop share one read per service (src/store/coalesce.ts): a
   * console many operators watch reads a large rollout once per turn, not once per viewer.
   */
  async findRolloutState (id: string): Promise<ServiceRolloutState | null> {
    return this.#rolloutStates(id);
  }

  readonly #rolloutStates = coalesced<string, ServiceRolloutState | null>(async (ids) => {
    const unique = [...new Set(ids)];
    // One service's failure is its readers' alone.
    const states = await Promise.all(unique.map(async (id) => [id, await this.#readRolloutState(id).catch((err: unknown) => asError(err))] as const));
    const byId = new Map(states);
    return ids.map((id) => byId.get(id) ?? null);
  });

  async #readRolloutState (id: string): Promise<ServiceRolloutState | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: rolloutState });
    if (!doc) return null;
    const plan = doc.data.imageDeployment;
    const lifecycle = plan && doc.rolloutStatus?.rolloutId === plan.rolloutId ? doc.rolloutStatus.lifecycle : undefined;
    const { service, evidence } = await this.views.composed(doc, true);
    return {
      service,
      evidence,
      statusRevision: doc.statusRevision ?? 0,
      automationHold: doc.automationHold,
      lifecycle,
      automationQueue: doc.automationQueue,
    };
  }

  /**
   * The plan of a rollout, as read for its reports. A plan never changes once written: a new plan
   * is a new rollout id (`applyRollout`), and the plan is a server-managed field. So a report
   * reads only the current rollout's id with the service and takes the plan (up to 4,096 target
   * nodes) from here, read once per process and rollout.
   */
  private readonly plans = new Map<string, IImmutableImageDeploymentPlan>();

  private async planOf (serviceId: string, rolloutId: string): Promise<IImmutableImageDeploymentPlan | undefined> {
    const cached = this.plans.get(rolloutId);
    if (cached) return cached;
    const doc = await this.collection.findOne({ _id: serviceId }, { projection: { 'data.imageDeployment': 1 } });
    const plan = doc?.data?.imageDeployment;
    if (plan?.rolloutId !== rolloutId) return plan;
    return remember(this.plans, rolloutId, plan, PLANS_KEPT);
  }

  /**
   * What a report needs of its service: the immutable flag, the current rollout's plan (read once
   * per process and rollout), its policy, the summary head with the sums of the reporter's bucket,
   * and the reporter's contribution (as this process remembers it, else from its bucket). The
   * reports that ask in the same turn of the event loop share one read by `_id` `$in`
   * (src/store/coalesce.ts), each reporter's bucket sums projected; the bucket reads likewise.
   */
  async findReportTarget (id: string, reporterKey?: string): Promise<ReportTarget | null> {
    const doc = await this.#reportTargetDocs({ id, reporterKey });
    if (!doc) return null;
    const data = doc.data;
    const rolloutId = data?.imageDeployment?.rolloutId;
    const plan = rolloutId === undefined ? undefined : await this.planOf(id, rolloutId);
    const target = { serviceId: doc._id, immutableImageRequired: data?.immutableImageRequired === true, plan, policy: data?.rolloutPolicy };
    // (The plan read on a miss may be a newer rollout's already: the summary read with the id is then not its.)
    const state = reporterKey !== undefined && plan && doc.rolloutStatus?.rolloutId === plan.rolloutId ? stateOf(doc) : null;
    if (!state || reporterKey === undefined || !plan) return target;
    const bucket = bucketOf(reporterKey);
    const bucketDocId = bucketId(plan.rolloutId, bucket);
    const applied = doc.rolloutStatus?.buckets?.[bucketKey(bucket)] ?? null;
    this.#remember(bucketDocId, applied);
    let known = this.#contributions.get(`${plan.rolloutId}:${reporterKey}`);
    if (!known) {
      const stored = await this.#bucketEntries({ id: bucketDocId, key: reporterKey });
      const entry = stored?.entries?.[reporterKey];
      known = entry ? { entry, w: stored?.v ?? 0 } : undefined;
      this.#know(plan.rolloutId, reporterKey, known);
    }
    // The contribution is held only once the service includes it: a bucket write whose second write
    // is pending (or was lost in a crash) is not, and the report writes its delta (which carries it).
    return { ...target, held: { state, entry: known && (applied?.v ?? 0) >= known.w ? known.entry : undefined } };
  }

  readonly #reportTargetDocs = coalesced<{ id: string, reporterKey?: string | undefined }, ServiceDocument | null>(async (calls) => {
    const keys = [...new Set(calls.flatMap((c) => (c.reporterKey === undefined ? [] : [c.reporterKey])))];
    const projection = {
      'data.immutableImageRequired': 1,
      'data.imageDeployment.rolloutId': 1,
      'data.rolloutPolicy': 1,
      ...(keys.length === 0 ? {} : statusHead),
      ...Object.fromEntries(keys.map((key) => [`rolloutStatus.buckets.${bucketKey(bucketOf(key))}`, 1])),
    };
    const ids = [...new Set(calls.map((c) => c.id))];
    const docs = await this.collection.find({ _id: { $in: ids } }, { projection }).toArray();
    const byId = new Map(docs.map((doc) => [doc._id, doc]));
    return calls.map((c) => byId.get(c.id) ?? null);
  });

  /** Reporters' contributions in their buckets: the reads of one turn share one `_id` `$in`, each reporter's contribution projected. */
  readonly #bucketEntries = coalesced<{ id: string, key: string }, BucketDocument | null>(async (calls) => {
    const projection = { v: 1, ...Object.fromEntries(calls.map((c) => [`entries.${c.key}`, 1])) };
    const ids = [...new Set(calls.map((c) => c.id))];
    const docs = await this.buckets.find({ _id: { $in: ids } }, { projection }).toArray();
    const byId = new Map(docs.map((doc) => [doc._id, doc]));
    return calls.map((c) => byId.get(c.id) ?? null);
  });

  /**
   * One reporter's contribution, in two writes: into its bucket (guarded by the contribution's
   * version, the bucket's sums moved by its delta in the same update), then the bucket's sums into
   * the service document (guarded by the bucket version the service holds, the totals moved by
   * the difference). Reporters of one rollout conflict only in the second write, and only with the
   * reporters of their bucket; a write that finds a later version of its bucket there is included
   * already. A crash between the two leaves the bucket ahead: the next write of the bucket, or the
   * retry of the report (`readStatusEntry`), brings the service up to it.
   */
  async applyStatusEntry (write: EntryWrite): Promise<EntryWriteResult> {
    const bucket = bucketOf(write.key);
    const written = await this.#writeContribution(write, bucketId(write.rolloutId, bucket));
    if (written.kind === 'moved') {
      // This record (or a later one of the reporter) may be in the bucket already, its writer stopped before the service.
      if (written.stored && written.sums && written.stored.v >= write.entry.v) {
        const caught = await this.#syncBucket(write.serviceId, write.rolloutId, bucket, written.sums, write.now);
        if (caught === 'not-current') return { kind: 'not-current' };
      }
      return { kind: 'version-moved', stored: written.stored };
    }
    write.afterBucket?.();
    const state = await this.#syncBucket(write.serviceId, write.rolloutId, bucket, written.sums, write.now);
    return state === 'not-current' ? { kind: 'not-current' } : { kind: 'applied', state };
  }

  /** The contribution into its bucket if the bucket holds `expectedVersion` of it (none: none yet, the bucket made if need be). */
  async #writeContribution (write: EntryWrite, id: string): Promise<BucketWrite> {
    const path = `entries.${write.key}`;
    const inc = { v: 1, ...deltaInc(write.delta, 't', 'm') };
    const first = write.expectedVersion === undefined;
    const filter = first ? { _id: id, [path]: { $exists: false } } : { _id: id, [`${path}.v`]: write.expectedVersion };
    for (let round = 0; round < 3; round++) {
      let doc: BucketDocument | null = null;
      try {
        doc = await this.buckets.findOneAndUpdate(
          filter,
          { $set: { [path]: write.entry }, $setOnInsert: { serviceId: write.serviceId, rolloutId: write.rolloutId }, $inc: inc },
          { upsert: first, returnDocument: 'after', projection: { v: 1, t: 1, m: 1 } }
        );
      } catch (err) {
        // Two first contributions to a new bucket: the other's insert won; this one updates it next round.
        if (!isDuplicateKeyError(err)) throw err;
      }
      if (doc) {
        const sums = sumsOf(doc);
        this.#know(write.rolloutId, write.key, { entry: write.entry, w: sums.v });
        return { kind: 'written', sums };
      }
      this.#know(write.rolloutId, write.key, undefined);
      const now = await this.buckets.findOne({ _id: id }, { projection: { v: 1, t: 1, m: 1, [path]: 1 } });
      const stored = now?.entries?.[write.key];
      if (stored !== undefined || !first) return { kind: 'moved', stored, sums: now ? sumsOf(now) : undefined };
    }
    throw new Error(`the status bucket ${id} kept being created concurrently`);
  }

  /**
   * The bucket's sums (`target`, as read or written) into the service document, unless it holds them or
   * later ones already: the state after, or 'not-current' when the service's summary is not the rollout's.
   */
  async #syncBucket (
    serviceId: string, rolloutId: string, bucket: number, target: BucketSums, now: number
  ): Promise<StatusState | 'not-current'> {
    const id = bucketId(rolloutId, bucket);
    const path = `rolloutStatus.buckets.${bucketKey(bucket)}`;
    for (let round = 0; round < SYNC_ROUNDS; round++) {
      let applied = this.#applied.get(id);
      if (applied === undefined) {
        const doc = await this.collection.findOne({ _id: serviceId }, { projection: { 'rolloutStatus.rolloutId': 1, [path]: 1 } });
        if (doc?.rolloutStatus?.rolloutId !== rolloutId) return 'not-current';
        applied = doc.rolloutStatus.buckets?.[bucketKey(bucket)] ?? null;
        this.#remember(id, applied);
      }
      if (applied && applied.v >= target.v) {
        // Included already (a later write of the bucket carried it).
        return (await this.readStatusState(serviceId, rolloutId)) ?? 'not-current';
      }
      const inc = { 'rolloutStatus.seq': 1, ...deltaInc(bucketDelta(applied ?? undefined, target), 'rolloutStatus.totals', 'rolloutStatus.mismatched') };
      const doc = await this.collection.findOneAndUpdate(
        { _id: serviceId, 'rolloutStatus.rolloutId': rolloutId, [`${path}.v`]: applied ? applied.v : { $exists: false } },
        // `$max`: reports of different reporters never conflict, and the one whose clock read came first may land last.
        { $set: { [path]: target }, $max: { 'rolloutStatus.updatedAt': now }, $inc: inc },
        { returnDocument: 'after', projection: statusHead }
      );
      const state = doc ? stateOf(doc) : null;
      if (state) {
        this.#remember(id, target);
        return state;
      }
      // Another writer of the bucket moved it meanwhile (or the rollout was replaced): look again.
      this.#applied.delete(id);
    }
    throw new Error(`the status bucket ${id} kept moving`);
  }

  async readStatusState (id: string, rolloutId: string): Promise<StatusState | null> {
    const doc = await this.collection.findOne({ _id: id, 'rolloutStatus.rolloutId': rolloutId }, { projection: statusHead });
    return doc ? stateOf(doc) : null;
  }

  /** The reporter's contribution in its bucket, the service brought up to that bucket first (a crash may have left it behind). */
  async readStatusEntry (id: string, rolloutId: string, key: string, now: number): Promise<{ current: boolean, stored?: SummaryEntry }> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { 'rolloutStatus.rolloutId': 1 } });
    if (doc?.rolloutStatus?.rolloutId !== rolloutId) return { current: false };
    const bucket = bucketOf(key);
    const stored = await this.buckets.findOne({ _id: bucketId(rolloutId, bucket) }, { projection: { v: 1, t: 1, m: 1, [`entries.${key}`]: 1 } });
    this.#know(rolloutId, key, undefined);
    if (!stored) return { current: true };
    this.#applied.delete(stored._id);
    const caught = await this.#syncBucket(id, rolloutId, bucket, sumsOf(stored), now);
    return caught === 'not-current' ? { current: false } : { current: true, stored: stored.entries?.[key] };
  }

  /**
   * The rollout's buckets that a crash left ahead of the service document (the bucket written, its
   * sums not yet in the service: fault point `after-report-bucket`), brought into it. A reporter's
   * next report or retry does this for its own bucket; this is for a reporter that never reports
   * again, whose last contribution would otherwise count only at its bucket's next write. Two reads
   * (the service's bucket versions, the buckets' heads by `_id`) and a write per lagging bucket;
   * answers how many were brought in.
   */
  async repairBuckets (id: string, rolloutId: string, now: number): Promise<number> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { 'rolloutStatus.rolloutId': 1, 'rolloutStatus.buckets': 1 } });
    if (doc?.rolloutStatus?.rolloutId !== rolloutId) return 0;
    const applied = doc.rolloutStatus.buckets ?? {};
    const ids = Array.from({ length: STATUS_BUCKETS }, (_, b) => bucketId(rolloutId, b));
    const heads = await this.buckets.find({ _id: { $in: ids } }, { projection: { v: 1, t: 1, m: 1 } }).toArray();
    let repaired = 0;
    for (const head of heads) {
      const bucket = ids.indexOf(head._id);
      const held = bucket < 0 ? undefined : applied[bucketKey(bucket)] ?? null;
      if (held === undefined || (held?.v ?? 0) >= (head.v ?? 0)) continue;
      // What the service holds was just read: the sync's guarded write starts from it.
      this.#remember(head._id, held);
      if (await this.#syncBucket(id, rolloutId, bucket, sumsOf(head), now) === 'not-current') break;
      repaired++;
    }
    return repaired;
  }

  /** A new event at the next revision, if the status is still at that revision and the summary still at the state's seq. */
  async publishStatus (p: StatusPublication): Promise<boolean> {
    const result = await this.collection.updateOne(
      {
        _id: p.serviceId,
        'rolloutStatus.rolloutId': p.rolloutId,
        'rolloutStatus.seq': p.seq,
        ...atStatusRevision(p.revision),
        ...publishedBefore(p.rolloutId, p.seq),
      },
      {
        $set: { statusRevision: p.revision + 1, statusPublished: { rolloutId: p.rolloutId, seq: p.seq, key: p.key } },
        $push: { ...pushEvent(p.event).$push, ...outboxOf([p.domainEvent]) },
      }
    );
    return result.matchedCount === 1;
  }

  /** The status events after `revision`, oldest first (SSE). */
  async statusEventsAfter (id: string, revision: number): Promise<StatusSnapshot | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { statusRevision: 1, statusEvents: 1 } });
    if (!doc) return null;
    return { revision: doc.statusRevision ?? 0, events: (doc.statusEvents ?? []).filter((e) => e.revision > revision) };
  }
}
