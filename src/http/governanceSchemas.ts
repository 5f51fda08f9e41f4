import { Type } from '@sinclair/typebox';
import { GlobalGovernance } from '../contracts/promotionPolicy.js';

/** The answers of the governance routes and methods (REST: src/http/rest/governance.ts; TypedRequest: typedRequest/governanceMethods.ts). */

export const GovernanceReply = Type.Object({
  governance: GlobalGovernance,
  updatedAt: Type.Optional(Type.Integer({ description: 'when it was last written (absent: never)' })),
  updatedBy: Type.Optional(Type.String({ description: 'the subject who last wrote it' })),
}, {
  examples: [{
    governance: {
      windows: [{ name: 'year-end', kind: 'deny', start: '2026-12-23T00:00', timeZone: 'Europe/Berlin', durationSeconds: 1_036_800 }],
      stopTheLine: { active: true, reason: 'incident 4711: payments degraded', by: 'alice@example.com', since: 1_767_225_600_000 },
    },
    updatedAt: 1_767_225_600_000,
    updatedBy: 'alice@example.com',
  }],
});

export const PromotionRequestView = Type.Object({
  requestId: Type.String(),
  serviceId: Type.String(),
  releaseId: Type.String(),
  intent: Type.String({ description: 'promotion, automatic-promotion, pipeline-promotion, rollback or abort' }),
  requester: Type.Object({ subject: Type.String(), role: Type.String() }),
  reason: Type.String(),
  expectedRolloutGeneration: Type.Integer({ description: 'the rollout is issued under this generation, or the request is void' }),
  createdAt: Type.Integer(),
  expiresAt: Type.Integer(),
  required: Type.Integer({ description: 'approvals needed, under the policy in force' }),
  approvals: Type.Array(Type.Object({ subject: Type.String(), role: Type.String(), at: Type.Integer() })),
  state: Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('issued'), Type.Literal('void')]),
  voidReason: Type.Optional(Type.Union([Type.Literal('expired'), Type.Literal('generation-moved')])),
  rolloutId: Type.Optional(Type.String({ description: 'the rollout the request issued' })),
});
