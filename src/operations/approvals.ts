import type { IService } from '../contracts/index.js';
import {
  approvalsFor, decideApproval, requestState, type Approval, type PrincipalRef, type RequestState,
} from '../domain/governance/approvals.js';
import { effectivePromotionPolicy, type EffectiveApprovals } from '../domain/governance/policy.js';
import { promotionApprovedEvent } from '../domain/events.js';
import type { Clock, Log, Repositories, StoredPromotionRequest } from '../domain/ports/index.js';
import { refusal, success, type Actor, type Result } from '../domain/result.js';
import { currentGeneration } from '../domain/rollouts.js';
import { errors } from '../errors.js';
import { recordQuietly, type RolloutIssuer } from './issueRollout.js';

/**
 * Approvals (docs/governance.md "Approvals"): a promotion the policy covers was made a promotion
 * request (src/operations/issueRollout.ts); approvals from distinct principals other than the requester
 * complete it, and the approval that reaches the quorum issues the rollout under the generation the
 * request named. Many approvals at once, in many processes: each subject's approval is added once
 * (the store's compare-and-swap), whoever sees the quorum issues under the request's own
 * Idempotency-Key (one rollout, whoever gets there), and the generation compare-and-swap voids a
 * request another rollout overtook.
 */

export interface ApprovalDeps {
  repos: Pick<Repositories, 'promotionRequests' | 'catalogue' | 'events'>;
  issuer: RolloutIssuer;
  now: Clock;
  log: Pick<Log, 'warn'>;
}

/** A promotion request as the API answers it. */
export interface PromotionRequestView {
  requestId: string;
  serviceId: string;
  releaseId: string;
  intent: StoredPromotionRequest['intent'];
  requester: { subject: string, role: string };
  reason: string;
  expectedRolloutGeneration: number;
  createdAt: number;
  expiresAt: number;
  required: number;
  approvals: Array<{ subject: string, role: string, at: number }>;
  state: RequestState['state'];
  voidReason?: 'expired' | 'generation-moved';
  rolloutId?: string;
}

export interface ApproveAnswer {
  promotionRequest: PromotionRequestView;
  /** The service as the issued rollout left it (only from the approval that issued it, or a replay of that). */
  service?: IService;
}

/** The key the request's rollout is issued under: exactly one rollout per request, whoever issues it (a control character: no client key collides). */
const issuingKeyOf = (requestId: string): string => `\u0001promotion-request:${requestId}`;

/** Under the policy in force: a policy that no longer asks for approvals needs none. */
const noApprovals: EffectiveApprovals = { required: 0, approvers: [], appliesTo: [], requestTtlSeconds: 0 };
const approvalsOf = (service: IService, request: StoredPromotionRequest): EffectiveApprovals =>
  approvalsFor(effectivePromotionPolicy(service.data.promotionPolicy), request.intent) ?? noApprovals;

function viewOf (request: StoredPromotionRequest, approvals: EffectiveApprovals, state: RequestState): PromotionRequestView {
  return {
    requestId: request.requestId,
    serviceId: request.serviceId,
    releaseId: request.releaseId,
    intent: request.intent,
    requester: { subject: request.requester.subject, role: request.requester.role },
    reason: request.rollout.reason,
    expectedRolloutGeneration: request.expectedRolloutGeneration,
    createdAt: request.createdAt,
    expiresAt: request.expiresAt,
    required: approvals.required,
    approvals: request.approvals.map((a) => ({ subject: a.approver.subject, role: a.approver.role, at: a.at })),
    state: state.state,
    ...(state.state === 'void' ? { voidReason: state.reason } : {}),
    ...(state.state === 'issued' ? { rolloutId: state.rolloutId } : {}),
  };
}

async function loadRequest (
  { repos }: ApprovalDeps, serviceId: string, requestId: string,
): Promise<{ service: IService, request: StoredPromotionRequest } | undefined> {
  const [service, request] = await Promise.all([repos.catalogue.findById(serviceId), repos.promotionRequests.find(serviceId, requestId)]);
  return service && request ? { service, request } : undefined;
}

/** Issues the request's rollout (or finds it issued under the request's key), and marks the request issued. */
async function issueApproved (deps: ApprovalDeps, request: StoredPromotionRequest, approvedBy: readonly Approval[]): Promise<Result<ApproveAnswer>> {
  const { repos } = deps;
  const by = approvedBy.map((a) => a.approver.subject).join(', ');
  const issued = await deps.issuer.issueRollout({
    serviceId: request.serviceId,
    releaseId: request.releaseId,
    idempotencyKey: issuingKeyOf(request.requestId),
    expectedRolloutGeneration: request.expectedRolloutGeneration,
    intent: request.rollout.intent,
    issuer: { ...request.requester, type: request.requester.type ?? 'human' },
    reason: `${request.rollout.reason} (promotion request ${request.requestId}, approved by ${by})`.slice(0, 1024),
    approvedRequest: {
      requestId: request.requestId,
      requestedBy: { subject: request.requester.subject, role: request.requester.role },
      approvedBy: approvedBy.map((a) => ({ subject: a.approver.subject, role: a.approver.role, at: a.at })),
    },
    ...(request.rollout.trigger ? { trigger: request.rollout.trigger } : {}),
  });
  if (!issued.ok) {
    const code = issued.error.code;
    if (code === 'rollout-generation-conflict' || code === 'current-rollout-mismatch') {
      const now = await repos.catalogue.findById(request.serviceId);
      return refusal(errors.promotionRequestVoid('generation-moved', request, now ? currentGeneration(now) : request.expectedRolloutGeneration + 1));
    }
    // Another approver is issuing it at this moment: the request is approved, its rollout on its way.
    if (code === 'idempotency-request-in-progress') {
      const approved: RequestState = { state: 'approved', approvedBy: [...approvedBy] };
      return success({ promotionRequest: viewOf(request, { ...noApprovals, required: approvedBy.length }, approved) });
    }
    return refusal(issued.error);
  }
  if (!issued.value.issued) return refusal(errors.internalError(new Error(`the approved request '${request.requestId}' issued nothing`)));
  const at = deps.now();
  await repos.promotionRequests.markIssued(request.requestId, { rolloutId: issued.value.rolloutId, at });
  const done = { ...request, issued: { rolloutId: issued.value.rolloutId, at } };
  const view = viewOf(done, approvalsOf(issued.value.service, request), { state: 'issued', rolloutId: issued.value.rolloutId, at });
  return success({ promotionRequest: view, service: issued.value.service });
}

/** The `promotion.approved` event of an approval this call added (before the rollout the quorum issues, if it does). */
async function recordApproval (deps: ApprovalDeps, request: StoredPromotionRequest, approvals: EffectiveApprovals, approver: PrincipalRef): Promise<void> {
  await recordQuietly(deps, request.serviceId, promotionApprovedEvent({
    requestId: request.requestId,
    releaseId: request.releaseId,
    digest: request.digest ?? '',
    expectedRolloutGeneration: request.expectedRolloutGeneration,
    intent: request.intent,
    required: approvals.required,
    expiresAt: request.expiresAt,
    at: deps.now(),
    approver: { subject: approver.subject, role: approver.role, ...(approver.type ? { type: approver.type } : {}) },
    approvals: request.approvals.length,
  }));
}

export function approvalOperations (deps: ApprovalDeps) {
  const { repos } = deps;
  const load = (serviceId: string, requestId: string) => loadRequest(deps, serviceId, requestId);
  const issue = (request: StoredPromotionRequest, approvedBy: readonly Approval[]) => issueApproved(deps, request, approvedBy);
  const stateOf = (service: IService, request: StoredPromotionRequest): RequestState =>
    requestState(approvalsOf(service, request), request, request.approvals, { at: deps.now(), currentGeneration: currentGeneration(service) });

  return {
    async list (serviceId: string): Promise<Result<{ promotionRequests: PromotionRequestView[] }>> {
      const service = await repos.catalogue.findById(serviceId);
      if (!service) return refusal(errors.serviceNotFound(serviceId));
      const requests = await repos.promotionRequests.list(serviceId, 50);
      return success({ promotionRequests: requests.map((r) => viewOf(r, approvalsOf(service, r), stateOf(service, r))) });
    },

    async get (serviceId: string, requestId: string): Promise<Result<{ promotionRequest: PromotionRequestView }>> {
      const found = await load(serviceId, requestId);
      if (!found) return refusal(errors.promotionRequestNotFound(serviceId, requestId));
      return success({ promotionRequest: viewOf(found.request, approvalsOf(found.service, found.request), stateOf(found.service, found.request)) });
    },

    /** One approval by the caller; the one that completes the quorum issues the rollout. */
    async approve (serviceId: string, requestId: string, actor: Actor): Promise<Result<ApproveAnswer>> {
      const found = await load(serviceId, requestId);
      if (!found) return refusal(errors.promotionRequestNotFound(serviceId, requestId));
      const { service, request } = found;
      const principal: PrincipalRef = { subject: actor.principal.subject, role: actor.principal.role, type: actor.principal.type };
      const approvals = approvalsOf(service, request);
      const decision = decideApproval(approvals, request, request.approvals, principal, { at: deps.now(), currentGeneration: currentGeneration(service) });
      if (decision.outcome === 'refused') {
        // The generation moved because this request's own rollout was issued (a crash before it was marked): finish marking it.
        if (decision.error.code === 'promotion-request-void' && await deps.issuer.committedUnder(serviceId, issuingKeyOf(requestId))) {
          return issue(request, request.approvals);
        }
        return refusal(decision.error);
      }
      if (decision.outcome === 'issued') return success({ promotionRequest: viewOf(request, approvals, stateOf(service, request)) });
      const added = decision.approval !== undefined && await repos.promotionRequests.addApproval(requestId, decision.approval);
      // Read again: approvals given at the same moment by others may have completed the quorum with this one.
      const after = await load(serviceId, requestId);
      if (!after) return refusal(errors.promotionRequestNotFound(serviceId, requestId));
      if (added) await recordApproval(deps, after.request, approvalsOf(after.service, after.request), principal);
      const state = stateOf(after.service, after.request);
      if (state.state === 'approved') return issue(after.request, state.approvedBy);
      return success({ promotionRequest: viewOf(after.request, approvalsOf(after.service, after.request), state) });
    },
  };
}

export type ApprovalOperations = ReturnType<typeof approvalOperations>;
