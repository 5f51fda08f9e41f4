import type {
  AutomaticPromotionOutcome, IImageRelease, IImmutableImageDeploymentPlan, IRolloutPolicy, IImmutableRegistryPushEvent, IService, ImageTagHistoryEntry,
  ServiceSummary, TServiceWritableData,
} from '../../contracts/index.js';
import type { ClusterNodes, ClusterRecord, NodeClaim, NodeClaimResult } from '../clusters.js';
import type { MetricsRollout } from '../deliveryMetrics.js';
import type { KeysetPosition, ReleaseIdentity } from '../releases.js';
import type { DomainEvent } from '../events.js';
import type { EventLog } from './eventLog.js';
import type { DeadlineDecision, FailureMilestone, FollowUp, QueuedPromotion, RolloutLifecycle, VerifiedRelease } from '../lifecycle.js';
import type { EndedRollout, RolloutApplication } from '../rolloutApplication.js';
import type { ClaimRefusal, ReportHead, ReportRecord } from '../reports.js';
import type { AutomationHold, RolloutEnd, RolloutRecord } from '../rollouts.js';
import type { MismatchCounts, StatusEvent, StatusSummary, StatusTotals, SummaryEntry } from '../rolloutStatus.js';
import type { ReporterEvidence } from '../rolloutView.js';

/**
 * The ports: what the use cases need from persistence and the outside world, declared here,
 * once, and implemented by src/store (and src/outbound/). Every method resolves to a typed
 * result for the expected cases (not found, lost compare-and-swap, duplicate); the store
 * throws only the unexpected, and turns an unreachable database into `database-unavailable`.
 */

// Services ---------------------------------------------------------------------

export type InsertServiceResult = { kind: 'inserted' } | { kind: 'name-taken', serviceId?: string };

export type ReplaceServiceResult = { kind: 'replaced', service: IService } | { kind: 'missing' } | { kind: 'name-taken', serviceId?: string };

export type ApplyRolloutResult =
  /** Written; the application says what (and which milestones of the replaced rollout it decided). */
  | { kind: 'applied', application: RolloutApplication }
  /** Written before (a retry): the rollout the plan replaced, as that write left it. */
  | { kind: 'already-applied', ended?: EndedRollout | undefined }
  | { kind: 'service-missing' };

/** A milestone write: decided here (count it); decided before; or the rollout was replaced (its replacement decides). */
export type MilestoneWrite = 'decided' | 'decided-before' | 'not-current';

export interface ServiceWithHold {
  service: IService;
  automationHold?: AutomationHold;
  /** The service's latest rollouts that succeeded, oldest first (where an abort returns to). */
  verifiedReleases?: VerifiedRelease[];
}

/** What the rollout view reads: the service (its status composed) with its status revision. */
export interface ServiceRolloutState extends ServiceWithHold {
  statusRevision: number;
  /** The current rollout's per-replica evidence, one element per reporter its status counts. */
  evidence: ReporterEvidence[];
  /** The current rollout's lifecycle (absent: no summary of the current plan). */
  lifecycle?: RolloutLifecycle;
  automationQueue?: QueuedPromotion;
}

/** What a snapshot report needs of its service: whether it requires immutable images, and its plan. */
export interface ReportTarget {
  serviceId: string;
  immutableImageRequired: boolean;
  plan?: IImmutableImageDeploymentPlan;
  /** The service's lifecycle settings (stability window, clock tolerance, …), as stored. */
  policy?: IRolloutPolicy;
  /**
   * The current plan's status summary head and the reporter's contribution in it, read with the
   * plan (when the caller named the reporter and the summary is the plan's): lets a report that
   * changes nothing in the summary skip writing it.
   */
  held?: { state: StatusState, entry?: SummaryEntry };
}

/** The status summary of the current rollout and what was last published of it (the SSE log's head). */
export interface StatusState {
  summary: Pick<StatusSummary, 'rolloutId' | 'totals' | 'mismatched' | 'seq' | 'updatedAt' | 'lifecycle'>;
  statusRevision: number;
  /** The state the last status event describes: its summary seq and aggregate key. */
  published?: { rolloutId: string, seq: number, key: string };
}

/** One reporter's entry replacing its earlier one in the summary, with the delta it makes. */
export interface EntryWrite {
  serviceId: string;
  rolloutId: string;
  key: string;
  /** The reporter's new contribution (with its record's version). */
  entry: SummaryEntry;
  /** The version the summary is expected to hold for this reporter (undefined: none yet). */
  expectedVersion?: number;
  delta: { totals: StatusTotals, mismatched: MismatchCounts };
  now: number;
}

export type EntryWriteResult =
  | { kind: 'applied', state: StatusState }
  /** The summary holds another version of the entry (a crash left it behind, or a concurrent report moved it on). */
  | { kind: 'version-moved', stored?: SummaryEntry }
  /** The summary is not this rollout's (a newer rollout, or none yet for a rollout planned before it existed). */
  | { kind: 'not-current' };

/** A status event to append, if the status is still at `revision` and its summary still at `seq` (the newest state). */
export interface StatusPublication {
  serviceId: string;
  rolloutId: string;
  seq: number;
  key: string;
  revision: number;
  event: StatusEvent;
  /** The same change as a domain event (`rollout.status-changed`), for the log. */
  domainEvent: DomainEvent;
}

/** The status revision of a service and its kept status changes after some revision, oldest first. */
export interface StatusSnapshot {
  revision: number;
  events: StatusEvent[];
}

/** What lifecycle control reads of a service: plan, settings, the summary head, hold, queue, verified releases. */
export interface LifecycleView {
  serviceId: string;
  plan?: IImmutableImageDeploymentPlan;
  policy?: IRolloutPolicy;
  /** The current rollout's summary head (absent: none, or not the current plan's). */
  state?: StatusState;
  automationHold?: AutomationHold;
  automationQueue?: QueuedPromotion;
  verifiedReleases: VerifiedRelease[];
}

/** A lifecycle write of the current rollout (it applies only while that rollout's summary is the service's). */
export interface LifecycleTarget {
  serviceId: string;
  rolloutId: string;
}

export type QueueResult = 'queued' | 'newer-waiting' | 'not-current';

/** The service's immutable policy, its current rollout and the reporters the rollout's status counts. */
export interface DeploymentScope {
  immutableImageRequired: boolean;
  rolloutId?: string;
  reporterIds: string[];
}

export interface ServiceRepository {
  insert(service: IService, now: number): Promise<InsertServiceResult>;
  findById(id: string): Promise<IService | null>;
  exists(id: string): Promise<boolean>;
  /** The service for planning a rollout: its data without the status (a new plan resets it), and its hold. */
  findWithHold(id: string): Promise<ServiceWithHold | null>;
  /** The service as the API shows it (its status composed), and its hold. */
  findServiceView(id: string): Promise<ServiceWithHold | null>;
  findRolloutState(id: string): Promise<ServiceRolloutState | null>;
  /** Whose stored deployments GET …/deployments shows: the policy, the current rollout and the reporters its status counts (nothing composed). */
  findDeploymentScope(id: string): Promise<DeploymentScope | null>;
  /** With `reporterKey` (see `reporterKeyOf`), also the summary head and that reporter's contribution (`held`). */
  findReportTarget(id: string, reporterKey?: string): Promise<ReportTarget | null>;
  /** Services sorted by name, strictly after `afterName`; with `name`, only the service of that name. */
  list(query: { name?: string, afterName?: string, limit: number }): Promise<ServiceSummary[]>;
  /**
   * Replaces the caller-writable fields of `data` in one atomic update; never touches
   * server-managed fields, so it cannot undo a concurrent promotion.
   */
  replaceWritableData(id: string, data: TServiceWritableData, now: number): Promise<ReplaceServiceResult>;
  /** Writes a rollout's plan onto the service if it is still at the generation before (compare-and-swap). */
  applyRollout(record: RolloutRecord, now: number): Promise<ApplyRolloutResult>;
  /** Replaces one reporter's entry in the current rollout's summary, guarded by the entry's expected version. */
  applyStatusEntry(write: EntryWrite): Promise<EntryWriteResult>;
  /** The summary state of the current rollout (null: the service's summary is not this rollout's). */
  readStatusState(id: string, rolloutId: string): Promise<StatusState | null>;
  /** One reporter's entry in the current rollout's summary. */
  readStatusEntry(id: string, rolloutId: string, key: string): Promise<{ current: boolean, stored?: SummaryEntry }>;
  /** Starts the summary of the current plan's rollout where none is (a service whose plan predates summaries). */
  initStatusSummary(id: string, plan: IImmutableImageDeploymentPlan, now: number): Promise<void>;
  /** Appends the status event (or moves the published seq on); false: the head moved, read again. */
  publishStatus(publication: StatusPublication): Promise<boolean>;
  /** The status events after `revision`, oldest first (SSE); null: no such service. */
  statusEventsAfter(id: string, revision: number): Promise<StatusSnapshot | null>;

  // Lifecycle control (src/operations/lifecycle.ts): each write is a compare-and-swap that applies once.
  findLifecycle(id: string): Promise<LifecycleView | null>;
  /** Services whose current rollout still has lifecycle work (deadline to watch, history to write, follow-ups), by id after `after`. */
  openLifecycles(limit: number, after?: string): Promise<LifecycleView[]>;
  /** Starts the lifecycle of a summary written before lifecycles existed. */
  ensureLifecycle(target: LifecycleTarget, at: number): Promise<void>;
  /** Raises the progress maxima to `totals` (where higher) and stamps the time; false: no count grew. */
  recordProgress(target: LifecycleTarget, totals: StatusTotals, at: number): Promise<boolean>;
  /** The first success (sticky) with its event, and the release on the verified list. */
  markSucceeded(target: LifecycleTarget, at: number, verified: VerifiedRelease, event: DomainEvent): Promise<MilestoneWrite>;
  /** The first failure before any success, with its event. */
  markFailure(target: LifecycleTarget, failure: FailureMilestone, event: DomainEvent): Promise<MilestoneWrite>;
  /** The deadline's verdict with its events, if the summary is still at `seenSeq` (no report since): exactly one process decides. */
  decideDeadline(
    target: LifecycleTarget, seenSeq: number, decision: DeadlineDecision, failure: FailureMilestone | undefined, events: readonly DomainEvent[]
  ): Promise<boolean>;
  /** A follow-up attempted (once). */
  markFollowUp(target: LifecycleTarget, kind: 'autoRollback' | 'deferredPromotion', followUp: FollowUp): Promise<boolean>;
  /** No more lifecycle work, if nothing changed since the caller looked (`seenChanges`). */
  closeLifecycle(target: LifecycleTarget, seenChanges: number): Promise<boolean>;
  /** Queues a push to promote once the current rollout settles: kept only if newer (first observation) than what waits. */
  queuePromotion(target: LifecycleTarget, queued: QueuedPromotion): Promise<QueueResult>;
  /** Forgets the queued promotion of this release (it was promoted, or refused for good). */
  clearQueuedPromotion(id: string, releaseId: string): Promise<void>;
}

// Releases and push events -------------------------------------------------------

export interface ReleaseObservation {
  identity: ReleaseIdentity;
  tag: string;
  observedAt: number;
  /** Stored events of the release, counted after this event was stored. */
  observationCount: number;
}

export type RecordObservationResult =
  | { outcome: 'recorded', release: IImageRelease }
  /** The releaseId names another tuple, or the tuple has another releaseId (unique indexes). */
  | { outcome: 'identity-conflict' };

export interface ReleaseRepository {
  findById(releaseId: string): Promise<IImageRelease | null>;
  /** When each of these releases was first observed (releases that do not exist are absent). */
  firstObservedAt(releaseIds: readonly string[]): Promise<Map<string, number>>;
  /** The releases whose id is `identity.releaseId` or whose (service, host, repository, digest) is the identity's: at most two. */
  findByIdOrTuple(identity: ReleaseIdentity): Promise<IImageRelease[]>;
  /** The idempotent upsert of one observation; never lowers a counter, never sets acceptedAt. */
  recordObservation(observation: ReleaseObservation): Promise<RecordObservationResult>;
  /** acceptedAt = min(acceptedAt, at); lastPromotedAt = max(…, at); promotionCount = max(…, count). */
  recordPromotion(releaseId: string, at: number, promotionCount: number): Promise<void>;
  /** A service's releases, `lastObservedAt` desc then id desc, strictly after `after`. */
  listByService(serviceId: string, page: { limit: number, after?: KeysetPosition }): Promise<IImageRelease[]>;
}

export interface StoredPushEvent {
  event: IImmutableRegistryPushEvent;
  /** `pushEventFingerprint(event)`: tells a retry (same content) from a reused eventId. */
  fingerprint: string;
  recordedAt: number;
  /** Subject of the verified token that reported the event. */
  reportedBy: string;
  /** What automatic promotion decided for the event (promoted, queued, skipped, conflict), once decided. */
  automation?: AutomaticPromotionOutcome;
}

export interface PushEventRepository {
  findById(eventId: string): Promise<StoredPushEvent | null>;
  /** false when the eventId is already recorded (unique `_id`). */
  insert(record: StoredPushEvent): Promise<boolean>;
  /** Records what automatic promotion decided for the event. */
  recordAutomation(eventId: string, outcome: AutomaticPromotionOutcome): Promise<void>;
  /** Removes the event only if it still has this fingerprint. */
  remove(eventId: string, fingerprint: string): Promise<void>;
  /** Stored events whose identity is exactly this release's. */
  countForRelease(identity: ReleaseIdentity): Promise<number>;
  /** A tag's events, `observedAt` desc then eventId desc; `at`: only `observedAt <= at`. */
  tagHistory(serviceId: string, tag: string, query: { at?: number, limit: number, after?: KeysetPosition }): Promise<ImageTagHistoryEntry[]>;
}

// Rollouts and idempotency -------------------------------------------------------

export type InsertRolloutResult =
  | { kind: 'inserted' }
  /** This idempotency record already created a rollout (a resumed request). */
  | { kind: 'exists-for-record', record: RolloutRecord }
  /** Another rollout took this generation first: the caller lost the compare-and-swap. */
  | { kind: 'generation-taken' };

export interface RolloutRepository {
  /** THE commit point: one rollout per (service, generation), one per idempotency record. */
  insert(record: RolloutRecord): Promise<InsertRolloutResult>;
  findByIdempotencyRecord(idempotencyRecordId: string): Promise<RolloutRecord | null>;
  /**
   * The service's rollouts at `currentGeneration` and the one after that are not applied yet (what a
   * crash leaves: the next one committed before its plan was written, the current one before it was
   * finished), oldest first. Two lookups on the unique (serviceId, generation) index.
   */
  findPending(serviceId: string, currentGeneration: number): Promise<RolloutRecord[]>;
  markApplied(rolloutId: string): Promise<void>;
  /** Promotions (manual or automatic) of a release: the release's promotionCount. */
  countPromotions(releaseId: string): Promise<number>;
  /** History page, newest generation first; `beforeGeneration` is the keyset cursor. */
  list(serviceId: string, limit: number, beforeGeneration?: number): Promise<RolloutRecord[]>;
  /** The newest `limit` rollouts' outcomes and times only (no plan: what delivery metrics read), newest generation first. */
  listOutcomes(serviceId: string, limit: number): Promise<MetricsRollout[]>;
  /** The service's rollout of exactly this generation (the unique (serviceId, generation) index finds it). */
  findByGeneration(serviceId: string, generation: number): Promise<RolloutRecord | null>;
  /** Copies a rollout's milestones into its history record (idempotent: each is set once in the status summary first). */
  recordMilestones(rolloutId: string, milestones: Pick<RolloutRecord, 'succeededAt' | 'failure' | 'deadline'>): Promise<void>;
  /** How the rollout ended (once: the first writer's end stays); true for that first writer. */
  markEnded(rolloutId: string, end: RolloutEnd): Promise<boolean>;
}

/** What a completed request answered: replayed verbatim for the same key and request. */
export type StoredOutcome =
  | { kind: 'success', body: unknown }
  | { kind: 'error', code: string, message: string, details: Record<string, unknown> };

export type ClaimResult =
  /** `createdAt` names this lifetime of the key: a key reused after its record expired is a new request. */
  | { kind: 'claimed', createdAt: number }
  | { kind: 'taken-over', createdAt: number }
  | { kind: 'replay', outcome: StoredOutcome }
  | { kind: 'in-progress', retryAfterMs: number }
  | { kind: 'reused', operation: string };

export interface ClaimInput {
  recordId: string;
  serviceId: string;
  key: string;
  operation: string;
  fingerprint: string;
  owner: string;
  now: number;
  leaseMs: number;
  retentionMs: number;
}

export interface IdempotencyRepository {
  /** Claims the key (unique _id), takes over an abandoned claim, or says why not. */
  claim(input: ClaimInput): Promise<ClaimResult>;
  /** Stores the outcome. Idempotent: completing twice with the same outcome is harmless. */
  complete(recordId: string, outcome: StoredOutcome, now: number): Promise<void>;
  /** The key's record as it stands (unexpired), or null: in progress or completed, and when this lifetime of the key began. */
  find(recordId: string, now: number): Promise<{ state: 'in-progress' | 'completed', createdAt: number } | null>;
  /** Gives the key back after a transient failure so that the client's retry need not wait for the lease. */
  release(recordId: string, owner: string): Promise<void>;
  /** Removes records past their retention; resolves to how many. */
  sweepExpired(now: number): Promise<number>;
}

// Clusters -----------------------------------------------------------------------

/**
 * Nodes live in their own collection with `_id: nodeName`, so the unique `_id` keeps a node
 * name in at most one cluster across any number of processes.
 */
export interface ClusterRepository {
  /** The cluster with its node names (sorted), or null when it is not registered. */
  findById(clusterId: string): Promise<ClusterRecord | null>;
  /** The registered clusters among `clusterIds`, each with its node names (sorted). */
  findClustersWithNodes(clusterIds: readonly string[]): Promise<ClusterNodes[]>;
  /** Clusters sorted by id, starting after `after`. */
  list(opts: { limit: number, after?: string }): Promise<ClusterRecord[]>;
  /** nodeName → its claim, for the given names that are claimed. */
  findNodeOwners(nodeNames: readonly string[]): Promise<Map<string, NodeClaim>>;
  /** nodeName → its claim, for the given names that are registered: claimed at a revision their cluster committed. */
  findRegisteredNodeOwners(nodeNames: readonly string[]): Promise<Map<string, NodeClaim>>;
  /** Deletes this exact claim (same cluster and creation time), if it is still there. */
  releaseAbandonedClaim(nodeName: string, claim: NodeClaim): Promise<void>;
  /**
   * Claims every node for the cluster (one atomic upsert per node, keyed by `_id` and
   * `clusterId`), raising each claim's revision to at least `revision`. A node whose `_id`
   * is held by a document of another cluster is `refused` (duplicate key).
   */
  claimNodes(clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult>;
  /** Deletes these claims of the cluster (undoing a refused registration's inserts). */
  releaseNodes(clusterId: string, nodeNames: readonly string[]): Promise<void>;
  /**
   * Writes the cluster document at `revision` if it is still at `expectedRevision` (null: if it
   * does not exist yet). Resolves to its timestamps, or null when a concurrent registration got there first.
   */
  commit(
    cluster: { id: string, name?: string, nodeNames: readonly string[], revision: number, now: number },
    expectedRevision: number | null
  ): Promise<{ createdAt: number, updatedAt: number } | null>;
  /** Deletes the cluster's claims outside `keep` whose revision is at most `revision`. */
  removeStaleNodes(clusterId: string, keep: readonly string[], revision: number): Promise<void>;
  /** How many of these nodes the cluster holds. */
  countNodes(clusterId: string, nodeNames: readonly string[]): Promise<number>;
}

// Snapshot reports ------------------------------------------------------------------

export interface ReportRepository {
  findRecord(id: string): Promise<ReportRecord | null>;
  /** The record without its deployments (what the report path decides from). */
  findHead(id: string): Promise<ReportHead | null>;
  /**
   * The head of a rollout record as this process last wrote or read it, if it still knows it —
   * a guess, possibly overtaken by another process: only to decide a write whose compare-and-swap
   * (`writeRecord`) proves the guess right; never to refuse or answer a report.
   */
  knownHead(id: string): ReportHead | undefined;
  findRecords(ids: readonly string[]): Promise<ReportRecord[]>;
  /** The reports of a service without the immutable policy (one per reporting cluster; per reporter, those written before). */
  listServiceRecords(serviceId: string): Promise<ReportRecord[]>;
  /** Removes one record (a service record of the earlier per-reporter kind, once its cluster's record replaced it). */
  removeRecord(id: string): Promise<void>;
  /** The size limit the record would pass as stored (the database's document limit), or undefined when it fits. */
  oversized(record: ReportRecord): number | undefined;
  /** Writes the record if it is still at `expectedVersion` (0: if there is none). False: a concurrent report won. */
  writeRecord(record: ReportRecord, expectedVersion: number): Promise<boolean>;
  /**
   * Claims the rollout's nodes and sessions for the reporter (unique per rollout: the first
   * reporter to claim one keeps it) and answers those another reporter holds.
   */
  claim(rolloutId: string, reporterId: string, claims: ReadonlyArray<{ kind: 'node' | 'session', name: string }>, now: number): Promise<ClaimRefusal[]>;
  /** Removes a rollout's reports and claims (a rollout long superseded). */
  removeRollout(rolloutId: string): Promise<void>;
}

// The database as a whole ----------------------------------------------------------

// Declared in ./database.ts (the conformance check and the index plan's outcome, issue 24).
export type { DatabaseHealth } from './database.js';

/** Every repository, over one database. */
export interface Repositories {
  services: ServiceRepository;
  releases: ReleaseRepository;
  pushEvents: PushEventRepository;
  clusters: ClusterRepository;
  rollouts: RolloutRepository;
  idempotency: IdempotencyRepository;
  reports: ReportRepository;
  events: EventLog;
}

// The outside world ------------------------------------------------------------------

/** The log a use case writes to (pino's signature: context object first). */
export interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export type Clock = () => number;
