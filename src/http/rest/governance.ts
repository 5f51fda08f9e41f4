import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GlobalGovernance } from '../../contracts/promotionPolicy.js';
import { GovernanceReply, PromotionRequestView } from '../governanceSchemas.js';
import { permissions } from '../../domain/principal.js';
import { Id } from '../../contracts/index.js';
import type { ApprovalOperations } from '../../operations/approvals.js';
import type { BreakGlassOperations } from '../../operations/breakGlass.js';
import type { GovernanceOperations } from '../../operations/governance.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf } from '../authorize.js';
import { withExample } from '../examples.js';
import { valueOf } from '../replies.js';
import { ServiceParams, withBody, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

const tags = ['governance'];

const RequestParams = Type.Object({ serviceId: Id, requestId: Id }, { additionalProperties: false });
const ApproveReply = Type.Object({
  promotionRequest: PromotionRequestView,
  service: Type.Optional(Type.Unknown({ description: 'the service as the issued rollout left it (from the approval that issued it)' })),
});
const approvalCodes = ['service-not-found', 'promotion-request-not-found', 'approval-not-allowed', 'promotion-request-void'] as const;

export interface GovernanceRoutesOptions {
  governance: GovernanceOperations;
  approvals: ApprovalOperations;
  breakGlass: BreakGlassOperations;
  verifier: TokenVerifier;
}

const Who = Type.Object({ subject: Type.String(), role: Type.String() });
const BreakGlassView = Type.Object({
  grantId: Type.String(),
  serviceId: Type.String(),
  releaseId: Type.String(),
  reason: Type.String(),
  requestedBy: Who,
  createdAt: Type.Integer(),
  approvedBy: Type.Optional(Type.Object({ ...Who.properties, at: Type.Integer() })),
  state: Type.Union([Type.Literal('awaiting-approval'), Type.Literal('active'), Type.Literal('used'), Type.Literal('expired')]),
  until: Type.Optional(Type.Integer({ description: 'awaiting-approval: approve by then; active: usable until then; expired: since then' })),
  usedBy: Type.Optional(Type.Object({ rolloutId: Type.String(), at: Type.Integer() })),
});
const GrantReply = withExample(Type.Object({ grant: BreakGlassView }), {
  grant: {
    grantId: 'bg_Yk3pQ8sV1tZx9wR2',
    serviceId: 'svc_Q2hlY2tvdXQx',
    releaseId: 'rel_3f2a9c1d4e5b6a7f8091a2b3',
    reason: 'hotfix for incident 4711: checkout fails for EU cards',
    requestedBy: { subject: 'ci-release-bot', role: 'api' },
    createdAt: 1_764_324_000_000,
    approvedBy: { subject: 'alice@example.com', role: 'admin', at: 1_764_324_300_000 },
    state: 'active',
    until: 1_764_326_100_000,
  },
});
const GrantParams = Type.Object({ serviceId: Id, grantId: Id }, { additionalProperties: false });
const GrantBody = withExample(Type.Object({
  releaseId: Id,
  reason: Type.String({ minLength: 1, maxLength: 1024, description: 'why the freeze must be broken (kept with the grant and the rollout)' }),
}, { additionalProperties: false }), { releaseId: 'rel_3f2a9c1d4e5b6a7f8091a2b3', reason: 'hotfix for incident 4711: checkout fails for EU cards' });

/** REST: break-glass grants (docs/governance.md "Break-glass"). */
const breakGlassRoutes: FastifyPluginAsyncTypebox<GovernanceRoutesOptions> = async (app, { breakGlass, verifier }) => {
  const guard = guardWith(verifier);
  const base = '/v1/services/:serviceId/break-glass';
  const codes = ['service-not-found', 'break-glass-not-available'] as const;
  app.post(base, guard(permissions.promote, {
    tags,
    summary: 'Request a break-glass grant: one promotion of a release through a closed window (admin, api)',
    description: 'Needs `breakGlass.allowed` in the service\'s promotion policy and a reason; another principal approves it within' +
      ' `maxSeconds`, and from then it lets one promotion of that release (header `Break-Glass-Grant`) pass the windows for `maxSeconds`.' +
      ' Never stop-the-line.',
    params: ServiceParams,
    body: GrantBody,
    response: { ...replies(GrantReply, withBody, codes, ['release-not-found']), 201: GrantReply },
  }), async (request, reply) => {
    const created = valueOf(await breakGlass.request(request.params.serviceId, request.body, actorOf(request)), reply, '/body');
    return reply.code(201).send(created);
  });

  app.get(`${base}/:grantId`, guard(permissions.readServices, {
    tags,
    summary: 'A break-glass grant and its state',
    description: '`awaiting-approval`, `active` (until `until`), `used` (by `usedBy.rolloutId`) or `expired`.',
    params: GrantParams,
    response: replies(GrantReply, withInput, codes),
  }), async ({ params }, reply) => valueOf(await breakGlass.get(params.serviceId, params.grantId), reply, '/params'));

  app.post(`${base}/:grantId/approve`, guard(permissions.approvePromotions, {
    tags,
    summary: 'Approve a break-glass grant (another principal; one the approval policy admits, or an admin)',
    description: 'Never the requester (`approval-not-allowed`, `self-approval`); within `maxSeconds` of the request. Its time box starts now.',
    params: GrantParams,
    response: replies(GrantReply, withInput, codes, ['approval-not-allowed']),
  }), async (request, reply) => valueOf(await breakGlass.approve(request.params.serviceId, request.params.grantId, actorOf(request)), reply, '/params'));
};

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

const StageVerdictView = Type.Object({
  serviceId: Type.String(),
  soakSeconds: Type.Integer(),
  satisfied: Type.Boolean(),
  missing: Type.Optional(Type.String({ description: 'never-promoted, not-succeeded, not-soaked, failed, revoked, rolled-back' })),
  rolloutId: Type.Optional(Type.String()),
}, { additionalProperties: true, description: 'the stage\'s verdict for the digest, with the facts that say so (docs/governance.md "Pipelines")' });
const PipelineReply = Type.Object({
  serviceId: Type.String(),
  digest: Type.Union([Type.String(), Type.Null()]),
  allowed: Type.Boolean({ description: 'whether the pipeline lets a promotion of the digest through now' }),
  eligibleAt: Type.Optional(Type.Integer({ description: 'when it became (or, while stages soak, will become) eligible' })),
  stages: Type.Array(StageVerdictView),
}, {
  examples: [{
    serviceId: 'svc_prod',
    digest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
    allowed: false,
    eligibleAt: 1_767_229_200_000,
    stages: [{ serviceId: 'svc_staging', soakSeconds: 3600, satisfied: false, missing: 'not-soaked', rolloutId: 'ro_8kYd2LqP0xVt' }]
  }]
});
const PipelineQuery = Type.Object({ digest: Type.Optional(Type.String({ pattern: '^sha256:[0-9a-f]{64}$' })) }, { additionalProperties: false });

/** REST: the global governance policy — windows for every service and stop-the-line (docs/governance.md). */
export const governanceRoutes: FastifyPluginAsyncTypebox<GovernanceRoutesOptions> = async (app, options) => {
  const { governance, verifier } = options;
  await app.register(approvalRoutes, options);
  await app.register(breakGlassRoutes, options);
  const guard = guardWith(verifier);
  app.get('/v1/services/:serviceId/pipeline', guard(permissions.readServices, {
    tags,
    summary: 'Where a digest stands in each upstream stage of the service\'s pipeline',
    description: 'For `digest` (default: the service\'s newest release): each stage\'s verdict — satisfied, or what is missing' +
      ' (never promoted, not succeeded, not soaked with the time left, failed, revoked, rolled back) — and whether a promotion would pass now.',
    params: ServiceParams,
    querystring: PipelineQuery,
    response: replies(PipelineReply, withInput, ['service-not-found']),
  }), async ({ params, query }, reply) => valueOf(await governance.pipeline(params.serviceId, query.digest), reply, '/querystring'));

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
