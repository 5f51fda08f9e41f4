import { Type, type Static } from '@sinclair/typebox';
import {
  IImageRolloutStatus, IImmutableImageDeploymentPlan, TImmutableImageMismatchReason,
} from '../contracts/index.js';
import { literalUnion } from '../contracts/literals.js';
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
 * - node-not-reported: a target node that no reporter of this rollout covers (all its replicas are missing);
 * - replicas-missing: a covered node with fewer counted replicas than replicasPerNode;
 * - replica-unhealthy: a counted replica that is not healthy (starting, unhealthy or failed);
 * - replica-unverified: a counted replica whose runtime evidence does not verify against the plan.
 */
export const BlockingKind = literalUnion(['node-not-reported', 'replicas-missing', 'replica-unhealthy', 'replica-unverified']);
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
  Type.Object({ replicas: Type.Array(ReplicaDetail, { description: 'per-replica detail of that report, as the server re-verified it' }) }),
]);
export type RolloutReporterView = Static<typeof RolloutReporterView>;

export const RolloutView = Type.Object({
  serviceId: Type.String(),
  plan: Type.Optional(IImmutableImageDeploymentPlan),
  status: Type.Optional(IImageRolloutStatus),
  revision: Type.Integer({ description: 'the status revision: +1 on every status change; the `id` of the SSE events' }),
  reporters: Type.Array(RolloutReporterView),
  blocking: Type.Array(BlockingReason, { description: 'why the rollout has not succeeded yet; empty once succeeded / rolled-back or without a plan' }),
  automationHold: Type.Optional(AutomationHold),
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
}

const FINISHED = new Set<string>(['succeeded', 'rolled-back']);

const KIND_ORDER: Record<BlockingKind, number> = {
  'node-not-reported': 0,
  'replicas-missing': 1,
  'replica-unhealthy': 2,
  'replica-unverified': 3,
};

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
  return `${which} does not run the planned digest: ${reason}${replica.counted ? '' : ' (an extra running replica: it still blocks)'}`;
};

/** What one replica contributes to the blocking list: counted replicas that are not healthy or not verified, extra running mismatches. */
function replicaBlocking (replica: ReplicaDetail, reporterId: string): BlockingReason[] {
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
  }
  return reasons;
}

/**
 * Why the rollout has not succeeded (or rolled back) yet, in a deterministic order
 * (node name, then deployment id; node-level entries first). Empty when there is no
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
  evidence: Evidence
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
      result.push(...replicaBlocking(replica, r.reporterId));
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

  return result.sort((a, b) =>
    compareNames(a.nodeName ?? '', b.nodeName ?? '') ||
    compareNames(a.deploymentId ?? '', b.deploymentId ?? '') ||
    KIND_ORDER[a.kind] - KIND_ORDER[b.kind] ||
    compareNames(a.reporterId ?? '', b.reporterId ?? ''));
}

/** The reporters of the current rollout (sorted by reporter id) with their evidence detail. */
function reporterViews (
  plan: IImmutableImageDeploymentPlan | undefined,
  status: IImageRolloutStatus | undefined,
  evidence: Evidence
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
        .map((x) => ({ ...x })),
    }));
}

export function rolloutView (input: RolloutViewInput): RolloutView {
  const { plan, status, evidence } = input;
  return {
    serviceId: input.serviceId,
    plan,
    status,
    revision: input.revision,
    reporters: reporterViews(plan, status, evidence),
    blocking: blockingReasons(plan, status, evidence),
    automationHold: input.automationHold,
  };
}
