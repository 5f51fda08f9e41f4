import { Type, type Static } from '@sinclair/typebox';
import { IImmutableImageTargetScope, TImmutableImageMismatchReason, TImmutableImageRolloutMode, TSha256Digest } from '../contracts/index.js';
import { literalUnion } from '../contracts/literals.js';
import { keyHashOfRolloutRef, type RolloutRecord } from './rollouts.js';
import { RolloutTrustCheck } from './trust/releaseVerification.js';

/**
 * A rollout's outcome, from its milestones: succeeded (rolled-back, for a rollback) once it ever
 * did; else failed or mismatched (its first failure; `failedBy` says whether the deadline decided
 * it); else how it ended without an outcome (superseded, aborted, rolled-back by a later
 * rollout); else in-progress.
 */
export const RolloutOutcome = literalUnion(['in-progress', 'succeeded', 'rolled-back', 'failed', 'mismatched', 'superseded', 'aborted']);
export type RolloutOutcome = Static<typeof RolloutOutcome>;

export function outcomeOf (r: Pick<RolloutRecord, 'mode' | 'succeededAt' | 'failure' | 'ended'>): RolloutOutcome {
  if (r.succeededAt !== undefined) return r.mode === 'rollback' ? 'rolled-back' : 'succeeded';
  if (r.failure) return r.failure.status;
  if (r.ended) return r.ended.by === 'aborted' ? 'aborted' : r.ended.by === 'rolled-back' ? 'rolled-back' : 'superseded';
  return 'in-progress';
}

/** One entry of the rollout history (the audit trail): the plan and why it was issued. */
export const RolloutHistoryItem = Type.Object({
  rolloutId: Type.String(),
  generation: Type.Integer(),
  mode: TImmutableImageRolloutMode,
  releaseId: Type.String(),
  requestedDigest: TSha256Digest,
  digestPinnedImageReference: Type.String(),
  rollbackOfRolloutId: Type.Optional(Type.String()),
  previous: Type.Optional(Type.Object({ rolloutId: Type.String(), releaseId: Type.String(), requestedDigest: TSha256Digest })),
  targetScope: IImmutableImageTargetScope,
  issuedBy: Type.Object({ subject: Type.String(), role: Type.String(), type: Type.String() }),
  reason: Type.String(),
  automationHold: Type.Union([Type.Literal('set'), Type.Literal('cleared'), Type.Literal('unchanged')], {
    description: 'set: this rollback put automatic promotion on hold; cleared: this promotion lifted the hold',
  }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('applied')]),
  idempotencyKeyHash: Type.String({ description: 'hex sha256 of `<serviceId>\\u0000<Idempotency-Key>` of the request that issued it' }),
  createdAt: Type.Integer(),
  trigger: Type.Optional(Type.Object({
    kind: literalUnion(['abort', 'automatic-rollback', 'deferred-promotion', 'pipeline-promotion']),
    stages: Type.Optional(Type.Array(Type.String(), { description: 'pipeline-promotion: the upstream stages the digest passed' })),
    cause: Type.Optional(literalUnion(['failed', 'mismatched', 'deadline'])),
    ofRolloutId: Type.Optional(Type.String()),
    afterRolloutId: Type.Optional(Type.String()),
    reason: Type.Optional(Type.String()),
  }, { description: 'why the server issued it by itself: an abort, an automatic rollback (and its cause), a push that waited for a rollout' })),
  outcome: RolloutOutcome,
  succeededAt: Type.Optional(Type.Integer({ description: 'the first time it succeeded (rolled back): sticky' })),
  failedAt: Type.Optional(Type.Integer({ description: 'the first time it failed or mismatched before succeeding' })),
  failureReason: Type.Optional(TImmutableImageMismatchReason),
  failedBy: Type.Optional(literalUnion(['report', 'deadline'])),
  revokedAt: Type.Optional(Type.Integer({ description: 'it succeeded, then drifted: when its success (and its attestation) was revoked' })),
  endedAt: Type.Optional(Type.Integer({ description: 'when the next rollout replaced it' })),
  endedBy: Type.Optional(Type.Object({ kind: literalUnion(['superseded', 'rolled-back', 'aborted']), rolloutId: Type.String() })),
  trust: Type.Optional(RolloutTrustCheck),
  breakGlass: Type.Optional(Type.Object({
    grantId: Type.String(),
    reason: Type.String(),
    requestedBy: Type.String(),
    approvedBy: Type.String(),
    until: Type.Integer({ description: 'the end of the grant\'s time box' }),
  }, { description: 'the break-glass grant this promotion passed a closed window with (docs/governance.md)' })),
  approval: Type.Optional(Type.Object({
    requestId: Type.String(),
    requestedBy: Type.Object({ subject: Type.String(), role: Type.String() }),
    approvedBy: Type.Array(Type.Object({ subject: Type.String(), role: Type.String(), at: Type.Integer() })),
  }, { description: 'the promotion request whose approvals issued this rollout: its requester and approvers (docs/governance.md)' })),
});
export type RolloutHistoryItem = Static<typeof RolloutHistoryItem>;

export const RolloutHistoryPage = Type.Object({
  rollouts: Type.Array(RolloutHistoryItem),
  nextCursor: Type.Optional(Type.String()),
});
export type RolloutHistoryPage = Static<typeof RolloutHistoryPage>;

export const RolloutHistoryQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9]+$' })),
}, { additionalProperties: false });
export type RolloutHistoryQuery = Static<typeof RolloutHistoryQuery>;

/** A stored rollout as the history shows it. */
export const historyItemOf = (r: RolloutRecord): RolloutHistoryItem => ({
  rolloutId: r.rolloutId,
  generation: r.generation,
  mode: r.mode,
  releaseId: r.releaseId,
  requestedDigest: r.plan.requestedDigest,
  digestPinnedImageReference: r.plan.digestPinnedImageReference,
  rollbackOfRolloutId: r.plan.rollbackOfRolloutId,
  previous: r.previous,
  targetScope: r.plan.targetScope,
  issuedBy: r.issuedBy,
  reason: r.reason,
  automationHold: r.hold,
  state: r.state,
  idempotencyKeyHash: keyHashOfRolloutRef(r.idempotencyRecordId),
  createdAt: r.createdAt,
  trigger: r.trigger,
  outcome: outcomeOf(r),
  succeededAt: r.succeededAt,
  failedAt: r.failure?.at,
  failureReason: r.failure?.reason,
  failedBy: r.failure?.by,
  revokedAt: r.revokedAt,
  endedAt: r.ended?.at,
  endedBy: r.ended ? { kind: r.ended.by, rolloutId: r.ended.rolloutId } : undefined,
  trust: r.trust,
  breakGlass: r.breakGlass,
  approval: r.approval,
});
