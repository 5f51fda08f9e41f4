import type { IApprover, TGovernanceIntent } from '../../contracts/promotionPolicy.js';
import { errors, type AppError } from '../../errors.js';
import type { PrincipalType, Role } from '../principal.js';
import type { EffectiveApprovals, EffectivePromotionPolicy } from './policy.js';

/**
 * Approvals (separation of duties): a promotion the policy covers is not issued at once; it
 * becomes a promotion request bound to the generation it names, and N approvals from distinct
 * principals other than the requester issue it. The rules, as pure functions over the request
 * and its approvals (the store keeps both; one approval per request and subject is its unique
 * key):
 * - the requester can never approve their own request;
 * - only principals a policy entry admits may approve (a role, a subject, or both);
 * - each principal counts once (by subject, whatever role its token has);
 * - N approvals reached → the rollout is issued, under the compare-and-swap the request named;
 * - past `expiresAt` without its quorum → void (expired);
 * - the service's generation moved since the request → void (another rollout came first).
 * Approvals are counted under the policy in force when they are counted: an approver removed
 * from the policy no longer counts.
 */

export interface PrincipalRef {
  subject: string;
  role: Role;
  type?: PrincipalType;
}

export interface PromotionRequest {
  requestId: string;
  serviceId: string;
  releaseId: string;
  /** The release's digest (requests made before it was recorded lack it). */
  digest?: string;
  intent: TGovernanceIntent;
  requester: PrincipalRef;
  /** The generation the promotion expected: the rollout is issued under it, or not at all. */
  expectedRolloutGeneration: number;
  createdAt: number;
  expiresAt: number;
  /** Set once the rollout was issued (the store's compare-and-swap on the request). */
  issued?: { rolloutId: string, at: number };
}

export interface Approval {
  approver: PrincipalRef;
  at: number;
  /** The idempotency record that wrote it: the same approval re-run after a crash is a retry, not a duplicate. */
  key?: string;
}

/** The approvals `intent` needs under the policy; undefined when none (an automatic rollback never waits for one). */
export function approvalsFor (policy: EffectivePromotionPolicy, intent: TGovernanceIntent): EffectiveApprovals | undefined {
  const approvals = policy.approvals;
  if (approvals === undefined || intent === 'automatic-rollback') return undefined;
  return approvals.appliesTo.includes(intent) ? approvals : undefined;
}

/** When a request made at `createdAt` expires. */
export const requestExpiresAt = (approvals: EffectiveApprovals, createdAt: number): number => createdAt + approvals.requestTtlSeconds * 1000;

const admits = (entry: IApprover, principal: PrincipalRef): boolean =>
  (entry.role === undefined || entry.role === principal.role) && (entry.subject === undefined || entry.subject === principal.subject);

/** A policy entry admits the principal as an approver (the requester is ruled out separately). */
export const isApprover = (approvals: EffectiveApprovals, principal: PrincipalRef): boolean => approvals.approvers.some((e) => admits(e, principal));

/**
 * Whether the quorum can be reached at all for a request by `requester`: a role entry admits any
 * number of principals; named subjects only themselves, and never the requester. A request that
 * can never be approved is better refused when it is made.
 */
export function quorumReachable (approvals: EffectiveApprovals, requester: PrincipalRef): boolean {
  if (approvals.approvers.some((e) => e.subject === undefined)) return true;
  const others = new Set(approvals.approvers.map((e) => e.subject).filter((s) => s !== requester.subject));
  return others.size >= approvals.required;
}

/** The approvals that count: given within the request's life, by an admitted principal other than the requester, first per subject. */
export function countedApprovals (approvals: EffectiveApprovals, request: PromotionRequest, given: readonly Approval[]): Approval[] {
  const seen = new Set<string>();
  return [...given].sort((a, b) => a.at - b.at).filter((a) => {
    if (a.at < request.createdAt || a.at >= request.expiresAt) return false;
    if (a.approver.subject === request.requester.subject || !isApprover(approvals, a.approver) || seen.has(a.approver.subject)) return false;
    seen.add(a.approver.subject);
    return true;
  });
}

export type RequestState =
  | { state: 'issued', rolloutId: string, at: number }
  | { state: 'void', reason: 'expired' | 'generation-moved' }
  /** The quorum was reached in time and nothing is issued yet: issue now (a quorum reached in time survives the expiry). */
  | { state: 'approved', approvedBy: Approval[] }
  | { state: 'pending', approvedBy: Approval[], required: number, remaining: number };

export function requestState (
  approvals: EffectiveApprovals, request: PromotionRequest, given: readonly Approval[], now: { at: number, currentGeneration: number },
): RequestState {
  if (request.issued !== undefined) return { state: 'issued', ...request.issued };
  if (now.currentGeneration !== request.expectedRolloutGeneration) return { state: 'void', reason: 'generation-moved' };
  const approvedBy = countedApprovals(approvals, request, given);
  if (approvedBy.length >= approvals.required) return { state: 'approved', approvedBy: approvedBy.slice(0, approvals.required) };
  if (now.at >= request.expiresAt) return { state: 'void', reason: 'expired' };
  return { state: 'pending', approvedBy, required: approvals.required, remaining: approvals.required - approvedBy.length };
}

/** Why `principal` may not approve the request, if it may not. */
export function approvalRefusal (
  approvals: EffectiveApprovals, request: PromotionRequest, given: readonly Approval[], principal: PrincipalRef,
): 'self-approval' | 'not-an-approver' | 'already-approved' | undefined {
  if (principal.subject === request.requester.subject) return 'self-approval';
  if (!isApprover(approvals, principal)) return 'not-an-approver';
  if (given.some((a) => a.approver.subject === principal.subject)) return 'already-approved';
  return undefined;
}

export type ApprovalDecision =
  | { outcome: 'refused', error: AppError }
  /** Issued already: nothing to record; answer the request as it is. */
  | { outcome: 'issued', rolloutId: string }
  /** Record `approval`; the request still waits. */
  | { outcome: 'recorded', approval: Approval, remaining: number }
  /** Record `approval` (when present) and issue the rollout now, under the request's generation. */
  | { outcome: 'quorum-reached', approval?: Approval, approvedBy: Approval[] };

/**
 * What an approval by `principal` at `now.at` does. Concurrent approvers may each see the quorum
 * reached: the store's compare-and-swap on the request (`issued`) lets exactly one issue. Anyone
 * who approves a request whose quorum is reached but not yet issued (a crash in between) completes
 * the issuing; so does the same approval re-run under its idempotency record (`key`).
 */
export function decideApproval (
  approvals: EffectiveApprovals, request: PromotionRequest, given: readonly Approval[], principal: PrincipalRef,
  now: { at: number, currentGeneration: number, key?: string },
): ApprovalDecision {
  const before = requestState(approvals, request, given, now);
  if (before.state === 'issued') return { outcome: 'issued', rolloutId: before.rolloutId };
  if (before.state === 'void') return { outcome: 'refused', error: errors.promotionRequestVoid(before.reason, request, now.currentGeneration) };
  const retried = now.key === undefined ? undefined : given.find((a) => a.approver.subject === principal.subject && a.key === now.key);
  const refusal = approvalRefusal(approvals, request, given, principal);
  if (before.state === 'approved' && (retried !== undefined || refusal === 'already-approved')) {
    return { outcome: 'quorum-reached', approvedBy: before.approvedBy };
  }
  if (retried !== undefined && before.state === 'pending') return { outcome: 'recorded', approval: retried, remaining: before.remaining };
  if (refusal !== undefined) return { outcome: 'refused', error: errors.approvalNotAllowed(refusal, principal.subject, request.requestId) };
  const approval: Approval = { approver: principal, at: now.at, ...(now.key === undefined ? {} : { key: now.key }) };
  const after = requestState(approvals, request, [...given, approval], now);
  if (after.state === 'approved') return { outcome: 'quorum-reached', approval, approvedBy: after.approvedBy };
  return { outcome: 'recorded', approval, remaining: after.state === 'pending' ? after.remaining : approvals.required };
}
