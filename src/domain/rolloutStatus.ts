import { Type, type Static } from '@sinclair/typebox';
import {
  IImageRolloutReporterStatus, TImmutableImageMismatchReason, TImmutableImageRolloutStatus,
  validateImageRolloutStatus,
  type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
} from '../contracts/index.js';
import { pick } from './objects.js';

/**
 * Rollout status as a pure function of the plan and each reporter's latest accepted report
 * (DESIGN §5 "Rollout status"), and the read models that describe it. The README's
 * transition table is `aggregateStatus`'s case analysis:
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

/** How many status changes the service document keeps for the SSE stream. */
export const STATUS_EVENTS_KEPT = 100;

/** The replica counts (and mismatch reason) of a reporter, a status, an event: the upstream fields. */
export const replicaCountKeys = [
  'requiredReplicaCount', 'observedReplicaCount', 'healthyReplicaCount', 'verifiedReplicaCount', 'failedReplicaCount', 'mismatchReason',
] as const;
export const ReplicaCountFields = Type.Pick(IImageRolloutReporterStatus, replicaCountKeys);
export type ReporterCounts = Static<typeof ReplicaCountFields>;

/** One status change, as the SSE stream sends it (`data` of an `event: status` frame). */
export const StatusEvent = Type.Composite([
  Type.Object({ revision: Type.Integer(), rolloutId: Type.String(), rolloutGeneration: Type.Integer(), status: TImmutableImageRolloutStatus }),
  ReplicaCountFields,
  Type.Object({ at: Type.Integer() }),
]);
export type StatusEvent = Static<typeof StatusEvent>;

export const ReplicaHealth = Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy'), Type.Literal('failed')]);
export type ReplicaHealth = Static<typeof ReplicaHealth>;

export const ReplicaVerification = Type.Union([Type.Literal('verified'), Type.Literal('mismatched'), Type.Literal('missing'), Type.Literal('other-rollout')], {
  description: 'recomputed by the server from the raw evidence (the reporter\'s own claim is ignored)',
});
export type ReplicaVerification = Static<typeof ReplicaVerification>;

/** One reported replica as the server judged it. */
export const ReplicaDetail = Type.Object({
  nodeName: Type.String(),
  deploymentId: Type.String(),
  deploymentStatus: Type.String({ description: 'the deployment status Coreflow reported (running, starting, failed, …)' }),
  health: ReplicaHealth,
  verification: ReplicaVerification,
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
  counted: Type.Boolean({ description: 'counts toward the rollout (false: beyond replicasPerNode on its node, or of another rollout)' }),
});
export type ReplicaDetail = Static<typeof ReplicaDetail>;

/** Per-replica detail of one reporter's latest accepted report (stored beside the status). */
export interface ReporterEvidence {
  reporterId: string;
  clusterId: string;
  reportedAt: number;
  replicas: ReplicaDetail[];
}

export interface RolloutEvidence {
  rolloutId: string;
  reporters: ReporterEvidence[];
}

export const statusEventOf = (status: IImageRolloutStatus, revision: number, at: number): StatusEvent =>
  ({ revision, ...pick(status, ['rolloutId', 'rolloutGeneration', 'status', ...replicaCountKeys]), at });

/** What an SSE listener is told about: the aggregate, not each reporter's bookkeeping. */
export const aggregateKey = (s: IImageRolloutStatus): string => JSON.stringify([
  s.status, s.requiredReplicaCount, s.observedReplicaCount, s.healthyReplicaCount, s.verifiedReplicaCount, s.failedReplicaCount, s.mismatchReason ?? null,
]);

/** Counts one reporter's replicas. At most replicasPerNode replicas count per node; replicas of other rollouts never count. */
export function countReporterReplicas (
  plan: IImmutableImageDeploymentPlan,
  nodeNames: readonly string[],
  replicas: ReplicaDetail[]
): { counts: ReporterCounts, replicas: ReplicaDetail[] } {
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
  return {
    counts: {
      requiredReplicaCount: nodeNames.length * plan.targetScope.replicasPerNode,
      observedReplicaCount: mine.length,
      healthyReplicaCount: mine.filter((r) => r.health === 'healthy').length,
      verifiedReplicaCount: mine.filter((r) => r.verification === 'verified').length,
      failedReplicaCount: failed,
      mismatchReason: mismatch?.mismatchReason ?? (failed > 0 ? 'replica-failed' : undefined),
    },
    replicas: counted,
  };
}

type CountKey = 'observedReplicaCount' | 'healthyReplicaCount' | 'verifiedReplicaCount' | 'failedReplicaCount';

const sum = (reporters: IImageRolloutReporterStatus[], key: CountKey): number =>
  reporters.reduce((total, r) => total + r[key], 0);

interface Totals { required: number, observed: number, healthy: number, verified: number, failed: number }

/** The state table above, for counts that already passed the mismatch and failure rows. */
function progressState (totals: Totals, rollback: boolean): IImageRolloutStatus['status'] {
  const { required, observed, healthy, verified } = totals;
  if (required >= 1 && observed === required && healthy === required && verified === required) return rollback ? 'rolled-back' : 'succeeded';
  if (rollback) return 'rolling-back';
  if (required >= 1 && observed === required && healthy === required) return 'verifying';
  return observed > 0 ? 'deploying' : 'pending';
}

/** The aggregate status over every reporter's latest report. Never returns a status the upstream validator rejects. */
export function aggregateStatus (plan: IImmutableImageDeploymentPlan, reporters: IImageRolloutReporterStatus[], now: number): IImageRolloutStatus {
  const sorted = [...reporters].sort((a, b) => a.reporterId.localeCompare(b.reporterId));
  const totals: Totals = {
    required: plan.targetScope.requiredReplicaCount,
    observed: sum(sorted, 'observedReplicaCount'),
    healthy: sum(sorted, 'healthyReplicaCount'),
    verified: sum(sorted, 'verifiedReplicaCount'),
    failed: sum(sorted, 'failedReplicaCount'),
  };
  const rollback = plan.mode === 'rollback';
  const mismatched = sorted.find((r) => r.mismatchReason !== undefined && r.mismatchReason !== 'replica-failed');

  const build = (status: IImageRolloutStatus['status']): IImageRolloutStatus => ({
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    status,
    requiredReplicaCount: totals.required,
    observedReplicaCount: totals.observed,
    healthyReplicaCount: totals.healthy,
    verifiedReplicaCount: totals.verified,
    failedReplicaCount: totals.failed,
    mismatchReason: mismatched ? mismatched.mismatchReason : totals.failed > 0 ? 'replica-failed' : undefined,
    updatedAt: now,
    reporters: sorted,
  });

  const status = mismatched ? 'mismatched' : totals.failed > 0 ? 'failed' : progressState(totals, rollback);
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
