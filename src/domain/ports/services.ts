import type {
  IImmutableImageDeploymentPlan, IRolloutPolicy, IService, ServiceSummary, TServiceWritableData,
} from '../../contracts/index.js';
import type { DomainEvent } from '../events.js';
import type { AttestationDue } from '../attestation/issuance.js';
import type {
  DeadlineDecision, DriftMilestone, FailureMilestone, FollowUp, QueuedPromotion, RolloutLifecycle, VerifiedRelease, WindowWait,
} from '../lifecycle.js';
import type { EndedRollout, RolloutApplication } from '../rolloutApplication.js';
import type { AutomationHold, RolloutRecord } from '../rollouts.js';
import type { MismatchCounts, StatusEvent, StatusSummary, StatusTotals, SummaryEntry } from '../rolloutStatus.js';
import type { ReporterEvidence } from '../rolloutView.js';

/**
 * The ports over services, one per role a use case plays (a store may implement several): the
 * catalogue, issuing rollouts, the status summary, the status stream, lifecycle control and the
 * automation queue.
 */

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
  /** Called between the write of the contribution's bucket and that of the service's sums (crash injection). */
  afterBucket?: () => void;
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

/** Services as the API creates, reads, lists and changes them. */
export interface ServiceCatalogue {
  insert(service: IService, now: number): Promise<InsertServiceResult>;
  findById(id: string): Promise<IService | null>;
  exists(id: string): Promise<boolean>;
  /** The service as the API shows it (its status composed), and its hold. */
  findServiceView(id: string): Promise<ServiceWithHold | null>;
  /** Whose stored deployments GET …/deployments shows: the policy, the current rollout and the reporters its status counts (nothing composed). */
  findDeploymentScope(id: string): Promise<DeploymentScope | null>;
  /** Services sorted by name, strictly after `afterName`; with `name`, only the service of that name. */
  list(query: { name?: string, afterName?: string, limit: number }): Promise<ServiceSummary[]>;
  /**
   * Replaces the caller-writable fields of `data` in one atomic update; never touches
   * server-managed fields, so it cannot undo a concurrent promotion.
   */
  replaceWritableData(id: string, data: TServiceWritableData, now: number): Promise<ReplaceServiceResult>;
  /** Services whose pipeline promotes downstream by itself, by id after `after` (the sweeper's pipeline pass): id, registry target, policy. */
  withPipelinePromotion(limit: number, after?: string): Promise<PipelineService[]>;
}

/** A service whose pipeline promotes downstream: what the sweeper's pipeline pass reads of it. */
export type PipelineService = Pick<IService, 'id'> & { data: Pick<IService['data'], 'registryTarget' | 'promotionPolicy'> };

/** What issuing a rollout reads of its service and writes onto it (src/operations/issueRollout.ts). */
export interface ServicePlans {
  /** The service for planning a rollout: its data without the status (a new plan resets it), and its hold. */
  findWithHold(id: string): Promise<ServiceWithHold | null>;
  /** Writes a rollout's plan onto the service if it is still at the generation before (compare-and-swap). */
  applyRollout(record: RolloutRecord, now: number): Promise<ApplyRolloutResult>;
}

/** The current rollout's status summary: what a report reads and changes, what the rollout view reads. */
export interface StatusSummaries {
  /** With `reporterKey` (see `reporterKeyOf`), also the summary head and that reporter's contribution (`held`). */
  findReportTarget(id: string, reporterKey?: string): Promise<ReportTarget | null>;
  /** Replaces one reporter's entry in the current rollout's summary, guarded by the entry's expected version. */
  applyStatusEntry(write: EntryWrite): Promise<EntryWriteResult>;
  /** The summary state of the current rollout (null: the service's summary is not this rollout's). */
  readStatusState(id: string, rolloutId: string): Promise<StatusState | null>;
  /** One reporter's entry in the current rollout's summary, the summary first brought up to it (a crash may have left it behind; `now`: its time). */
  readStatusEntry(id: string, rolloutId: string, key: string, now: number): Promise<{ current: boolean, stored?: SummaryEntry }>;
  /** The rollout's buckets a crash left ahead of the summary, brought into it (the lifecycle sweeper); how many. */
  repairBuckets(id: string, rolloutId: string, now: number): Promise<number>;
  findRolloutState(id: string): Promise<ServiceRolloutState | null>;
}

/** The status stream: each status change, numbered by the status revision (the SSE stream reads it). */
export interface StatusEvents {
  /** Appends the status event (or moves the published seq on); false: the head moved, read again. */
  publishStatus(publication: StatusPublication): Promise<boolean>;
  /** The status events after `revision`, oldest first (SSE); null: no such service. */
  statusEventsAfter(id: string, revision: number): Promise<StatusSnapshot | null>;
}

/** Lifecycle control (src/operations/lifecycle.ts): each write is a compare-and-swap that applies once. */
export interface Lifecycles {
  findLifecycle(id: string): Promise<LifecycleView | null>;
  /** Services whose current rollout still has lifecycle work (deadline to watch, history to write, follow-ups), by id after `after`. */
  openLifecycles(limit: number, after?: string): Promise<LifecycleView[]>;
  /** Raises the progress maxima to `totals` (where higher) and stamps the time; false: no count grew. */
  recordProgress(target: LifecycleTarget, totals: StatusTotals, at: number): Promise<boolean>;
  /** The first success (sticky) with its event, and the release on the verified list. */
  markSucceeded(target: LifecycleTarget, at: number, verified: VerifiedRelease, event: DomainEvent): Promise<MilestoneWrite>;
  /** A succeeded rollout drifted (once): the drift, its release off the verified list, the revocation it owes — one write. */
  markDrifted(target: LifecycleTarget, drift: DriftMilestone, due: AttestationDue): Promise<MilestoneWrite>;
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
}

/** The push that waits for the current rollout to settle (automatic promotion). */
export interface AutomationQueue {
  /** Queues a push to promote once the current rollout settles: kept only if newer (first observation) than what waits. */
  queuePromotion(target: LifecycleTarget, queued: QueuedPromotion): Promise<QueueResult>;
  /** Forgets the queued promotion of this release (it was promoted, or refused for good). */
  clearQueuedPromotion(id: string, releaseId: string): Promise<void>;
  /**
   * Keeps a push waiting for promotions to open (a closed window, stop-the-line): only if newer (first observation) than
   * what waits, or the same release (its retry time moves).
   */
  waitForWindow(id: string, wait: WindowWait): Promise<boolean>;
  /** Forgets the window wait of this release (it was promoted, or refused for another reason). */
  clearWindowWait(id: string, releaseId: string): Promise<void>;
  /** Services with a push waiting for a window whose retry time came by `now`, earliest first (the sweeper's pass). */
  windowWaits(now: number, limit: number): Promise<Array<{ serviceId: string, wait: WindowWait }>>;
}
