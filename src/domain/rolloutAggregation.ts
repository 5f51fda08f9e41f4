import {
  validateImageRolloutStatus,
  type IImageRolloutReporterStatus, type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
  type TImmutableImageMismatchReason, type TImmutableImageRolloutStatus,
} from '../contracts/index.js';
import type { ReplicaDetail, ReporterCounts } from './rolloutStatus.js';

/**
 * Rollout status as a pure function of the plan and each reporter's latest
 * accepted report (DESIGN §5 "Rollout status"). The README's transition table
 * is this function's case analysis:
 *
 *   any replica whose evidence does not match the plan   → mismatched
 *   else any replica failed                              → failed
 *   else every required replica observed, healthy, verified,
 *        and validateImageRolloutStatus agrees            → succeeded   (rollback: rolled-back)
 *   else every required replica observed and healthy     → verifying   (rollback: rolling-back)
 *   else some replica observed                           → deploying   (rollback: rolling-back)
 *   else                                                 → pending     (rollback: rolling-back)
 *
 * Replicas on target nodes that no reporter covers count as missing: they are in
 * requiredReplicaCount and never in observedReplicaCount.
 */

/** Counts one reporter's replicas. At most replicasPerNode replicas count per node; replicas of other rollouts never count. */
export function countReporterReplicas (plan: IImmutableImageDeploymentPlan, nodeNames: readonly string[], replicas: ReplicaDetail[]): { counts: ReporterCounts, replicas: ReplicaDetail[] } {
  const perNode = new Map<string, number>();
  const counted: ReplicaDetail[] = [];
  // Stable order: node, then verified/healthy replicas first, so the best replicas are the counted ones.
  const rank = (r: ReplicaDetail): number => (r.verification === 'verified' ? 0 : 2) + (r.health === 'healthy' ? 0 : 1);
  const ordered = [...replicas].sort((a, b) => a.nodeName.localeCompare(b.nodeName) || rank(a) - rank(b) || a.deploymentId.localeCompare(b.deploymentId));
  for (const replica of ordered) {
    const used = perNode.get(replica.nodeName) ?? 0;
    const counts = replica.verification !== 'other-rollout' && used < plan.targetScope.replicasPerNode;
    if (counts) perNode.set(replica.nodeName, used + 1);
    counted.push({ ...replica, counted: counts });
  }
  const mine = counted.filter((r) => r.counted);
  const mismatch = mine.find((r) => r.verification === 'mismatched');
  const failed = mine.filter((r) => r.health === 'failed').length;
  const mismatchReason: TImmutableImageMismatchReason | undefined = mismatch?.mismatchReason ?? (failed > 0 ? 'replica-failed' : undefined);
  return {
    counts: {
      requiredReplicaCount: nodeNames.length * plan.targetScope.replicasPerNode,
      observedReplicaCount: mine.length,
      healthyReplicaCount: mine.filter((r) => r.health === 'healthy').length,
      verifiedReplicaCount: mine.filter((r) => r.verification === 'verified').length,
      failedReplicaCount: failed,
      ...(mismatchReason ? { mismatchReason } : {}),
    },
    replicas: counted,
  };
}

const sum = (reporters: IImageRolloutReporterStatus[], key: keyof ReporterCounts & `${string}Count`): number =>
  reporters.reduce((total, r) => total + r[key], 0);

/** The aggregate status over every reporter's latest report. Never returns a status the upstream validator rejects. */
export function aggregateStatus (plan: IImmutableImageDeploymentPlan, reporters: IImageRolloutReporterStatus[], now: number): IImageRolloutStatus {
  const sorted = [...reporters].sort((a, b) => a.reporterId.localeCompare(b.reporterId));
  const required = plan.targetScope.requiredReplicaCount;
  const observed = sum(sorted, 'observedReplicaCount');
  const healthy = sum(sorted, 'healthyReplicaCount');
  const verified = sum(sorted, 'verifiedReplicaCount');
  const failed = sum(sorted, 'failedReplicaCount');
  const rollback = plan.mode === 'rollback';
  const mismatched = sorted.find((r) => r.mismatchReason !== undefined && r.mismatchReason !== 'replica-failed');

  let status: TImmutableImageRolloutStatus;
  let mismatchReason: TImmutableImageMismatchReason | undefined;
  if (mismatched) {
    status = 'mismatched';
    mismatchReason = mismatched.mismatchReason;
  } else if (failed > 0) {
    status = 'failed';
    mismatchReason = 'replica-failed';
  } else if (required >= 1 && observed === required && healthy === required && verified === required) {
    status = rollback ? 'rolled-back' : 'succeeded';
  } else if (required >= 1 && observed === required && healthy === required) {
    status = rollback ? 'rolling-back' : 'verifying';
  } else if (observed > 0) {
    status = rollback ? 'rolling-back' : 'deploying';
  } else {
    status = rollback ? 'rolling-back' : 'pending';
  }

  const build = (s: TImmutableImageRolloutStatus): IImageRolloutStatus => ({
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    status: s,
    requiredReplicaCount: required,
    observedReplicaCount: observed,
    healthyReplicaCount: healthy,
    verifiedReplicaCount: verified,
    failedReplicaCount: failed,
    ...(mismatchReason ? { mismatchReason } : {}),
    updatedAt: now,
    reporters: sorted,
  });

  let result = build(status);
  let problems = validateImageRolloutStatus(result);
  if ((status === 'succeeded' || status === 'rolled-back') && problems.length > 0) {
    // Every replica looks verified, yet the evidence does not add up (e.g. one node in two reporters):
    // success must be proven, so stay short of it.
    result = build(rollback ? 'rolling-back' : 'verifying');
    problems = validateImageRolloutStatus(result);
  }
  if (problems.length > 0) throw new Error(`refusing to store an invalid rollout status: ${problems.join('; ')}`);
  return result;
}
