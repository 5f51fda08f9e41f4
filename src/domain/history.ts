import { Type, type Static } from '@sinclair/typebox';
import { IImmutableImageTargetScope, TImmutableImageRolloutMode, TSha256Digest } from '../contracts/index.js';
import { keyHashOfRolloutRef, type RolloutRecord } from './rollouts.js';

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
});
