import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GlobalGovernance } from '../../contracts/promotionPolicy.js';
import { permissions } from '../../domain/principal.js';
import { Id } from '../../contracts/index.js';
import type { ApprovalOperations } from '../../operations/approvals.js';
import type { GovernanceOperations } from '../../operations/governance.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf } from '../authorize.js';
import { withExample } from '../examples.js';
import { valueOf } from '../replies.js';
import { ServiceParams, withBody, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

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

const tags = ['governance'];

const PromotionRequestView = Type.Object({
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
const RequestParams = Type.Object({ serviceId: Id, requestId: Id }, { additionalProperties: false });
const ApproveReply = Type.Object({
  promotionRequest: PromotionRequestView,
  service: Type.Optional(Type.Unknown({ description: 'the service as the issued rollout left it (from the approval that issued it)' })),
});
const approvalCodes = ['service-not-found', 'promotion-request-not-found', 'approval-not-allowed', 'promotion-request-void'] as const;

export interface GovernanceRoutesOptions {
  governance: GovernanceOperations;
  approvals: ApprovalOperations;
  verifier: TokenVerifier;
}

/** REST: a service's promotion requests and their approvals (docs/governance.md "Approvals"). */
const approvalRoutes: FastifyPluginAsyncTypebox<GovernanceRoutesOptions> = async (app, { approvals, verifier }) => {
  const guard = guardWith(verifier);
  const base = '/v1/services/:serviceId/promotion-requests';
  app.get(base, guard(permissions.readServices, {
    tags,
    summary: 'A service\'s promotion requests, newest first (the last 50)',
    description: 'Each with its approvals and state under the policy in force: `pending`, `approved` (the quorum is reached, the rollout' +
      ' on its way), `issued` (with `rolloutId`) or `void` (`voidReason`: `expired`, `generation-moved`).',
    params: ServiceParams,
    response: replies(withExample(Type.Object({ promotionRequests: Type.Array(PromotionRequestView) }), answers.promotionRequests), withInput,
      ['service-not-found']),
  }), async ({ params }, reply) => valueOf(await approvals.list(params.serviceId), reply, '/params'));

  app.get(`${base}/:requestId`, guard(permissions.readServices, {
    tags,
    summary: 'One promotion request: its approvals and state',
    description: 'As listed; `promotion-request-not-found` when the service has no request of this id.',
    params: RequestParams,
    response: replies(withExample(Type.Object({ promotionRequest: PromotionRequestView }), answers.promotionRequest), withInput,
      ['promotion-request-not-found']),
  }), async ({ params }, reply) => valueOf(await approvals.get(params.serviceId, params.requestId), reply, '/params'));

  app.post(`${base}/:requestId/approve`, guard(permissions.approvePromotions, {
    tags,
    summary: 'Approve a promotion request; the approval that completes the quorum issues the rollout',
    description: 'Never the requester (`approval-not-allowed`, `self-approval`); only principals the service\'s policy admits' +
      ' (`not-an-approver`); each principal once (`already-approved`). The approval that completes the quorum issues the rollout' +
      ' under the generation the request named (`service` in the answer); a request another rollout overtook, or one that expired' +
      ' without its quorum, is void (`promotion-request-void`). Stop-the-line, the windows and the pipeline are asked again then.',
    params: RequestParams,
    response: replies(withExample(ApproveReply, answers.approved), withInput, approvalCodes, ['stop-the-line', 'promotion-window-closed',
      'pipeline-stage-not-satisfied']),
  }), async (request, reply) => valueOf(await approvals.approve(request.params.serviceId, request.params.requestId, actorOf(request)), reply, '/params'));
};

/** REST: the global governance policy — windows for every service and stop-the-line (docs/governance.md). */
export const governanceRoutes: FastifyPluginAsyncTypebox<GovernanceRoutesOptions> = async (app, options) => {
  const { governance, verifier } = options;
  await app.register(approvalRoutes, options);
  const guard = guardWith(verifier);
  app.get('/v1/governance', guard(permissions.readGovernance, {
    tags,
    summary: 'Read the global governance policy (admin, user, api)',
    description: 'The windows every service\'s promotions obey and stop-the-line; never written: `{ "governance": {} }`.',
    response: replies(GovernanceReply),
  }), async (_request, reply) => valueOf(await governance.readGlobal(), reply, ''));

  app.put('/v1/governance', guard(permissions.manageGovernance, {
    tags,
    summary: 'Replace the global governance policy (admin)',
    description: 'Windows (checked like a service\'s: `/body/governance/windows/0/rrule` …) and stop-the-line. Switching stop-the-line' +
      ' on needs a `reason`; the server stamps `by` (the caller) and `since` (now), kept while it stays on. While it is on, every' +
      ' promotion of every service is refused with 423 `stop-the-line`; rollbacks and aborts go through.',
    body: withExample(Type.Object({ governance: GlobalGovernance }, { additionalProperties: false }), {
      governance: {
        windows: [{ name: 'year-end', kind: 'deny', start: '2026-12-23T00:00', timeZone: 'Europe/Berlin', durationSeconds: 1_036_800 }],
        stopTheLine: { active: true, reason: 'incident 4711: payments degraded' },
      },
    }),
    response: replies(GovernanceReply, withBody),
  }), async (request, reply) => {
    const { principal } = actorOf(request);
    return valueOf(await governance.writeGlobal(request.body.governance, principal.subject), reply, '/body/governance');
  });
};
