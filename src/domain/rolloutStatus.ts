import type {
  IImageRolloutReporterStatus, IImageRolloutStatus, TImmutableImageMismatchReason, TImmutableImageRolloutStatus,
} from '../contracts/index.js';

/**
 * What the service document keeps beside the upstream `imageRolloutStatus`
 * (all written in the same single-document compare-and-swap):
 * - `statusRevision`: +1 on every change of the status (a new plan, an accepted report);
 * - `statusEvents`: the last STATUS_EVENTS_KEPT changes, oldest first — what the SSE stream
 *   sends, so that every listener in every process sees the same ordered changes;
 * - `rolloutEvidence`: per-replica detail of each reporter's latest accepted report — what
 *   the rollout view uses to say which replicas block success and why.
 */

export const STATUS_EVENTS_KEPT = 100;

/** The replica counts (and mismatch reason) of a reporter, a status, an event: the upstream fields. */
export type ReporterCounts = Pick<IImageRolloutReporterStatus,
  'requiredReplicaCount' | 'observedReplicaCount' | 'healthyReplicaCount' | 'verifiedReplicaCount' | 'failedReplicaCount' | 'mismatchReason'>;

export interface StatusEvent extends ReporterCounts {
  revision: number;
  rolloutId: string;
  rolloutGeneration: number;
  status: TImmutableImageRolloutStatus;
  at: number;
}

export type ReplicaHealth = 'healthy' | 'unhealthy' | 'failed';
export type ReplicaVerification = 'verified' | 'mismatched' | 'missing' | 'other-rollout';

export interface ReplicaDetail {
  nodeName: string;
  deploymentId: string;
  /** The deployment status Coreflow reported (running, starting, failed, …). */
  deploymentStatus: string;
  health: ReplicaHealth;
  /** Recomputed by the server from the raw evidence; the reporter's own claim is ignored. */
  verification: ReplicaVerification;
  mismatchReason?: TImmutableImageMismatchReason;
  /** Counted toward the rollout (false: beyond replicasPerNode on its node, or of another rollout). */
  counted: boolean;
}

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

export const statusEventOf = (status: IImageRolloutStatus, revision: number, at: number): StatusEvent => ({
  revision,
  rolloutId: status.rolloutId,
  rolloutGeneration: status.rolloutGeneration,
  status: status.status,
  requiredReplicaCount: status.requiredReplicaCount,
  observedReplicaCount: status.observedReplicaCount,
  healthyReplicaCount: status.healthyReplicaCount,
  verifiedReplicaCount: status.verifiedReplicaCount,
  failedReplicaCount: status.failedReplicaCount,
  ...(status.mismatchReason ? { mismatchReason: status.mismatchReason } : {}),
  at,
});
