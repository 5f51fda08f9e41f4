import type { TGovernanceIntent } from '../../contracts/promotionPolicy.js';
import { errors, type AppError, type BreakGlassUnavailable, type Problem } from '../../errors.js';
import { isApprover, type PrincipalRef } from './approvals.js';
import type { EffectivePromotionPolicy } from './policy.js';

/**
 * Break-glass: a promotion by hand while a window closes promotions, for a hotfix during a
 * freeze. It takes a reason and one approval from another principal, and it is time-boxed:
 * - a grant names the service and the release it is for, and why; the policy must allow it
 *   (`breakGlass.allowed`);
 * - a principal other than the requester approves it — one the approval policy admits, or an
 *   admin when the service has no approval policy — within `maxSeconds` of the request;
 * - from its approval it lets ONE promotion of that release pass the windows (global and the
 *   service's) for `maxSeconds`; the rollout it issues uses it up (the store's compare-and-swap
 *   on `used`).
 * It passes windows and nothing else: stop-the-line, pipelines, approvals of the promotion itself
 * and the trust policy still apply. Rollbacks and aborts need none (windows never block them).
 */

export interface BreakGlassGrant {
  grantId: string;
  serviceId: string;
  releaseId: string;
  requester: PrincipalRef;
  reason: string;
  createdAt: number;
  approval?: { approver: PrincipalRef, at: number };
  used?: { rolloutId: string, at: number };
}

export type BreakGlassState =
  | { state: 'awaiting-approval', approveBy: number }
  | { state: 'active', until: number }
  | { state: 'used', rolloutId: string, at: number }
  | { state: 'expired', at: number };

type BreakGlassPolicy = EffectivePromotionPolicy['breakGlass'];

export function breakGlassState (policy: BreakGlassPolicy, grant: BreakGlassGrant, at: number): BreakGlassState {
  if (grant.used !== undefined) return { state: 'used', ...grant.used };
  const boxMs = policy.maxSeconds * 1000;
  if (grant.approval !== undefined) {
    const until = grant.approval.at + boxMs;
    return at < until ? { state: 'active', until } : { state: 'expired', at: until };
  }
  const approveBy = grant.createdAt + boxMs;
  return at < approveBy ? { state: 'awaiting-approval', approveBy } : { state: 'expired', at: approveBy };
}

/** Why a break-glass grant cannot be requested: the policy does not allow it, or no reason is given. */
export function breakGlassRequestRefusal (policy: EffectivePromotionPolicy, reason: string): AppError | undefined {
  if (!policy.breakGlass.allowed) return errors.breakGlassNotAvailable('not-allowed');
  const problems: Problem[] = reason.trim() === '' ? [{ field: '/reason', message: 'break-glass needs a reason' }] : [];
  return problems.length > 0 ? errors.validationFailed(problems) : undefined;
}

/** An approval of the grant by `principal` at `at`: until when it then lasts, or why not. */
export function approveBreakGlass (
  policy: EffectivePromotionPolicy, grant: BreakGlassGrant, principal: PrincipalRef, at: number,
): { ok: true, approval: { approver: PrincipalRef, at: number }, until: number } | { ok: false, error: AppError } {
  if (!policy.breakGlass.allowed) return { ok: false, error: errors.breakGlassNotAvailable('not-allowed', grant.grantId) };
  if (principal.subject === grant.requester.subject) {
    return { ok: false, error: errors.approvalNotAllowed('self-approval', principal.subject, grant.grantId) };
  }
  const state = breakGlassState(policy.breakGlass, grant, at);
  if (state.state === 'active') return { ok: false, error: errors.approvalNotAllowed('already-approved', principal.subject, grant.grantId) };
  if (state.state !== 'awaiting-approval') return { ok: false, error: errors.breakGlassNotAvailable(state.state, grant.grantId) };
  const admitted = policy.approvals === undefined ? principal.role === 'admin' : isApprover(policy.approvals, principal);
  if (!admitted) return { ok: false, error: errors.approvalNotAllowed('not-an-approver', principal.subject, grant.grantId) };
  return { ok: true, approval: { approver: principal, at }, until: at + policy.breakGlass.maxSeconds * 1000 };
}

/** Whether the grant lets this promotion pass a closed window now, and until when; or why not. */
export function breakGlassCovers (
  policy: EffectivePromotionPolicy, grant: BreakGlassGrant, promotion: { serviceId: string, releaseId: string, intent: TGovernanceIntent, at: number },
): { covers: true, grantId: string, until: number } | { covers: false, error: AppError } {
  const refuse = (reason: BreakGlassUnavailable) => ({ covers: false as const, error: errors.breakGlassNotAvailable(reason, grant.grantId) });
  if (promotion.intent !== 'promotion') return refuse('not-a-promotion');
  if (!policy.breakGlass.allowed) return refuse('not-allowed');
  if (grant.serviceId !== promotion.serviceId || grant.releaseId !== promotion.releaseId) return refuse('other-release');
  const state = breakGlassState(policy.breakGlass, grant, promotion.at);
  if (state.state !== 'active') return refuse(state.state);
  return { covers: true, grantId: grant.grantId, until: state.until };
}
