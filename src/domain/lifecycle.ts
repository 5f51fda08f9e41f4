import semver from 'semver';
import {
  autoRollbackTriggers, rolloutPolicyDefaults,
  type IImmutableImageDeploymentPlan, type IRolloutPolicy, type TAutoRollbackTrigger, type TImmutableImageMismatchReason,
  type TImmutableImageRolloutStatus,
} from '../contracts/index.js';
import type { Problem } from '../errors.js';

/**
 * Pure rules of rollout lifecycle control (docs/lifecycle.md "Lifecycle control"): the effective
 * settings of a service, when a replica counts as stable, what progress is and when the
 * progress deadline has passed, which outcome triggers an automatic rollback, and which pushed
 * tags may promote automatically. src/operations/lifecycle.ts sequences the writes.
 */

/** The settings with every default filled in, in milliseconds where the rules compute. */
export interface EffectivePolicy {
  progressDeadlineSeconds: number;
  stabilityWindowSeconds: number;
  clockToleranceSeconds: number;
  autoRollback: { enabled: boolean, triggers: TAutoRollbackTrigger[] };
  automaticPromotion: { tagPattern?: string, semverRange?: string };
}

export function effectiveRolloutPolicy (policy: IRolloutPolicy | undefined): EffectivePolicy {
  return {
    progressDeadlineSeconds: policy?.progressDeadlineSeconds ?? rolloutPolicyDefaults.progressDeadlineSeconds,
    stabilityWindowSeconds: policy?.stabilityWindowSeconds ?? rolloutPolicyDefaults.stabilityWindowSeconds,
    clockToleranceSeconds: policy?.clockToleranceSeconds ?? rolloutPolicyDefaults.clockToleranceSeconds,
    autoRollback: {
      enabled: policy?.autoRollback?.enabled ?? false,
      triggers: [...(policy?.autoRollback?.triggers ?? autoRollbackTriggers)],
    },
    automaticPromotion: { ...policy?.automaticPromotion },
  };
}

/** Problems of a policy the schema cannot see: a semver range node-semver cannot parse. */
export function rolloutPolicyProblems (policy: IRolloutPolicy | undefined, fieldPath: string): Problem[] {
  const range = policy?.automaticPromotion?.semverRange;
  if (range === undefined || semver.validRange(range) !== null) return [];
  return [{ field: `${fieldPath}/automaticPromotion/semverRange`, message: 'must be a semver range (e.g. ^1.4.0, >=2 <3)' }];
}

// Stability -------------------------------------------------------------------

/** What one report says about one replica, as far as stability is concerned. */
export interface StabilityInput {
  /** The same replica (node and deployment id) in the reporter's previous accepted report of this rollout. */
  previous?: { runningSince?: number, verifiedSince?: number };
  /**
   * The reporter has reported the replica's node before in this rollout: a replica that is not in its
   * previous report is then not seen for the first time (it was left out, so not shown running).
   */
  nodeSeenBefore?: boolean;
  running: boolean;
  verified: boolean;
  /** The deployment's `deployedAt` (reporter's clock). */
  deployedAt?: number;
  /** The report's `reportedAt` (reporter's clock) and when the server received it (server's clock). */
  reportedAt: number;
  receivedAt: number;
  policy: Pick<EffectivePolicy, 'stabilityWindowSeconds' | 'clockToleranceSeconds'>;
}

export interface Stability {
  /** Since when (server's clock) the replica has been running, without a break; absent while it is not. */
  runningSince?: number;
  /** Since when (server's clock) it has been running with verified evidence, without a break; absent while it is not. */
  verifiedSince?: number;
  /** Running for the whole stability window: it counts as healthy. */
  runningStable: boolean;
  /** Running with verified evidence for the whole stability window: it counts as verified. */
  stable: boolean;
}

/**
 * A replica counts as healthy once it has been running for the window, and as verified once it
 * has been running with verified evidence for the window, measured on the server's clock: from
 * the receipt of the first report of an unbroken run of reports that show it so (the previous
 * report's times carry the run on), or — when the report's own clock agrees with the server's
 * within the tolerance — from its `deployedAt`, translated to the server's clock. A report
 * whose clock is further off proves nothing by its own times.
 */
export function replicaStability (input: StabilityInput): Stability {
  const { reportedAt, receivedAt, deployedAt, policy, previous } = input;
  const windowMs = policy.stabilityWindowSeconds * 1000;
  const clockAgrees = Math.abs(reportedAt - receivedAt) <= policy.clockToleranceSeconds * 1000;
  const claimed = clockAgrees && deployedAt !== undefined && deployedAt <= reportedAt ? receivedAt - (reportedAt - deployedAt) : receivedAt;
  // The reporter's deployedAt counts only for a replica seen for the first time — on a node the reporter
  // has not reported before: once the server has seen the node, a run (running, or running verified)
  // starts when a report first shows it, and a report in between showing it not running, not verified,
  // or not at all, starts the run again at that report.
  const firstSight = previous === undefined && input.nodeSeenBefore !== true;
  const since = (carried: number | undefined): number => (firstSight ? Math.min(receivedAt, claimed) : Math.min(carried ?? receivedAt, receivedAt));
  if (!input.running) return { runningStable: false, stable: false };
  const runningSince = since(previous?.runningSince);
  const runningStable = receivedAt - runningSince >= windowMs;
  if (!input.verified) return { runningSince, runningStable, stable: false };
  const verifiedSince = since(previous?.verifiedSince);
  return { runningSince, verifiedSince, runningStable, stable: receivedAt - verifiedSince >= windowMs };
}

/** How a replica that runs verified stands against the window, at `now` (the rollout view). */
export type StabilityState =
  | { state: 'stable' }
  | { state: 'not-yet-stable', elapsedSeconds: number, windowSeconds: number }
  | { state: 'waiting-for-report', stableSince: number };

export function stabilityStateOf (replica: { verifiedSince?: number, stable?: boolean }, windowSeconds: number, now: number): StabilityState | undefined {
  if (replica.stable === true) return { state: 'stable' };
  if (replica.verifiedSince === undefined) return undefined;
  const stableSince = replica.verifiedSince + windowSeconds * 1000;
  if (now >= stableSince) return { state: 'waiting-for-report', stableSince };
  return { state: 'not-yet-stable', elapsedSeconds: Math.max(0, Math.floor((now - replica.verifiedSince) / 1000)), windowSeconds };
}

// Progress and the deadline ---------------------------------------------------

/** The highest counts a rollout has reached, and when one of them last grew. */
export interface Progress {
  observed: number;
  healthy: number;
  verified: number;
  at: number;
}

type Counts = Pick<Progress, 'observed' | 'healthy' | 'verified'>;

export const initialProgress = (at: number): Progress => ({ observed: 0, healthy: 0, verified: 0, at });

/** Progress = the observed, healthy or verified count grew beyond anything reached before. */
export const hasProgressed = (progress: Counts, totals: Counts): boolean =>
  totals.observed > progress.observed || totals.healthy > progress.healthy || totals.verified > progress.verified;

/** States a rollout is still in progress in: the deadline applies to them only. */
const inProgress = new Set<TImmutableImageRolloutStatus>(['pending', 'deploying', 'verifying', 'rolling-back']);
export const isInProgress = (status: TImmutableImageRolloutStatus): boolean => inProgress.has(status);

/** The moment the progress deadline passes for a rollout last progressing at `lastProgressAt`. */
export const deadlineAt = (lastProgressAt: number, policy: Pick<EffectivePolicy, 'progressDeadlineSeconds'>): number =>
  lastProgressAt + policy.progressDeadlineSeconds * 1000;

/** The upstream reason that names what a rollout that ran out of time lacks. */
export function deadlineReason (required: number, totals: Counts): TImmutableImageMismatchReason {
  if (totals.observed < required) return 'required-replica-missing';
  if (totals.healthy < required) return 'replica-unhealthy';
  return 'runtime-attestation-missing';
}

/** The progress deadline's verdict: the rollout failed, why, and the times that decided it. */
export interface DeadlineDecision {
  at: number;
  reason: TImmutableImageMismatchReason;
  lastProgressAt: number;
  deadlineSeconds: number;
}

// Milestones and automatic rollback --------------------------------------------

/** The first time a rollout was seen failed or mismatched (before it ever succeeded). */
export interface FailureMilestone {
  status: 'failed' | 'mismatched';
  reason: TImmutableImageMismatchReason;
  at: number;
  /** report: a report made the status so; deadline: the progress deadline passed. */
  by: 'report' | 'deadline';
}

/** The trigger an outcome is, for the automatic rollback. */
export const triggerOf = (failure: FailureMilestone): TAutoRollbackTrigger =>
  failure.by === 'deadline' ? 'deadline' : failure.status === 'mismatched' ? 'mismatched' : 'failed';

/** A failure the rollout is in, or went through before ever succeeding: what kind, and why. */
export interface FiredTrigger {
  trigger: TAutoRollbackTrigger;
  status: 'failed' | 'mismatched';
  reason: TImmutableImageMismatchReason;
  by: 'report' | 'deadline';
}

/**
 * The triggers a rollout has met before ever succeeding: its progress deadline, once decided; its
 * first failure; and the failure it is in now, if another — a rollout that first failed on a
 * trigger the service did not choose may fail later on one it did.
 */
export function firedTriggers (
  lifecycle: Pick<RolloutLifecycle, 'succeededAt' | 'failure' | 'deadline'>,
  current: { status: TImmutableImageRolloutStatus, mismatchReason?: TImmutableImageMismatchReason | undefined }
): FiredTrigger[] {
  if (lifecycle.succeededAt !== undefined) return [];
  const fired: FiredTrigger[] = [];
  if (lifecycle.deadline) fired.push({ trigger: 'deadline', status: 'failed', reason: lifecycle.deadline.reason, by: 'deadline' });
  const first = lifecycle.failure;
  if (first) fired.push({ trigger: triggerOf(first), status: first.status, reason: first.reason, by: first.by });
  // After the deadline the status is `failed` because of it: that is the deadline trigger, not a replica's failure.
  if (!lifecycle.deadline && (current.status === 'failed' || current.status === 'mismatched')) {
    fired.push({ trigger: current.status, status: current.status, reason: current.mismatchReason ?? 'replica-failed', by: 'report' });
  }
  return fired;
}

/**
 * The trigger an automatic rollback follows, if any: the first fired trigger the service asks for,
 * unless the rollout is a rollback itself (a rollback is never rolled back automatically).
 */
export const autoRollbackCause = (plan: IImmutableImageDeploymentPlan, policy: EffectivePolicy, fired: readonly FiredTrigger[]): FiredTrigger | undefined =>
  plan.mode === 'rollback' || !policy.autoRollback.enabled ? undefined : fired.find((f) => policy.autoRollback.triggers.includes(f.trigger));

// Automatic promotion filter ----------------------------------------------------

const globCache = new Map<string, RegExp>();

/** A glob (`*`, `?`, the rest literal) as an anchored regular expression. */
function globRegExp (pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (!re) {
    const body = [...pattern].map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[\\^$.|+(){}[\]]/g, '\\$&'))).join('');
    re = new RegExp(`^${body}$`, 's');
    if (globCache.size > 1000) globCache.clear();
    globCache.set(pattern, re);
  }
  return re;
}

/** Why a pushed tag may not promote automatically under the service's filter; undefined when it may. */
export function tagFilterRefusal (policy: EffectivePolicy, tag: string): string | undefined {
  const { tagPattern, semverRange } = policy.automaticPromotion;
  if (tagPattern !== undefined && !globRegExp(tagPattern).test(tag)) return `tag '${tag}' does not match the pattern '${tagPattern}'`;
  if (semverRange !== undefined) {
    // A semantic version as written, with at most one leading `v` (`vv1.2.3` and `=1.2.3` are not versions).
    const bare = tag.startsWith('v') ? tag.slice(1) : tag;
    const version = /^\d/.test(bare) ? semver.valid(bare) : null;
    if (version === null) return `tag '${tag}' is not a semantic version (the range '${semverRange}' is set)`;
    if (!semver.satisfies(version, semverRange)) return `tag '${tag}' is outside the semver range '${semverRange}'`;
  }
  return undefined;
}

// Verified releases --------------------------------------------------------------

/** A rollout that succeeded (rolled back, for a rollback): its release is one the service may return to. */
export interface VerifiedRelease {
  rolloutId: string;
  generation: number;
  releaseId: string;
  requestedDigest: string;
  mode: IImmutableImageDeploymentPlan['mode'];
  succeededAt: number;
}

/** The service keeps this many of its latest verified releases. */
export const VERIFIED_RELEASES_KEPT = 20;

export const verifiedReleaseOf = (plan: IImmutableImageDeploymentPlan, succeededAt: number): VerifiedRelease => ({
  rolloutId: plan.rolloutId,
  generation: plan.rolloutGeneration,
  releaseId: plan.releaseId,
  requestedDigest: plan.requestedDigest,
  mode: plan.mode,
  succeededAt,
});

/** Where an abort or an automatic rollback returns to: the newest verified release that is not the digest deployed now. */
export function lastVerifiedRelease (
  verified: readonly VerifiedRelease[] | undefined,
  current: Pick<IImmutableImageDeploymentPlan, 'releaseId' | 'requestedDigest'> | undefined
): VerifiedRelease | undefined {
  return [...(verified ?? [])]
    .sort((a, b) => b.generation - a.generation)
    .find((v) => v.releaseId !== current?.releaseId && v.requestedDigest !== current?.requestedDigest);
}

/** When a succeeded rollout drifted, and how (docs/attestations.md "Revocation"). */
export interface DriftMilestone {
  at: number;
  kind: 'replica-mismatched' | 'replica-failed' | 'replica-missing';
  detail: string;
}

// The lifecycle state of a rollout, kept beside its status summary ------------------

/** What a follow-up (automatic rollback, deferred promotion) came to, once attempted. */
export interface FollowUp {
  at: number;
  outcome: string;
}

/**
 * A rollout's lifecycle, stored in its status summary: progress, milestones (each set once,
 * under compare-and-swap), follow-ups attempted, and whether the sweeper still has work.
 */
export interface RolloutLifecycle {
  progress: Progress;
  /** The first time the status was succeeded (rolled-back, for a rollback): sticky. */
  succeededAt?: number;
  /** The first time it was failed or mismatched before succeeding. */
  failure?: FailureMilestone;
  /** The progress deadline's verdict: the status is `failed` from then on. */
  deadline?: DeadlineDecision;
  autoRollback?: FollowUp;
  deferredPromotion?: FollowUp;
  /** A succeeded rollout that later stopped satisfying its evidence (once): its release is no longer verified, its attestation revoked. */
  drift?: DriftMilestone;
  /** +1 whenever a milestone or a follow-up is set: what closing the lifecycle compares. */
  changes: number;
  /** true while there is work for the sweeper: the deadline to watch, the history to write, a follow-up to make. */
  open: boolean;
}

export const initialLifecycle = (at: number): RolloutLifecycle => ({ progress: initialProgress(at), changes: 0, open: true });

/** A push that promotes automatically once the current rollout settles (the newest by first observation wins). */
export interface QueuedPromotion {
  releaseId: string;
  firstObservedAt: number;
  tag: string;
  eventId: string;
  /** Who pushed (the push event's actor, else the caller's subject). */
  pushedBy: string;
  queuedAt: number;
  /** The rollout it waits for. */
  afterRolloutId: string;
}

/**
 * A push whose automatic promotion met a closed window or stop-the-line (docs/governance.md "Windows"): the
 * newest waits on the service and the sweeper promotes it once promotions open again, under the push's own
 * idempotency key (one rollout per push, whoever promotes it).
 */
export interface WindowWait {
  releaseId: string;
  firstObservedAt: number;
  tag: string;
  eventId: string;
  pushedBy: string;
  /** When it started waiting, and the refusal it met last (`promotion-window-closed`, `stop-the-line`). */
  since: number;
  code: string;
  /** When the sweeper tries it again: the opening the window named, or shortly (stop-the-line names none). */
  retryAt: number;
}

/** A rollout is settled once it succeeded, failed by the deadline, or its status is failed / mismatched — or its deadline passed. */
export function isSettled (status: TImmutableImageRolloutStatus, lifecycle: RolloutLifecycle | undefined, policy: EffectivePolicy, now: number): boolean {
  if (lifecycle?.succeededAt !== undefined || lifecycle?.deadline !== undefined) return true;
  if (!isInProgress(status)) return true;
  return lifecycle !== undefined && now >= deadlineAt(lifecycle.progress.at, policy);
}
