import { issueManualRollout, type ManualRolloutDeps, type RolloutAnswer } from './manualRollout.js';
import type { Actor, Result } from '../domain/result.js';

export interface AbortInput {
  serviceId: string;
  idempotencyKey: string;
  /** The rollout being aborted and the service's generation: the abort applies only if both are still current. */
  expectedCurrentRolloutId: string;
  expectedRolloutGeneration: number;
  reason?: string;
}

/**
 * Abort the current rollout (DESIGN §5 "Lifecycle control"): a rollback to the last verified
 * release — the newest release whose rollout succeeded, other than the digest deployed now —
 * found when the rollback is planned. Same compare-and-swap, Idempotency-Key and automation hold
 * as a rollback; `no-verified-release` when there is nothing to return to. The history names it
 * an abort (the aborted rollout ends `aborted`).
 */
export const abort = (deps: ManualRolloutDeps) =>
  async function abortRollout (input: AbortInput, actor: Actor): Promise<Result<RolloutAnswer>> {
    return issueManualRollout(deps, {
      serviceId: input.serviceId,
      releaseId: '',
      idempotencyKey: input.idempotencyKey,
      expectedRolloutGeneration: input.expectedRolloutGeneration,
      reason: input.reason,
    }, { kind: 'rollback', expectedCurrentRolloutId: input.expectedCurrentRolloutId, toLastVerified: true }, actor, { kind: 'abort' });
  };
