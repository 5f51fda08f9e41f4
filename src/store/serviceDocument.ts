import { type Collection } from 'mongodb';
import type { IImageRolloutStatus, IService, IServiceData, ServiceSummary } from '../contracts/index.js';
import { VERIFIED_RELEASES_KEPT, type QueuedPromotion, type VerifiedRelease, type WindowWait } from '../domain/lifecycle.js';
import { runtimeVerificationDue, type AttestationDue } from '../domain/attestation/issuance.js';
import type { DomainEvent } from '../domain/events.js';
import type { LifecycleTarget, LifecycleView, StatusState } from '../domain/ports/index.js';
import type { EndedRollout, RolloutApplication } from '../domain/rolloutApplication.js';
import type { AutomationHold } from '../domain/rollouts.js';
import type { ReporterEvidence } from '../domain/rolloutView.js';
import { pick } from '../domain/objects.js';
import { rolloutRecordId } from '../domain/reports.js';
import {
  aggregateOf, composeStatus, replicaCountKeys, STATUS_EVENTS_KEPT,
  type RolloutAggregate, type StatusEvent, type StatusSummary,
} from '../domain/rolloutStatus.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';
import type { ReportDocument } from './reportStore.js';
import { countedReporterIds, type BucketDocument } from './statusBuckets.js';

export interface ServiceDocument {
  _id: string;
  data: IServiceData;
  /** Set by a manual rollback; automatic promotion stays off until an explicit promotion clears it. */
  automationHold?: AutomationHold;
  /**
   * The current rollout's status summary: sums, mismatch counts and the sums of each bucket of
   * reporters' contributions (the contributions are in `statusBuckets`: ./statusBuckets.ts), a
   * report moving only its bucket's sums and the totals by the difference (`data.imageRolloutStatus`
   * is composed from it on read).
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
  /** The newest push waiting for promotions to open (a closed window, stop-the-line) before it promotes automatically. */
  windowWait?: WindowWait;
  /**
   * Domain events recorded with the change they describe (in the same update), not yet in the log
   * (`events`); `seq` once the relay has claimed their place there (src/store/eventLogStore.ts).
   */
  outbox?: DomainEvent[];
  /** The last seq claimed in the service's event log. */
  eventSeq?: number;
  /**
   * Attestations the service is owed, in the order decided: pushed by the write that decides a success
   * or a drift, taken off by the issuer once the attestation is stored (src/operations/attestations.ts).
   */
  attestationsDue?: AttestationDue[];
  /** The rollout the current one replaced, with its final milestones (the history copies them). */
  endedRollout?: EndedRollout;
  createdAt: number;
  updatedAt: number;
}

/** The compare-and-swap filter on a service's rollout generation (0 = no plan yet). */
export const atGeneration = (id: string, generation: number): Record<string, unknown> =>
  generation === 0
    ? { _id: id, 'data.imageDeployment': { $exists: false } }
    : { _id: id, 'data.imageDeployment.rolloutGeneration': generation };

/** Compare-and-swap on the status revision (absent until the first change). */
export const atStatusRevision = (revision: number): Record<string, unknown> =>
  revision === 0 ? { statusRevision: { $exists: false } } : { statusRevision: revision };

/** Appends a status event to the bounded change log. */
export const pushEvent = (event: StatusEvent) => ({ $push: { statusEvents: { $each: [event], $slice: -STATUS_EVENTS_KEPT } } });

/** Records events in the outbox, in order, in the update that makes the change they describe. */
export const outboxOf = (events: readonly DomainEvent[]) => ({ outbox: { $each: [...events] } });

/** What a replacement reads of the service: the plan, the summary head (never the entries), the revision, the rollout it last ended. */
export const replacementHead = {
  statusRevision: 1,
  'data.imageDeployment': 1,
  ...Object.fromEntries(['rolloutId', 'totals', 'mismatched', 'seq', 'updatedAt', 'lifecycle'].map((field) => [`rolloutStatus.${field}`, 1])),
  endedRollout: 1,
} as const;

/** The update a rollout application makes (src/domain/rolloutApplication.ts). */
export function applicationUpdate (a: RolloutApplication, now: number) {
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
  if (a.clearQueue) {
    unset['automationQueue'] = '';
    unset['windowWait'] = '';
  }
  const push: Record<string, unknown> = { ...pushEvent(a.statusEvent).$push, ...outboxOf(a.events) };
  if (a.verified) {
    push['verifiedReleases'] = { $each: [a.verified], $slice: -VERIFIED_RELEASES_KEPT };
    // The success this replacement decided owes its attestation: recorded in the same write.
    push['attestationsDue'] = runtimeVerificationDue(a.verified);
  }
  return { $set: set, $unset: unset, $push: push };
}

/** Published states of another rollout, or of this one before `seq`. */
export const publishedBefore = (rolloutId: string, seq: number) =>
  ({ $or: [{ 'statusPublished.rolloutId': { $ne: rolloutId } }, { 'statusPublished.seq': { $lt: seq } }] });

/**
 * Reads fetch only the fields their caller uses: the status history (`statusEvents`, up to
 * STATUS_EVENTS_KEPT entries, only the SSE stream reads it) and the per-replica evidence can be
 * larger than the rest of the document, and every report, promotion and listing reads a service.
 */
export const summaryHead = ['rolloutId', 'totals', 'mismatched', 'seq', 'updatedAt', 'lifecycle'].map((field) => [`rolloutStatus.${field}`, 1] as const);
export const statusHead = { ...Object.fromEntries(summaryHead), statusRevision: 1, statusPublished: 1 };
export const serviceWithStatus = { data: 1, rolloutStatus: 1 } as const;
export const serviceWithHold = { data: 1, automationHold: 1, verifiedReleases: 1 } as const;
export const rolloutState = { data: 1, rolloutStatus: 1, statusRevision: 1, automationHold: 1, automationQueue: 1 } as const;

export const stateOf = (doc: ServiceDocument): StatusState | null => {
  const summary = doc.rolloutStatus;
  return summary ? { summary, statusRevision: doc.statusRevision ?? 0, published: doc.statusPublished } : null;
};

export const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** The service that holds the name (a lost id can be found again from the `service-already-exists` answer). */
export async function nameTaken (collection: Collection<ServiceDocument>, name: string): Promise<{ kind: 'name-taken', serviceId?: string }> {
  const holder = await collection.findOne({ 'data.name': name }, { projection: { _id: 1 } });
  return { kind: 'name-taken', serviceId: holder?._id };
}

/** What a service listing shows of each service: never the reporters list or the environment. */
export const summaryProjection = {
  'data.name': 1,
  'data.imageDeployment': 1,
  ...Object.fromEntries(summaryHead),
  automationHold: 1,
};

/** A listing row: the plan in brief and the aggregate of its summary (never the reporters list). */
export const toSummary = (doc: ServiceDocument): ServiceSummary => {
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

export const rolloutSummaryOf = (plan: NonNullable<IServiceData['imageDeployment']>) =>
  pick(plan, ['rolloutId', 'rolloutGeneration', 'mode', 'releaseId', 'requestedDigest']);

export const statusSummaryOf = (status: RolloutAggregate) => pick(status, ['status', ...replicaCountKeys, 'updatedAt']);

export const LIFECYCLE = 'rolloutStatus.lifecycle';

/** Lifecycle writes apply to the current rollout's summary only. */
export const currentRollout = (target: LifecycleTarget) => ({ _id: target.serviceId, 'rolloutStatus.rolloutId': target.rolloutId });

/** What lifecycle control reads: never the entries (every reporter's) or the status events. */
export const lifecycleProjection = {
  'data.imageDeployment': 1,
  'data.rolloutPolicy': 1,
  ...statusHead,
  automationHold: 1,
  automationQueue: 1,
  verifiedReleases: 1,
} as const;

export function lifecycleViewOf (doc: ServiceDocument): LifecycleView {
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

/**
 * One entry per digest, the newest: redeploys of one release must not push the others out of the
 * kept list (an abort returns to the newest verified release other than the digest deployed now).
 */
export async function keepOneVerifiedPerDigest (collection: Collection<ServiceDocument>, serviceId: string, verified: VerifiedRelease): Promise<void> {
  await collection.updateOne(
    { _id: serviceId },
    { $pull: { verifiedReleases: { requestedDigest: verified.requestedDigest, rolloutId: { $ne: verified.rolloutId } } } }
  );
}

/** The service as the API shows it, composed from its document and the report records of the reporters its status counts. */
export class ServiceViews {
  private readonly reports: Collection<ReportDocument>;
  private readonly buckets: Collection<BucketDocument>;

  constructor (database: Database) {
    this.reports = database.db.collection(collections.reports);
    this.buckets = database.db.collection(collections.statusBuckets);
  }

  /** The reporters a summary of the rollout counts (one contribution each, in its buckets). */
  async reportersOf (rolloutId: string, summary: Pick<StatusSummary, 'buckets'>): Promise<string[]> {
    return countedReporterIds(this.buckets, rolloutId, summary);
  }

  /**
   * The service as the API shows it: `data.imageRolloutStatus` composed from the summary of the
   * current rollout and the entries in the report records of the reporters it counts (read by
   * `_id` `$in`, the entries only). (A plan written before summaries existed, its status stored
   * whole, was given its summary by the start-up migrations: ./migrations.ts.)
   */
  async toService (doc: ServiceDocument): Promise<IService> {
    return (await this.composed(doc, false)).service;
  }

  /** The service (as `toService`) and, with `withEvidence`, the current rollout's per-replica evidence from the same read of the records. */
  async composed (doc: ServiceDocument, withEvidence: boolean): Promise<{ service: IService, evidence: ReporterEvidence[] }> {
    const { imageRolloutStatus: _none, ...data } = doc.data;
    const plan = data.imageDeployment;
    const summary = doc.rolloutStatus;
    let imageRolloutStatus: IImageRolloutStatus | undefined;
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
    const ids = (await this.reportersOf(rolloutId, summary)).map((reporterId) => rolloutRecordId(rolloutId, reporterId));
    if (ids.length === 0) return [];
    const projection = withEvidence ? { entry: 1, reporterId: 1, rolloutId: 1, 'position.receivedAt': 1, replicas: 1 } : { entry: 1 };
    return this.reports.find({ _id: { $in: ids } }, { projection }).toArray();
  }
}
