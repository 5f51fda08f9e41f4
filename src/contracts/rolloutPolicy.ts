/**
 * Project extension (not upstream): `data.rolloutPolicy`, a service's lifecycle settings —
 * how long a rollout may go without progress, how long a replica must stay running and
 * verified before it counts, when the server rolls back by itself, and which pushes may
 * promote automatically. Caller-writable (part of `TServiceWritableData`); every member is
 * optional and `effectiveRolloutPolicy` (src/domain/lifecycle.ts) fills in the defaults.
 */
import { Type, type Static } from '@sinclair/typebox';
import { strictObject } from './common.js';
import { literalUnion } from './literals.js';

export const rolloutPolicyDefaults = {
  progressDeadlineSeconds: 600,
  stabilityWindowSeconds: 10,
  clockToleranceSeconds: 5,
} as const;

export const rolloutPolicyLimits = {
  progressDeadlineSeconds: { minimum: 1, maximum: 7 * 24 * 3600 },
  stabilityWindowSeconds: { minimum: 0, maximum: 24 * 3600 },
  clockToleranceSeconds: { minimum: 0, maximum: 3600 },
  patternLength: 128,
  rangeLength: 256,
} as const;

/** What makes an automatic rollback fire: the rollout failed, its evidence mismatched, or its progress deadline passed. */
export const autoRollbackTriggers = ['failed', 'mismatched', 'deadline'] as const;
export const TAutoRollbackTrigger = literalUnion(autoRollbackTriggers);
export type TAutoRollbackTrigger = Static<typeof TAutoRollbackTrigger>;

export const IAutoRollbackPolicy = strictObject({
  enabled: Type.Boolean({ description: 'off by default' }),
  triggers: Type.Optional(Type.Array(TAutoRollbackTrigger, {
    minItems: 1,
    maxItems: autoRollbackTriggers.length,
    uniqueItems: true,
    description: 'which outcomes roll back (default: all three)',
  })),
});
export type IAutoRollbackPolicy = Static<typeof IAutoRollbackPolicy>;

export const IAutomaticPromotionPolicy = strictObject({
  tagPattern: Type.Optional(Type.String({
    minLength: 1,
    maxLength: rolloutPolicyLimits.patternLength,
    description: 'a glob over the pushed tag: `*` any run of characters, `?` one character, everything else literal (e.g. `v1.*`, `release-*`)',
  })),
  semverRange: Type.Optional(Type.String({
    minLength: 1,
    maxLength: rolloutPolicyLimits.rangeLength,
    description: 'a semver range (node-semver syntax, e.g. `^1.4.0`, `>=2 <3`): only tags that are semantic versions in it (a leading `v` is allowed)',
  })),
});
export type IAutomaticPromotionPolicy = Static<typeof IAutomaticPromotionPolicy>;

export const IRolloutPolicy = strictObject({
  progressDeadlineSeconds: Type.Optional(Type.Integer({
    ...rolloutPolicyLimits.progressDeadlineSeconds,
    description: 'a rollout that makes no progress (observed, healthy or verified count grows) for this long fails' +
      ` (default ${rolloutPolicyDefaults.progressDeadlineSeconds})`,
  })),
  stabilityWindowSeconds: Type.Optional(Type.Integer({
    ...rolloutPolicyLimits.stabilityWindowSeconds,
    description: `a replica counts as healthy and verified once it has run verified this long (default ${rolloutPolicyDefaults.stabilityWindowSeconds})`,
  })),
  clockToleranceSeconds: Type.Optional(Type.Integer({
    ...rolloutPolicyLimits.clockToleranceSeconds,
    description: 'how far a report\'s reportedAt may be from the server\'s receipt time for its deployedAt to count' +
      ` (default ${rolloutPolicyDefaults.clockToleranceSeconds})`,
  })),
  autoRollback: Type.Optional(IAutoRollbackPolicy),
  automaticPromotion: Type.Optional(IAutomaticPromotionPolicy),
});
export type IRolloutPolicy = Static<typeof IRolloutPolicy>;
