import { type Collection } from 'mongodb';
import type {
  IImageRolloutReporterStatus, IImmutableImageDeploymentPlan, IService, IServiceData, ServiceSummary, TServiceWritableData,
} from '../contracts/index.js';
import {
  initialLifecycle, VERIFIED_RELEASES_KEPT,
  type DeadlineDecision, type FailureMilestone, type FollowUp, type QueuedPromotion, type VerifiedRelease,
} from '../domain/lifecycle.js';
import type { DomainEvent } from '../domain/events.js';
import type {
  ApplyRolloutResult, DeploymentScope, EntryWrite, EntryWriteResult, InsertServiceResult, LifecycleTarget, LifecycleView, MilestoneWrite, QueueResult,
  ReplaceServiceResult, ReportTarget, ServiceRepository, ServiceRolloutState, ServiceWithHold, StatusPublication, StatusSnapshot, StatusState,
} from '../domain/ports/index.js';
import { rolloutApplication, type EndedRollout, type RolloutApplication } from '../domain/rolloutApplication.js';
import type { AutomationHold, RolloutRecord } from '../domain/rollouts.js';
import type { ReporterEvidence } from '../domain/rolloutView.js';
import { pick } from '../domain/objects.js';
import { rolloutRecordId } from '../domain/reports.js';
import {
  aggregateOf, composeStatus, contributionOf, emptySummary, replicaCountKeys, reporterIdOfKey, STATUS_EVENTS_KEPT,
  type RolloutAggregate, type StatusEvent, type StatusSummary, type StatusTotals, type SummaryEntry,
} from '../domain/rolloutStatus.js';
import { writableServiceDataFields } from '../domain/services.js';
import { coalesced } from './coalesce.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';
import type { ReportDocument } from './reportStore.js';

export interface ServiceDocument {
  _id: string;
  data: IServiceData;
  /** Set by a manual rollback; automatic promotion stays off until an explicit promotion clears it. */
  automationHold?: AutomationHold;
  /**
   * The current rollout's status summary: sums, mismatch counts and every reporter's entry, each
   * report changing only its own entry and the sums by its delta (`data.imageRolloutStatus` is
   * composed from it on read).
   */
  rolloutStatus?: StatusSummary;
  /** +1 on every status event: the compare-and-swap token of the event log (the `id` of SSE events). */
  statusRevision?: number;
  /** The last status changes, oldest first (what the SSE stream replays). */
  statusEvents?: StatusEvent[];
  /** The summary state the last status event describes. */
  statusPublished?: { rolloutId: string, seq: number, key: string };
  /** The latest rollouts that succeeded, oldest first (at most VERIFIED_RELEASES_KEPT): where an abort returns to. */
  verifiedReleases?: VerifiedRelease[];
  /** The newest push waiting for the current rollout to settle before it promotes automatically. */
  automationQueue?: QueuedPromotion;
  /**
   * Domain events recorded with the change they describe (in the same update), not yet in the log
   * (`events`); `seq` once the relay has claimed their place there (src/store/eventLogStore.ts).
   */
  outbox?: DomainEvent[];
  /** The last seq claimed in the service's event log. */
  eventSeq?: number;
  /** The rollout the current one replaced, with its final milestones (the history copies them). */
  endedRollout?: EndedRollout;
  createdAt: number;
  updatedAt: number;
}

/** The compare-and-swap filter on a service's rollout generation (0 = no plan yet). */
const atGeneration = (id: string, generation: number): Record<string, unknown> =>
  generation === 0
    ? { _id: id, 'data.imageDeployment': { $exists: false } }
    : { _id: id, 'data.imageDeployment.rolloutGeneration': generation };

/** Compare-and-swap on the status revision (absent until the first change). */
const atStatusRevision = (revision: number): Record<string, unknown> =>
  revision === 0 ? { statusRevision: { $exists: false } } : { statusRevision: revision };

/** Appends a status event to the bounded change log. */
const pushEvent = (event: StatusEvent) => ({ $push: { statusEvents: { $each: [event], $slice: -STATUS_EVENTS_KEPT } } });

/** Records events in the outbox, in order, in the update that makes the change they describe. */
const outboxOf = (events: readonly DomainEvent[]) => ({ outbox: { $each: [...events] } });

/** What a replacement reads of the service: the plan, the summary head (never the entries), the revision, the rollout it last ended. */
const replacementHead = {
  statusRevision: 1,
  'data.imageDeployment': 1,
  ...Object.fromEntries(['rolloutId', 'totals', 'mismatched', 'seq', 'updatedAt', 'lifecycle'].map((field) => [`rolloutStatus.${field}`, 1])),
  endedRollout: 1,
} as const;

/** The update a rollout application makes (src/domain/rolloutApplication.ts). */
function applicationUpdate (a: RolloutApplication, now: number) {
  const set: Record<string, unknown> = {
    'data.immutableImageRequired': true,
    'data.imageDeployment': a.plan,
    rolloutStatus: a.summary,
    statusPublished: a.published,
    statusRevision: a.statusRevision,
    updatedAt: now,
  };
  const unset: Record<string, ''> = { 'data.imageRolloutStatus': '', rolloutEvidence: '' };
  if (a.ended) set['endedRollout'] = a.ended;
  if (a.hold === 'clear') unset['automationHold'] = '';
  else if (a.hold) set['automationHold'] = a.hold;
  if (a.clearQueue) unset['automationQueue'] = '';
  const push: Record<string, unknown> = { ...pushEvent(a.statusEvent).$push, ...outboxOf(a.events) };
  if (a.verified) push['verifiedReleases'] = { $each: [a.verified], $slice: -VERIFIED_RELEASES_KEPT };
  return { $set: set, $unset: unset, $push: push };
}

/** Published states of another rollout, or of this one before `seq`. */
const publishedBefore = (rolloutId: string, seq: number) =>
  ({ $or: [{ 'statusPublished.rolloutId': { $ne: rolloutId } }, { 'statusPublished.seq': { $lt: seq } }] });

/**
 * Reads fetch only the fields their caller uses: the status history (`statusEvents`, up to
 * STATUS_EVENTS_KEPT entries, only the SSE stream reads it) and the per-replica evidence can be
 * larger than the rest of the document, and every report, promotion and listing reads a service.
 */
const summaryHead = ['rolloutId', 'totals', 'mismatched', 'seq', 'updatedAt', 'lifecycle'].map((field) => [`rolloutStatus.${field}`, 1] as const);
const statusHead = { ...Object.fromEntries(summaryHead), statusRevision: 1, statusPublished: 1 };
const serviceWithStatus = { data: 1, rolloutStatus: 1 } as const;
const serviceWithHold = { data: 1, automationHold: 1, verifiedReleases: 1 } as const;
const rolloutState = { data: 1, rolloutStatus: 1, statusRevision: 1, automationHold: 1, automationQueue: 1 } as const;

/** A summary entry as written before entries were contributions (`{ entry, version }`), read as one. */
interface LegacySummaryEntry { entry: IImageRolloutReporterStatus, version: number }

const contributionIn = (stored: SummaryEntry | LegacySummaryEntry | undefined): SummaryEntry | undefined =>
  stored && 'entry' in stored ? contributionOf(stored.entry, stored.version) : stored;

const stateOf = (doc: ServiceDocument): StatusState | null => {
  const summary = doc.rolloutStatus;
  return summary ? { summary, statusRevision: doc.statusRevision ?? 0, published: doc.statusPublished } : null;
};

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** The service that holds the name (a lost id can be found again from the `service-already-exists` answer). */
async function nameTaken (collection: Collection<ServiceDocument>, name: string): Promise<{ kind: 'name-taken', serviceId?: string }> {
  const holder = await collection.findOne({ 'data.name': name }, { projection: { _id: 1 } });
  return { kind: 'name-taken', serviceId: holder?._id };
}

/** What a service listing shows of each service: never the reporters list or the environment. */
const summaryProjection = {
  'data.name': 1,
  'data.imageDeployment': 1,
  ...Object.fromEntries(summaryHead),
  automationHold: 1,
};

/** A listing row: the plan in brief and the aggregate of its summary (never the reporters list). */
const toSummary = (doc: ServiceDocument): ServiceSummary => {
  const plan = doc.data.imageDeployment;
  const summary = doc.rolloutStatus;
  const aggregate = plan && summary?.rolloutId === plan.rolloutId ? aggregateOf(plan, summary) : undefined;
  return {
    id: doc._id,
    name: doc.data.name,
    rollout: plan ? { ...rolloutSummaryOf(plan), ...(aggregate ? statusSummaryOf(aggregate) : {}) } : undefined,
    automationHold: doc.automationHold,
  };
};

const rolloutSummaryOf = (plan: NonNullable<IServiceData['imageDeployment']>) =>
  pick(plan, ['rolloutId', 'rolloutGeneration', 'mode', 'releaseId', 'requestedDigest']);

const statusSummaryOf = (status: RolloutAggregate) => pick(status, ['status', ...replicaCountKeys, 'updatedAt']);

const LIFECYCLE = 'rolloutStatus.lifecycle';

/** Plans kept per process for the report path (the rollouts reported on most recently). */
const PLANS_KEPT = 256;

/** Lifecycle writes apply to the current rollout's summary only. */
const currentRollout = (target: LifecycleTarget) => ({ _id: target.serviceId, 'rolloutStatus.rolloutId': target.rolloutId });

/** What lifecycle control reads: never the entries (every reporter's) or the status events. */
const lifecycleProjection = {
  'data.imageDeployment': 1,
  'data.rolloutPolicy': 1,
  ...statusHead,
  automationHold: 1,
  automationQueue: 1,
  verifiedReleases: 1,
} as const;

function lifecycleViewOf (doc: ServiceDocument): LifecycleView {
  const plan = doc.data?.imageDeployment;
  const state = stateOf(doc);
  return {
    serviceId: doc._id,
    plan,
    policy: doc.data?.rolloutPolicy,
    state: plan && state?.summary.rolloutId === plan.rolloutId ? state : undefined,
    automationHold: doc.automationHold,
    automationQueue: doc.automationQueue,
    verifiedReleases: doc.verifiedReleases ?? [],
  };
}

/** The reporters a status summary counts (one entry each). */
const countedReporters = (summary: StatusSummary): string[] => Object.keys(summary.entries ?? {}).map(reporterIdOfKey);

export class ServiceStore implements ServiceRepository {
  /** The report records, read for the reporters' entries of a full status. */
  private readonly reports: Collection<ReportDocument>;

  constructor (database: Database, readonly collection: Collection<ServiceDocument> = database.db.collection(collections.services)) {
    this.reports = database.db.collection(collections.reports);
  }

  /**
   * The service as the API shows it: `data.imageRolloutStatus` composed from the summary of the
   * current rollout and the entries in the report records of the reporters it counts (read by
   * `_id` `$in`, the entries only); a document written before summaries existed keeps the status
   * it stored.
   */
  private async toService (doc: ServiceDocument): Promise<IService> {
    return (await this.composed(doc, false)).service;
  }

  /** The service (as `toService`) and, with `withEvidence`, the current rollout's per-replica evidence from the same read of the records. */
  private async composed (doc: ServiceDocument, withEvidence: boolean): Promise<{ service: IService, evidence: ReporterEvidence[] }> {
    const { imageRolloutStatus: stored, ...data } = doc.data;
    const plan = data.imageDeployment;
    const summary = doc.rolloutStatus;
    let imageRolloutStatus = stored;
    let evidence: ReporterEvidence[] = [];
    if (plan && summary?.rolloutId === plan.rolloutId) {
      const records = await this.recordsOf(plan.rolloutId, summary, withEvidence);
      imageRolloutStatus = composeStatus(plan, summary, records.flatMap((r) => (r.entry ? [r.entry] : [])));
      if (withEvidence) {
        evidence = records.map((r) => ({ reporterId: r.reporterId, rolloutId: r.rolloutId ?? '', receivedAt: r.position.receivedAt, replicas: r.replicas }));
      }
    }
    return { service: { id: doc._id, data: imageRolloutStatus ? { ...data, imageRolloutStatus } : data }, evidence };
  }

  /** The report records of the reporters a summary counts (by `_id` `$in`): their entries, and their evidence if asked for; never their deployments. */
  private async recordsOf (rolloutId: string, summary: StatusSummary, withEvidence: boolean): Promise<ReportDocument[]> {
    const ids = countedReporters(summary).map((reporterId) => rolloutRecordId(rolloutId, reporterId));
    if (ids.length === 0) return [];
    const projection = withEvidence ? { entry: 1, reporterId: 1, rolloutId: 1, 'position.receivedAt': 1, replicas: 1 } : { entry: 1 };
    return this.reports.find({ _id: { $in: ids } }, { projection }).toArray();
  }

  async insert (service: IService, now: number): Promise<InsertServiceResult> {
    try {
      await this.collection.insertOne({ _id: service.id, data: service.data, createdAt: now, updatedAt: now });
      return { kind: 'inserted' };
    } catch (err) {
      if (isDuplicateKeyError(err)) return nameTaken(this.collection, service.data.name);
      throw err;
    }
  }

  async findById (id: string): Promise<IService | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: serviceWithStatus });
    return doc ? this.toService(doc) : null;
  }

  /** Services sorted by name (the unique name index), after `afterName`; `name`: only that one. */
  async list (query: { name?: string, afterName?: string, limit: number }): Promise<ServiceSummary[]> {
    // A name filter and a cursor together: the one service of that name, if it comes after the cursor.
    const filter = query.name !== undefined
      ? (query.afterName !== undefined && query.name <= query.afterName ? { _id: { $in: [] as string[] } } : { 'data.name': query.name })
      : query.afterName !== undefined ? { 'data.name': { $gt: query.afterName } } : {};
    const docs = await this.collection.find(filter, { projection: summaryProjection }).sort({ 'data.name': 1 }).limit(query.limit).toArray();
    return docs.map(toSummary);
  }

  async exists (id: string): Promise<boolean> {
    return (await this.collection.findOne({ _id: id }, { projection: { _id: 1 } })) !== null;
  }

  /** The service for planning a rollout: its data (without the status, which a new plan resets) and its hold. */
  async findWithHold (id: string): Promise<ServiceWithHold | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: serviceWithHold });
    if (!doc) return null;
    const { imageRolloutStatus: _status, ...data } = doc.data;
    return { service: { id: doc._id, data }, automationHold: doc.automationHold, verifiedReleases: doc.verifiedReleases ?? [] };
  }

  async findServiceView (id: string): Promise<ServiceWithHold | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { ...serviceWithStatus, automationHold: 1, verifiedReleases: 1 } });
    return doc ? { service: await this.toService(doc), automationHold: doc.automationHold, verifiedReleases: doc.verifiedReleases ?? [] } : null;
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
    const { service, evidence } = await this.composed(doc, true);
    return {
      service,
      evidence,
      statusRevision: doc.statusRevision ?? 0,
      automationHold: doc.automationHold,
      lifecycle,
      automationQueue: doc.automationQueue,
    };
  }

  async findDeploymentScope (id: string): Promise<DeploymentScope | null> {
    const doc = await this.collection.findOne({ _id: id }, {
      projection: {
        'data.immutableImageRequired': 1,
        'data.imageDeployment.rolloutId': 1,
        'rolloutStatus.rolloutId': 1,
        'rolloutStatus.entries': 1,
        // A document written before summaries existed: its stored status names the reporters.
        'data.imageRolloutStatus.rolloutId': 1,
        'data.imageRolloutStatus.reporters.reporterId': 1,
      },
    });
    if (!doc) return null;
    const immutableImageRequired = doc.data?.immutableImageRequired === true;
    const rolloutId = doc.data?.imageDeployment?.rolloutId;
    if (rolloutId === undefined) return { immutableImageRequired, reporterIds: [] };
    const summary = doc.rolloutStatus;
    const stored = doc.data?.imageRolloutStatus;
    const reporterIds = summary?.rolloutId === rolloutId
      ? countedReporters(summary)
      : stored?.rolloutId === rolloutId ? (stored.reporters ?? []).map((r) => r.reporterId) : [];
    return { immutableImageRequired, rolloutId, reporterIds };
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
    if (this.plans.size >= PLANS_KEPT) this.plans.delete(this.plans.keys().next().value ?? '');
    this.plans.set(rolloutId, plan);
    return plan;
  }

  /**
   * What a report needs of its service: the immutable flag, the current rollout's plan (read once
   * per process and rollout), its policy, and the summary head with the reporter's contribution.
   * The reports that ask in the same turn of the event loop share one read by `_id` `$in`
   * (src/store/coalesce.ts), each reporter's contribution projected.
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
    if (!state || reporterKey === undefined) return target;
    return { ...target, held: { state, entry: contributionIn(doc.rolloutStatus?.entries?.[reporterKey]) } };
  }

  readonly #reportTargetDocs = coalesced<{ id: string, reporterKey?: string | undefined }, ServiceDocument | null>(async (calls) => {
    const keys = [...new Set(calls.flatMap((c) => (c.reporterKey === undefined ? [] : [c.reporterKey])))];
    const projection = {
      'data.immutableImageRequired': 1,
      'data.imageDeployment.rolloutId': 1,
      'data.rolloutPolicy': 1,
      ...(keys.length === 0 ? {} : statusHead),
      ...Object.fromEntries(keys.map((key) => [`rolloutStatus.entries.${key}`, 1])),
    };
    const ids = [...new Set(calls.map((c) => c.id))];
    const docs = await this.collection.find({ _id: { $in: ids } }, { projection }).toArray();
    const byId = new Map(docs.map((doc) => [doc._id, doc]));
    return calls.map((c) => byId.get(c.id) ?? null);
  });

  /**
   * One reporter's entry and the sums, in one update guarded by the rollout and by the entry's
   * version: reporters of one rollout never conflict with each other, only with their own
   * concurrent reports.
   */
  async applyStatusEntry (write: EntryWrite): Promise<EntryWriteResult> {
    const path = `rolloutStatus.entries.${write.key}`;
    const inc: Record<string, number> = { 'rolloutStatus.seq': 1 };
    for (const [name, value] of Object.entries(write.delta.totals)) if (value !== 0) inc[`rolloutStatus.totals.${name}`] = value;
    for (const [reason, value] of Object.entries(write.delta.mismatched)) if (value) inc[`rolloutStatus.mismatched.${reason}`] = value;
    // The expected version, in the entry's field or (an entry written before contributions) in `version`.
    const expected = write.expectedVersion === undefined
      ? { [path]: { $exists: false } }
      : { $or: [{ [`${path}.v`]: write.expectedVersion }, { [`${path}.version`]: write.expectedVersion }] };
    const doc = await this.collection.findOneAndUpdate(
      { _id: write.serviceId, 'rolloutStatus.rolloutId': write.rolloutId, ...expected },
      // `$max`: reports of different reporters never conflict, and the one whose clock read came first may land last.
      { $set: { [path]: write.entry }, $max: { 'rolloutStatus.updatedAt': write.now }, $inc: inc },
      { returnDocument: 'after', projection: statusHead }
    );
    const state = doc ? stateOf(doc) : null;
    if (state) return { kind: 'applied', state };
    const now = await this.readStatusEntry(write.serviceId, write.rolloutId, write.key);
    return now.current ? { kind: 'version-moved', stored: now.stored } : { kind: 'not-current' };
  }

  async readStatusState (id: string, rolloutId: string): Promise<StatusState | null> {
    const doc = await this.collection.findOne({ _id: id, 'rolloutStatus.rolloutId': rolloutId }, { projection: statusHead });
    return doc ? stateOf(doc) : null;
  }

  async readStatusEntry (id: string, rolloutId: string, key: string): Promise<{ current: boolean, stored?: SummaryEntry }> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { 'rolloutStatus.rolloutId': 1, [`rolloutStatus.entries.${key}`]: 1 } });
    const summary = doc?.rolloutStatus;
    return summary?.rolloutId === rolloutId ? { current: true, stored: contributionIn(summary.entries?.[key]) } : { current: false };
  }

  async initStatusSummary (id: string, plan: NonNullable<IServiceData['imageDeployment']>, now: number): Promise<void> {
    await this.collection.updateOne(
      { _id: id, 'data.imageDeployment.rolloutId': plan.rolloutId, 'rolloutStatus.rolloutId': { $ne: plan.rolloutId } },
      { $set: { rolloutStatus: emptySummary(plan, now) } }
    );
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

  /**
   * Writes a rollout's plan onto the service (src/domain/rolloutApplication.ts says what it changes),
   * only if the service is still at the generation the plan was made from, at the status revision and
   * at the status summary state read here (single-document compare-and-swap): the replacement then
   * decides the replaced rollout's undecided milestones from exactly its last state. Touches only
   * server-managed fields, so a concurrent updateService survives.
   */
  async applyRollout (record: RolloutRecord, now: number): Promise<ApplyRolloutResult> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const doc = await this.collection.findOne({ _id: record.serviceId }, { projection: replacementHead });
      if (!doc) return { kind: 'service-missing' };
      const generation = doc.data?.imageDeployment?.rolloutGeneration ?? 0;
      if (generation >= record.generation) return { kind: 'already-applied', ended: doc.endedRollout };
      const summary = doc.rolloutStatus;
      const plan = doc.data?.imageDeployment;
      const head = { generation, plan, summary: summary?.rolloutId === plan?.rolloutId ? summary : undefined, statusRevision: doc.statusRevision ?? 0 };
      const application = rolloutApplication(record, head, now);
      const result = await this.collection.updateOne(
        {
          ...atGeneration(record.serviceId, record.generation - 1),
          ...atStatusRevision(head.statusRevision),
          // The summary state read: no report and no milestone written since (every milestone write moves `changes`).
          'rolloutStatus.seq': summary?.seq ?? null,
          [`${LIFECYCLE}.changes`]: summary?.lifecycle?.changes ?? null,
        },
        applicationUpdate(application, now)
      );
      if (result.matchedCount === 1) {
        if (application.verified) await this.keepOneVerifiedPerDigest(record.serviceId, application.verified);
        return { kind: 'applied', application };
      }
    }
    throw new Error(`could not apply rollout ${record.rolloutId}: the status kept changing`);
  }

  async findLifecycle (id: string): Promise<LifecycleView | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: lifecycleProjection });
    return doc ? lifecycleViewOf(doc) : null;
  }

  async openLifecycles (limit: number, after?: string): Promise<LifecycleView[]> {
    const filter = after === undefined ? { 'rolloutStatus.lifecycle.open': true } : { 'rolloutStatus.lifecycle.open': true, _id: { $gt: after } };
    const docs = await this.collection.find(filter, { projection: lifecycleProjection }).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map(lifecycleViewOf);
  }

  async ensureLifecycle (target: LifecycleTarget, at: number): Promise<void> {
    await this.collection.updateOne(
      { ...currentRollout(target), 'rolloutStatus.lifecycle': { $exists: false } },
      { $set: { 'rolloutStatus.lifecycle': initialLifecycle(at) } }
    );
  }

  async recordProgress (target: LifecycleTarget, totals: StatusTotals, at: number): Promise<boolean> {
    const grew = (['observed', 'healthy', 'verified'] as const).map((k) => ({ [`${LIFECYCLE}.progress.${k}`]: { $lt: totals[k] } }));
    const result = await this.collection.updateOne(
      { ...currentRollout(target), $or: grew },
      {
        $max: Object.fromEntries((['observed', 'healthy', 'verified'] as const).map((k) => [`${LIFECYCLE}.progress.${k}`, totals[k]])),
        $set: { [`${LIFECYCLE}.progress.at`]: at },
      }
    );
    return result.modifiedCount === 1;
  }

  /** The first success (sticky) with its event, and the release on the verified list: decided once, here. */
  async markSucceeded (target: LifecycleTarget, at: number, verified: VerifiedRelease, event: DomainEvent): Promise<MilestoneWrite> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.succeededAt`]: { $exists: false }, [`${LIFECYCLE}.deadline`]: { $exists: false } },
      {
        $set: { [`${LIFECYCLE}.succeededAt`]: at, [`${LIFECYCLE}.open`]: true },
        $inc: { [`${LIFECYCLE}.changes`]: 1 },
        $push: { verifiedReleases: { $each: [verified], $slice: -VERIFIED_RELEASES_KEPT }, ...outboxOf([event]) },
      }
    );
    if (result.modifiedCount !== 1) return await this.milestoneLost(target);
    await this.keepOneVerifiedPerDigest(target.serviceId, verified);
    return 'decided';
  }

  /**
   * One entry per digest, the newest: redeploys of one release must not push the others out of the
   * kept list (an abort returns to the newest verified release other than the digest deployed now).
   */
  private async keepOneVerifiedPerDigest (serviceId: string, verified: VerifiedRelease): Promise<void> {
    await this.collection.updateOne(
      { _id: serviceId },
      { $pull: { verifiedReleases: { requestedDigest: verified.requestedDigest, rolloutId: { $ne: verified.rolloutId } } } }
    );
  }

  /** Why a milestone write did not apply: the rollout was replaced (its replacement decides), or the milestone was decided already. */
  private async milestoneLost (target: LifecycleTarget): Promise<MilestoneWrite> {
    const current = await this.collection.findOne(currentRollout(target), { projection: { _id: 1 } });
    return current ? 'decided-before' : 'not-current';
  }

  async markFailure (target: LifecycleTarget, failure: FailureMilestone, event: DomainEvent): Promise<MilestoneWrite> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.failure`]: { $exists: false }, [`${LIFECYCLE}.succeededAt`]: { $exists: false } },
      { $set: { [`${LIFECYCLE}.failure`]: failure, [`${LIFECYCLE}.open`]: true }, $inc: { [`${LIFECYCLE}.changes`]: 1 }, $push: outboxOf([event]) }
    );
    return result.modifiedCount === 1 ? 'decided' : await this.milestoneLost(target);
  }

  async decideDeadline (
    target: LifecycleTarget, seenSeq: number, decision: DeadlineDecision, failure: FailureMilestone | undefined, events: readonly DomainEvent[]
  ): Promise<boolean> {
    const set: Record<string, unknown> = { [`${LIFECYCLE}.deadline`]: decision, [`${LIFECYCLE}.open`]: true };
    if (failure) set[`${LIFECYCLE}.failure`] = failure;
    const result = await this.collection.updateOne(
      {
        ...currentRollout(target),
        'rolloutStatus.seq': seenSeq,
        [`${LIFECYCLE}.deadline`]: { $exists: false },
        [`${LIFECYCLE}.succeededAt`]: { $exists: false },
        // The failure milestone is written only where none is (the caller read it absent).
        ...(failure ? { [`${LIFECYCLE}.failure`]: { $exists: false } } : {}),
      },
      { $set: set, $max: { 'rolloutStatus.updatedAt': decision.at }, $inc: { 'rolloutStatus.seq': 1, [`${LIFECYCLE}.changes`]: 1 }, $push: outboxOf(events) }
    );
    return result.modifiedCount === 1;
  }

  async markFollowUp (target: LifecycleTarget, kind: 'autoRollback' | 'deferredPromotion', followUp: FollowUp): Promise<boolean> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.${kind}`]: { $exists: false } },
      { $set: { [`${LIFECYCLE}.${kind}`]: followUp }, $inc: { [`${LIFECYCLE}.changes`]: 1 } }
    );
    return result.modifiedCount === 1;
  }

  async closeLifecycle (target: LifecycleTarget, seenChanges: number): Promise<boolean> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.changes`]: seenChanges, [`${LIFECYCLE}.open`]: true },
      { $set: { [`${LIFECYCLE}.open`]: false } }
    );
    return result.modifiedCount === 1;
  }

  async queuePromotion (target: LifecycleTarget, queued: QueuedPromotion): Promise<QueueResult> {
    const result = await this.collection.updateOne(
      {
        ...currentRollout(target),
        $or: [
          { automationQueue: { $exists: false } },
          { 'automationQueue.firstObservedAt': { $lt: queued.firstObservedAt } },
          { 'automationQueue.releaseId': queued.releaseId },
        ],
      },
      // Open again: the sweeper promotes it should the rollout have settled meanwhile.
      { $set: { automationQueue: queued, [`${LIFECYCLE}.open`]: true }, $inc: { [`${LIFECYCLE}.changes`]: 1 } }
    );
    if (result.matchedCount === 1) return 'queued';
    return (await this.collection.findOne(currentRollout(target), { projection: { _id: 1 } })) ? 'newer-waiting' : 'not-current';
  }

  async clearQueuedPromotion (id: string, releaseId: string): Promise<void> {
    await this.collection.updateOne({ _id: id, 'automationQueue.releaseId': releaseId }, { $unset: { automationQueue: '' } });
  }

  async replaceWritableData (id: string, data: TServiceWritableData, now: number): Promise<ReplaceServiceResult> {
    const set: Record<string, unknown> = { updatedAt: now };
    const unset: Record<string, ''> = {};
    const given = data as Record<string, unknown>;
    for (const field of writableServiceDataFields) {
      if (given[field] === undefined) unset[`data.${field}`] = '';
      else set[`data.${field}`] = given[field];
    }
    try {
      const doc = await this.collection.findOneAndUpdate(
        { _id: id },
        Object.keys(unset).length > 0 ? { $set: set, $unset: unset } : { $set: set },
        { returnDocument: 'after' }
      );
      return doc ? { kind: 'replaced', service: await this.toService(doc) } : { kind: 'missing' };
    } catch (err) {
      if (isDuplicateKeyError(err)) return nameTaken(this.collection, data.name);
      throw err;
    }
  }
}
