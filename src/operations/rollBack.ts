import { issueManualRollout, type ManualRolloutDeps, type ManualRolloutInput, type RolloutAnswer } from './manualRollout.js';
import type { Actor, Result } from '../domain/result.js';

export interface RollBackInput extends ManualRolloutInput {
  /** The rollout being rolled back: the rollback only applies if it is still current. */
  expectedCurrentRolloutId: string;
}

/**
 * Roll back to a previously accepted release (DESIGN §5 "Rollback"): a rollout of mode
 * `rollback` naming the rollout it replaces; it puts automatic promotion on hold until the next
 * explicit promotion. Same compare-and-swap and Idempotency-Key rules as promotion.
 */
export const rollBack = (deps: ManualRolloutDeps) =>
  async function rollBackRelease (input: RollBackInput, actor: Actor): Promise<Result<RolloutAnswer>> {
    return issueManualRollout(deps, input, { kind: 'rollback', expectedCurrentRolloutId: input.expectedCurrentRolloutId }, actor);
  };
