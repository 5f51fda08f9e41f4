import { randomBytes } from 'node:crypto';
import {
  approveBreakGlass, breakGlassRequestRefusal, breakGlassState, type BreakGlassGrant, type BreakGlassState,
} from '../domain/governance/breakGlass.js';
import { effectivePromotionPolicy } from '../domain/governance/policy.js';
import type { Clock, Repositories } from '../domain/ports/index.js';
import { refusal, success, type Actor, type Result } from '../domain/result.js';
import { errors } from '../errors.js';

/**
 * Break-glass grants (docs/governance.md "Break-glass"): a promotion by hand during a freeze, with a
 * reason and one approval from another principal, time-boxed. Requesting and approving are here; the
 * promotion that names the grant uses it up (src/operations/issueRollout.ts `useBreakGlass`).
 */

export interface BreakGlassDeps {
  repos: Pick<Repositories, 'breakGlassGrants' | 'catalogue' | 'releases'>;
  now: Clock;
}

/** A grant as the API answers it. */
export interface BreakGlassView {
  grantId: string;
  serviceId: string;
  releaseId: string;
  reason: string;
  requestedBy: { subject: string, role: string };
  createdAt: number;
  approvedBy?: { subject: string, role: string, at: number };
  state: 'awaiting-approval' | 'active' | 'used' | 'expired';
  /** awaiting-approval: approve by then; active: usable until then; expired: since then. */
  until?: number;
  usedBy?: { rolloutId: string, at: number };
}

/** The time a grant's state names: approve by (awaiting approval), usable until (active), expired since; none once used. */
function untilOf (state: BreakGlassState): number | undefined {
  switch (state.state) {
    case 'awaiting-approval': return state.approveBy;
    case 'active': return state.until;
    case 'expired': return state.at;
    case 'used': return undefined;
  }
}

export function breakGlassOperations ({ repos, now }: BreakGlassDeps) {
  async function serviceAndGrant (serviceId: string, grantId: string) {
    const [service, grant] = await Promise.all([repos.catalogue.findById(serviceId), repos.breakGlassGrants.find(serviceId, grantId)]);
    if (!service) return refusal(errors.serviceNotFound(serviceId));
    if (!grant) return refusal(errors.breakGlassNotAvailable('not-found', grantId));
    return success({ policy: effectivePromotionPolicy(service.data.promotionPolicy), grant });
  }

  const viewOf = (grant: BreakGlassGrant, maxSeconds: number): BreakGlassView => {
    const state = breakGlassState({ allowed: true, maxSeconds }, grant, now());
    const until = untilOf(state);
    return {
      grantId: grant.grantId,
      serviceId: grant.serviceId,
      releaseId: grant.releaseId,
      reason: grant.reason,
      requestedBy: { subject: grant.requester.subject, role: grant.requester.role },
      createdAt: grant.createdAt,
      ...(grant.approval ? { approvedBy: { subject: grant.approval.approver.subject, role: grant.approval.approver.role, at: grant.approval.at } } : {}),
      state: state.state,
      ...(until === undefined ? {} : { until }),
      ...(grant.used ? { usedBy: grant.used } : {}),
    };
  };

  return {
    /** A grant for one promotion of `releaseId`, waiting for another principal's approval. */
    async request (serviceId: string, input: { releaseId: string, reason: string }, actor: Actor): Promise<Result<{ grant: BreakGlassView }>> {
      const [service, release] = await Promise.all([repos.catalogue.findById(serviceId), repos.releases.findById(input.releaseId)]);
      if (!service) return refusal(errors.serviceNotFound(serviceId));
      if (!release || release.data.serviceId !== serviceId) return refusal(errors.releaseNotFound(serviceId, input.releaseId));
      const policy = effectivePromotionPolicy(service.data.promotionPolicy);
      const refused = breakGlassRequestRefusal(policy, input.reason);
      if (refused) return refusal(refused);
      const { subject, role, type } = actor.principal;
      const grant: BreakGlassGrant = {
        grantId: `bg_${randomBytes(12).toString('base64url')}`,
        serviceId,
        releaseId: input.releaseId,
        requester: { subject, role, type },
        reason: input.reason,
        createdAt: now(),
      };
      await repos.breakGlassGrants.create(grant);
      return success({ grant: viewOf(grant, policy.breakGlass.maxSeconds) });
    },

    async get (serviceId: string, grantId: string): Promise<Result<{ grant: BreakGlassView }>> {
      const found = await serviceAndGrant(serviceId, grantId);
      if (!found.ok) return found;
      return success({ grant: viewOf(found.value.grant, found.value.policy.breakGlass.maxSeconds) });
    },

    /** The one approval, by a principal other than the requester whom the policy admits; from then the grant's time box runs. */
    async approve (serviceId: string, grantId: string, actor: Actor): Promise<Result<{ grant: BreakGlassView }>> {
      const found = await serviceAndGrant(serviceId, grantId);
      if (!found.ok) return found;
      const { policy, grant } = found.value;
      const { subject, role, type } = actor.principal;
      const decided = approveBreakGlass(policy, grant, { subject, role, type }, now());
      if (!decided.ok) return refusal(decided.error);
      if (!await repos.breakGlassGrants.approve(grantId, decided.approval)) {
        return refusal(errors.approvalNotAllowed('already-approved', subject, grantId));
      }
      return success({ grant: viewOf({ ...grant, approval: decided.approval }, policy.breakGlass.maxSeconds) });
    },
  };
}

export type BreakGlassOperations = ReturnType<typeof breakGlassOperations>;
