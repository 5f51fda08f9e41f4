import { issueManualRollout, type ManualRolloutDeps, type ManualRolloutInput, type RolloutAnswer } from './manualRollout.js';
import type { Actor, Result } from '../domain/result.js';

export interface PromoteInput extends ManualRolloutInput {
  /** When given, the promotion only applies if this is still the current rollout. */
  expectedCurrentRolloutId?: string;
}

/**
 * Promote a release (DESIGN §5 "Promotion"): a new immutable-digest rollout of the release, under
 * compare-and-swap on the generation and Idempotency-Key semantics (src/operations/issueRollout.ts).
 * An explicit promotion lifts the automation hold a rollback set.
 */
export const promote = (deps: ManualRolloutDeps) =>
  async function promoteRelease (input: PromoteInput, actor: Actor): Promise<Result<RolloutAnswer>> {
    return issueManualRollout(deps, input, { kind: 'promotion', mode: 'promotion', expectedCurrentRolloutId: input.expectedCurrentRolloutId }, actor);
  };
