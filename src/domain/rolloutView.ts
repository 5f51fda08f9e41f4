import { Type, type Static } from '@sinclair/typebox';
import {
  IImageRolloutStatus, IImmutableImageDeploymentPlan, TImmutableImageMismatchReason,
} from '../contracts/index.js';
import { literalUnion } from '../contracts/literals.js';
import { TAutoRollbackTrigger } from '../contracts/rolloutPolicy.js';
import { deadlineAt, isInProgress, stabilityStateOf, type EffectivePolicy, type QueuedPromotion, type RolloutLifecycle } from './lifecycle.js';
import { compareNames } from './names.js';
import { AutomationHold } from './rollouts.js';
import { ReplicaCountFields, ReplicaDetail } from './rolloutStatus.js';

/**
 * The rollout view (GET /v1/services/:id/rollout): the plan, the stored status, each
 * reporter's evidence freshness with its per-replica detail, and — while the rollout
 * is not finished — the list of what keeps it from success. Pure functions of what the
 * service document holds; no I/O.
 */

/**
 * - progress-deadline-exceeded: the rollout made no progress for its deadline and failed (sticky);
 * - node-not-reported: a target node that no reporter of this rollout covers (all its replicas are missing);
 * - replicas-missing: a covered node with fewer counted replicas than replicasPerNode;
 * - replica-unhealthy: a counted replica that is not healthy (starting, unhealthy or failed);
 * - replica-unverified: a counted replica whose runtime evidence does not verify against the plan;
 * - replica-not-stable: a counted replica running verified, but not yet for the stability window
 *   ("not yet stable, N s of M s"), or for long enough with no report since ("waiting for a report").
 */
export const BlockingKind = literalUnion([
  'progress-deadline-exceeded', 'node-not-reported', 'replicas-missing', 'replica-unhealthy', 'replica-unverified', 'replica-not-stable',
]);
export type BlockingKind = Static<typeof BlockingKind>;

export const BlockingReason = Type.Object({
  kind: BlockingKind,
  reason: TImmutableImageMismatchReason,
  nodeName: Type.Optional(Type.String()),
  deploymentId: Type.Optional(Type.String()),
  reporterId: Type.Optional(Type.String()),
  missingReplicaCount: Type.Optional(Type.Integer({ description: 'for the required-replica-missing kinds: how many required replicas the node lacks' })),
  detail: Type.String(),
});
export type BlockingReason = Static<typeof BlockingReason>;

/** Where a replica running verified stands against the stability window, at the time of the read. */
export const ReplicaStability = Type.Object({
  state: literalUnion(['stable', 'not-yet-stable', 'waiting-for-report']),
  windowMs: Type.Integer({ description: 'the service\'s stability window' }),
  runningVerifiedSince: Type.Optional(Type.Integer({ description: 'since when it has run verified, without a break (ms, server\'s clock)' })),
  stableAt: Type.Optional(Type.Integer({ description: 'when the window is (was) over (ms): a report received after it counts the replica' })),
});
export type ReplicaStability = Static<typeof ReplicaStability>;

export const ReplicaView = Type.Composite([ReplicaDetail, Type.Object({ stability: Type.Optional(ReplicaStability) })]);
export type ReplicaView = Static<typeof ReplicaView>;

export const RolloutReporterView = Type.Composite([
  Type.Object({ reporterId: Type.String(), clusterId: Type.String(), reporterSessionId: Type.String() }),
  Type.Object({
    lastSequence: Type.Integer({ description: 'reportSequence of the latest accepted report' }),
    lastReportAt: Type.Integer({ description: 'reportedAt of the latest accepted report (ms, the reporter\'s clock)' }),
    lastReceivedAt: Type.Optional(Type.Integer({ description: 'when the server received that report (ms, the server\'s clock): the evidence age' })),
    observedGeneration: Type.Integer({ description: 'the rolloutGeneration that report was made for' }),
    nodeNames: Type.Array(Type.String()),
  }),
  ReplicaCountFields,
  Type.Object({ replicas: Type.Array(ReplicaView, { description: 'per-replica detail of that report, as the server re-verified it' }) }),
]);

const Milestone = Type.Object({
  status: literalUnion(['failed', 'mismatched']),
  reason: TImmutableImageMismatchReason,
  at: Type.Integer(),
  by: literalUnion(['report', 'deadline']),
});

/** The rollout's lifecycle: the settings in force, progress and its deadline, milestones, follow-ups. */
export const RolloutLifecycleView = Type.Object({
  policy: Type.Object({
    progressDeadlineSeconds: Type.Integer(),
    stabilityWindowSeconds: Type.Integer(),
    clockToleranceSeconds: Type.Integer(),
    autoRollback: Type.Object({ enabled: Type.Boolean(), triggers: Type.Array(TAutoRollbackTrigger) }),
    automaticPromotion: Type.Object({ tagPattern: Type.Optional(Type.String()), semverRange: Type.Optional(Type.String()) }),
  }, { description: 'the service\'s rolloutPolicy with every default filled in' }),
  lastProgressAt: Type.Integer({ description: 'when the observed, healthy or verified count last grew (ms; the rollout\'s start before that)' }),
  deadlineAt: Type.Optional(Type.Integer({ description: 'while in progress: when it fails unless it progresses first (ms)' })),
  succeededAt: Type.Optional(Type.Integer({ description: 'the first time it succeeded (rolled back): sticky' })),
  failure: Type.Optional(Milestone),
  deadlineExceeded: Type.Optional(Type.Object({
    at: Type.Integer(), reason: TImmutableImageMismatchReason, lastProgressAt: Type.Integer(), deadlineSeconds: Type.Integer(),
  })),
  automaticRollback: Type.Optional(Type.Object({ at: Type.Integer(), outcome: Type.String() })),
  deferredPromotion: Type.Optional(Type.Object({ at: Type.Integer(), outcome: Type.String() })),
  drift: Type.Optional(Type.Object({
    at: Type.Integer(), kind: literalUnion(['replica-mismatched', 'replica-failed', 'replica-missing']), detail: Type.String(),
  }, { description: 'it succeeded, then stopped satisfying its evidence: its release is no longer verified, its attestation revoked (docs/attestations.md)' })),
  queuedPromotion: Type.Optional(Type.Object({
    releaseId: Type.String(), tag: Type.String(), firstObservedAt: Type.Integer(), queuedAt: Type.Integer(), eventId: Type.String(),
  }, { description: 'the newest push waiting for this rollout to settle before it promotes automatically' })),
});
export type RolloutLifecycleView = Static<typeof RolloutLifecycleView>;
export type RolloutReporterView = Static<typeof RolloutReporterView>;

export const RolloutView = Type.Object({
  serviceId: Type.String(),
  plan: Type.Optional(IImmutableImageDeploymentPlan),
  status: Type.Optional(IImageRolloutStatus),
  revision: Type.Integer({ description: 'the status revision: +1 on every status change; the `id` of the SSE events' }),
  reporters: Type.Array(RolloutReporterView),
  blocking: Type.Array(BlockingReason, { description: 'why the rollout has not succeeded yet; empty once succeeded / rolled-back or without a plan' }),
  automationHold: Type.Optional(AutomationHold),
  lifecycle: Type.Optional(RolloutLifecycleView),
});
export type RolloutView = Static<typeof RolloutView>;

/** Per-replica detail of one reporter's latest accepted report, and when the server received it. */
export interface ReporterEvidence {
  reporterId: string;
  rolloutId: string;
  receivedAt: number;
  replicas: ReplicaDetail[];
}

/** What the view is made of: the plan, the status, and the reporters' stored reports. */
export interface RolloutViewInput {
  serviceId: string;
  plan?: IImmutableImageDeploymentPlan | undefined;
  status?: IImageRolloutStatus | undefined;
  revision: number;
  evidence?: readonly ReporterEvidence[] | undefined;
  automationHold?: AutomationHold | undefined;
  /** The current rollout's lifecycle, the service's effective settings, a push waiting, and the time of the read. */
  lifecycle?: RolloutLifecycle | undefined;
  policy?: EffectivePolicy | undefined;
  queued?: QueuedPromotion | undefined;
  now?: number;
}

const FINISHED = new Set<string>(['succeeded', 'rolled-back']);

const KIND_ORDER: Record<BlockingKind, number> = {
  'progress-deadline-exceeded': 0,
  'node-not-reported': 1,
  'replicas-missing': 2,
  'replica-unhealthy': 3,
  'replica-unverified': 4,
  'replica-not-stable': 5,
};

/**
 * The reasons that decide the outcome come first (issue 23: a mismatched rollout's decisive
 * `pulled-digest-mismatch` was the 11th of 16 lines): a deadline that failed the rollout, a replica
 * that failed, a replica whose evidence names another image — then what the rollout still waits for.
 */
const decisiveRank = (b: BlockingReason): number =>
  b.kind === 'progress-deadline-exceeded' || DECISIVE_REASON.test(b.reason) ? 0 : 1;
/** Evidence of another image or a broken one (not evidence still missing): the rollout cannot succeed as it stands. */
const DECISIVE_REASON = /mismatch|not-digest-pinned|inconsistent|^pull-failed$|^replica-failed$/;

/** The stability settings and the time the blocking reasons and stability states are judged at. */
interface StabilityClock { windowSeconds: number, now: number }

type Evidence = readonly ReporterEvidence[] | undefined;

/** Only the status, reporters and evidence of the current plan's rollout count. */
function currentOf (plan: IImmutableImageDeploymentPlan | undefined, status: IImageRolloutStatus | undefined, evidence: Evidence) {
  const reporters = plan && status?.rolloutId === plan.rolloutId ? status.reporters.filter((r) => r.rolloutId === plan.rolloutId) : [];
  const evidenceOf = new Map<string, ReporterEvidence>();
  for (const r of evidence ?? []) if (r.rolloutId === plan?.rolloutId) evidenceOf.set(r.reporterId, r);
  return { reporters, replicasOf: (reporterId: string): ReplicaDetail[] => evidenceOf.get(reporterId)?.replicas ?? [], evidenceOf };
}

const describeUnverified = (replica: ReplicaDetail, reason: string): string => {
  const which = `replica '${replica.deploymentId}' on node '${replica.nodeName}'`;
  if (replica.verification === 'pending') return `${which} is not verified yet: it is ${replica.deploymentStatus}, with no container to inspect`;
  if (replica.verification === 'missing') return `${which} has no verified runtime evidence yet (${reason})`;
  const runs = replica.runningDigest === undefined ? '' : ` (it runs ${replica.runningDigest})`;
  return `${which} does not run the planned digest: ${reason}${runs}${replica.counted ? '' : ' (an extra running replica: it still blocks)'}`;
};

const describeUnstable = (replica: ReplicaDetail, clock: StabilityClock): string => {
  const which = `replica '${replica.deploymentId}' on node '${replica.nodeName}'`;
  const state = stabilityStateOf(replica, clock.windowSeconds, clock.now);
  if (state?.state === 'waiting-for-report') {
    return `${which} has run verified for the ${clock.windowSeconds} s stability window: waiting for a report after it (the agent reports again)`;
  }
  const elapsed = state?.state === 'not-yet-stable' ? state.elapsedSeconds : 0;
  return `${which} is not yet stable: running verified ${Math.min(elapsed, clock.windowSeconds)} s of ${clock.windowSeconds} s`;
};

/** What one replica contributes to the blocking list: counted replicas that are not healthy or not verified, extra running mismatches. */
function replicaBlocking (replica: ReplicaDetail, reporterId: string, clock: StabilityClock): BlockingReason[] {
  const extraMismatch = !replica.counted && replica.verification === 'mismatched' && replica.deploymentStatus === 'running';
  if (!replica.counted && !extraMismatch) return [];
  const where = { nodeName: replica.nodeName, deploymentId: replica.deploymentId, reporterId };
  const reasons: BlockingReason[] = [];
  if (replica.counted && replica.health !== 'healthy') {
    reasons.push({
      kind: 'replica-unhealthy',
      reason: replica.health === 'failed' ? 'replica-failed' : 'replica-unhealthy',
      ...where,
      detail: `replica '${replica.deploymentId}' on node '${replica.nodeName}' is ${replica.health} (deployment status '${replica.deploymentStatus}')`,
    });
  }
  if (replica.verification !== 'verified') {
    const reason = replica.mismatchReason ?? 'runtime-attestation-missing';
    reasons.push({ kind: 'replica-unverified', reason, ...where, detail: describeUnverified(replica, reason) });
  } else if (replica.counted && replica.health === 'healthy' && replica.stable !== true) {
    reasons.push({ kind: 'replica-not-stable', reason: 'replica-unhealthy', ...where, detail: describeUnstable(replica, clock) });
  }
  return reasons;
}

/**
 * Why the rollout has not succeeded (or rolled back) yet, in a deterministic order: the decisive
 * reasons first (`decisiveRank`), then by node name, then deployment id (node-level entries first). Empty when there is no
 * plan or the status is `succeeded` / `rolled-back`.
 *
 * - a target node no reporter covers → `node-not-reported`, `required-replica-missing`,
 *   with the number of replicas it lacks (replicasPerNode);
 * - a covered node with fewer counted replicas than replicasPerNode → `replicas-missing`,
 *   `required-replica-missing`;
 * - a counted replica that is not healthy → `replica-unhealthy`, `replica-failed` when it
 *   failed, else `replica-unhealthy`;
 * - a counted replica that is not verified → `replica-unverified` with the replica's own
 *   mismatch reason (`runtime-attestation-missing` when it has none: no evidence).
 *
 * A replica can appear twice (unhealthy and unverified). Replicas that do not count
 * (beyond replicasPerNode, or of another rollout) do not block — except a RUNNING replica of this
 * rollout whose evidence does not verify, which blocks as `replica-unverified` wherever it stands.
 */
export function blockingReasons (
  plan: IImmutableImageDeploymentPlan | undefined,
  status: IImageRolloutStatus | undefined,
  evidence: Evidence,
  lifecycle?: Pick<RolloutLifecycle, 'deadline'>,
  clock: StabilityClock = { windowSeconds: 0, now: Date.now() }
): BlockingReason[] {
  if (!plan) return [];
  if (status && status.rolloutId === plan.rolloutId && FINISHED.has(status.status)) return [];
  const { reporters, replicasOf } = currentOf(plan, status, evidence);
  const perNode = plan.targetScope.replicasPerNode;
  const coveredBy = new Map<string, string>();
  for (const r of reporters) for (const node of r.reporterNodeNames) if (!coveredBy.has(node)) coveredBy.set(node, r.reporterId);

  const counted = new Map<string, number>();
  const result: BlockingReason[] = [];
  for (const r of reporters) {
    for (const replica of replicasOf(r.reporterId)) {
      if (replica.counted) counted.set(replica.nodeName, (counted.get(replica.nodeName) ?? 0) + 1);
      result.push(...replicaBlocking(replica, r.reporterId, clock));
    }
  }

  for (const node of plan.targetScope.targetNodeNames) {
    const reporterId = coveredBy.get(node);
    if (reporterId === undefined) {
      if (perNode > 0) {
        result.push({
          kind: 'node-not-reported',
          reason: 'required-replica-missing',
          nodeName: node,
          missingReplicaCount: perNode,
          detail: `no reporter covers node '${node}': ${perNode} required ${perNode === 1 ? 'replica' : 'replicas'} missing`,
        });
      }
      continue;
    }
    const have = counted.get(node) ?? 0;
    if (have < perNode) {
      const missing = perNode - have;
      result.push({
        kind: 'replicas-missing',
        reason: 'required-replica-missing',
        nodeName: node,
        reporterId,
        missingReplicaCount: missing,
        detail: `node '${node}' runs ${have} of ${perNode} required replicas: ${missing} missing`,
      });
    }
  }

  const deadline = lifecycle?.deadline;
  if (deadline) {
    result.push({
      kind: 'progress-deadline-exceeded',
      reason: deadline.reason,
      detail: `no progress for ${deadline.deadlineSeconds} s (last at ${new Date(deadline.lastProgressAt).toISOString()}): the rollout failed` +
        ` at ${new Date(deadline.at).toISOString()} (${deadline.reason}); promote again to retry`,
    });
  }

  return result.sort((a, b) =>
    decisiveRank(a) - decisiveRank(b) ||
    compareNames(a.nodeName ?? '', b.nodeName ?? '') ||
    compareNames(a.deploymentId ?? '', b.deploymentId ?? '') ||
    KIND_ORDER[a.kind] - KIND_ORDER[b.kind] ||
    compareNames(a.reporterId ?? '', b.reporterId ?? ''));
}

/** The reporters of the current rollout (sorted by reporter id) with their evidence detail. */
function reporterViews (
  plan: IImmutableImageDeploymentPlan | undefined,
  status: IImageRolloutStatus | undefined,
  evidence: Evidence,
  clock: StabilityClock
): RolloutReporterView[] {
  const { reporters, replicasOf, evidenceOf } = currentOf(plan, status, evidence);
  return [...reporters]
    .sort((a, b) => compareNames(a.reporterId, b.reporterId))
    .map((r) => ({
      reporterId: r.reporterId,
      clusterId: r.clusterId,
      reporterSessionId: r.reporterSessionId,
      lastSequence: r.reportSequence,
      lastReportAt: r.reportedAt,
      lastReceivedAt: evidenceOf.get(r.reporterId)?.receivedAt,
      observedGeneration: r.rolloutGeneration,
      nodeNames: [...r.reporterNodeNames],
      requiredReplicaCount: r.requiredReplicaCount,
      observedReplicaCount: r.observedReplicaCount,
      healthyReplicaCount: r.healthyReplicaCount,
      verifiedReplicaCount: r.verifiedReplicaCount,
      failedReplicaCount: r.failedReplicaCount,
      mismatchReason: r.mismatchReason,
      replicas: [...replicasOf(r.reporterId)]
        .sort((x, y) => compareNames(x.nodeName, y.nodeName) || compareNames(x.deploymentId, y.deploymentId))
        .map((x) => {
          const stability = stabilityStateOf(x, clock.windowSeconds, clock.now);
          if (!stability) return { ...x };
          const windowMs = clock.windowSeconds * 1000;
          const since = x.verifiedSince;
          const stableAt = since === undefined ? undefined : since + windowMs;
          return { ...x, stability: { state: stability.state, windowMs, runningVerifiedSince: since, stableAt } };
        }),
    }));
}

/** The lifecycle as the view shows it. */
function lifecycleView (input: RolloutViewInput, status: IImageRolloutStatus | undefined): RolloutLifecycleView | undefined {
  const { lifecycle, policy, plan } = input;
  if (!lifecycle || !policy || !plan) return undefined;
  const settled = lifecycle.succeededAt !== undefined || lifecycle.deadline !== undefined || (status !== undefined && !isInProgress(status.status));
  const queued = input.queued;
  return {
    policy,
    lastProgressAt: lifecycle.progress.at,
    deadlineAt: settled ? undefined : deadlineAt(lifecycle.progress.at, policy),
    succeededAt: lifecycle.succeededAt,
    failure: lifecycle.failure,
    deadlineExceeded: lifecycle.deadline,
    automaticRollback: lifecycle.autoRollback,
    deferredPromotion: lifecycle.deferredPromotion,
    drift: lifecycle.drift,
    // A push waits for whichever rollout is current (one it queued behind may have been replaced by another automatic one).
    queuedPromotion: queued
      ? { releaseId: queued.releaseId, tag: queued.tag, firstObservedAt: queued.firstObservedAt, queuedAt: queued.queuedAt, eventId: queued.eventId }
      : undefined,
  };
}

export function rolloutView (input: RolloutViewInput): RolloutView {
  const { plan, status, evidence } = input;
  const clock = { windowSeconds: input.policy?.stabilityWindowSeconds ?? 0, now: input.now ?? Date.now() };
  return {
    serviceId: input.serviceId,
    plan,
    status,
    revision: input.revision,
    reporters: reporterViews(plan, status, evidence, clock),
    blocking: blockingReasons(plan, status, evidence, input.lifecycle, clock),
    automationHold: input.automationHold,
    lifecycle: lifecycleView(input, status),
  };
}
