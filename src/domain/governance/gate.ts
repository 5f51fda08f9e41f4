import type { GlobalGovernance, TGovernanceIntent } from '../../contracts/promotionPolicy.js';
import { errors, type AppError } from '../../errors.js';
import { breakGlassCovers, type BreakGlassGrant } from './breakGlass.js';
import { pipelineVerdict, type StageFacts } from './pipelines.js';
import type { EffectivePromotionPolicy } from './policy.js';
import { windowExemptIntents, windowState } from './windows.js';

/**
 * The governance rules as admission rules (docs/architecture.md: each a pure function of the intent and the
 * state, answering a refusal or nothing), in the order promotion admission runs them:
 *   1. freezeDecision  — stop-the-line, then the windows (global and the service's), which a
 *                        break-glass grant may pass;
 *   2. pipelineRefusal — the upstream stages;
 *   3. approvalsFor (approvals.ts) — when approvals are needed, a promotion request is made
 *                        (`approval-required`) instead of a rollout.
 * When the quorum is reached later, run 1 and 2 again before issuing: time has passed.
 * Rollbacks, aborts and automatic rollbacks pass 1 and 2 always.
 */

export interface FreezeInput {
  intent: TGovernanceIntent;
  at: number;
  global?: GlobalGovernance;
  policy: EffectivePromotionPolicy;
  serviceId: string;
  releaseId: string;
  /** The break-glass grant the caller names, if any. */
  breakGlass?: BreakGlassGrant;
}

export type FreezeDecision =
  | { pass: true, via: 'exempt' | 'open' }
  /** Passed a closed window by break-glass: the issuing must use the grant up (compare-and-swap on `used`). */
  | { pass: true, via: 'break-glass', grantId: string, until: number }
  /** Refused; `opensAt` tells waiting automation when to try again. */
  | { pass: false, error: AppError, opensAt?: number };

export function freezeDecision (input: FreezeInput): FreezeDecision {
  if (windowExemptIntents.includes(input.intent)) return { pass: true, via: 'exempt' };
  const stop = input.global?.stopTheLine;
  if (stop?.active === true) return { pass: false, error: errors.stopTheLine(stop) };
  const state = windowState({ global: input.global?.windows ?? [], service: input.policy.windows }, input.at, input.intent);
  if (state.open) return { pass: true, via: 'open' };
  if (input.breakGlass !== undefined) {
    const cover = breakGlassCovers(input.policy, input.breakGlass, input);
    // Whoever names a grant wants to hear why it does not pass, rather than that the window is closed.
    return cover.covers ? { pass: true, via: 'break-glass', grantId: cover.grantId, until: cover.until } : { pass: false, error: cover.error };
  }
  return {
    pass: false,
    error: errors.promotionWindowClosed(state.closedBy, state.opensAt, state.searchedUntil),
    ...(state.opensAt === undefined ? {} : { opensAt: state.opensAt }),
  };
}

/** The pipeline's refusal of promoting `digest` now, naming the first stage not satisfied; null when it may (or for a return to a known-good release). */
export function pipelineRefusal (
  digest: string, policy: EffectivePromotionPolicy, facts: readonly StageFacts[], at: number, intent: TGovernanceIntent,
): AppError | null {
  if (windowExemptIntents.includes(intent)) return null;
  const verdict = pipelineVerdict(digest, policy.pipeline, facts, at);
  return verdict.refusedBy === undefined || verdict.refusedBy.satisfied ? null : errors.pipelineStageNotSatisfied(digest, verdict.refusedBy);
}
