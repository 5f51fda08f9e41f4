import type { IService } from '../contracts/index.js';
import { issuerOf, type RolloutIntent, type RolloutTrigger } from '../domain/rollouts.js';
import type { RolloutIssuer } from './issueRollout.js';
import { success, type Actor, type Result } from '../domain/result.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

export interface ManualRolloutDeps {
  issuer: RolloutIssuer;
  telemetry: Telemetry;
}

/** What promotion, rollback and abort answer: the service as the rollout left it. */
export interface RolloutAnswer {
  service: IService;
  rolloutId: string;
}

export interface ManualRolloutInput {
  serviceId: string;
  releaseId: string;
  idempotencyKey: string;
  expectedRolloutGeneration: number;
  /** Free text kept in the rollout history; part of the request for Idempotency-Key reuse detection. */
  reason?: string;
}

export interface PromoteInput extends ManualRolloutInput {
  /** When given, the promotion only applies if this is still the current rollout. */
  expectedCurrentRolloutId?: string;
  /** A break-glass grant that lets this promotion pass a closed window (docs/governance.md "Break-glass"). */
  breakGlassGrantId?: string;
}

export interface RollBackInput extends ManualRolloutInput {
  /** The rollout being rolled back: the rollback only applies if it is still current. */
  expectedCurrentRolloutId: string;
}

export interface AbortInput {
  serviceId: string;
  idempotencyKey: string;
  /** The rollout being aborted and the service's generation: the abort applies only if both are still current. */
  expectedCurrentRolloutId: string;
  expectedRolloutGeneration: number;
  reason?: string;
}

/**
 * Promote a release (docs/api.md "How promotion and rollback stay correct"): a new immutable-digest
 * rollout of the release, under compare-and-swap on the generation and Idempotency-Key semantics
 * (src/operations/issueRollout.ts). An explicit promotion lifts the automation hold a rollback set.
 */
export const promote = (deps: ManualRolloutDeps) =>
  async function promoteRelease (input: PromoteInput, actor: Actor): Promise<Result<RolloutAnswer>> {
    const intent: RolloutIntent = {
      kind: 'promotion',
      mode: 'promotion',
      expectedCurrentRolloutId: input.expectedCurrentRolloutId,
      ...(input.breakGlassGrantId === undefined ? {} : { breakGlassGrantId: input.breakGlassGrantId }),
    };
    return issueManualRollout(deps, input, intent, actor);
  };

/**
 * Roll back to a previously accepted release (docs/api.md "How promotion and rollback stay correct"):
 * a rollout of mode `rollback` naming the rollout it replaces; it puts automatic promotion on hold
 * until the next explicit promotion. Same compare-and-swap and Idempotency-Key rules as promotion.
 */
export const rollBack = (deps: ManualRolloutDeps) =>
  async function rollBackRelease (input: RollBackInput, actor: Actor): Promise<Result<RolloutAnswer>> {
    return issueManualRollout(deps, input, { kind: 'rollback', expectedCurrentRolloutId: input.expectedCurrentRolloutId }, actor);
  };

/**
 * Abort the current rollout (docs/lifecycle.md "Abort"): a rollback to the last verified
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

/** A rollout an operator or CI asked for: the same issuance, log line and counting for promotion, rollback and abort. */
async function issueManualRollout (
  deps: ManualRolloutDeps,
  input: ManualRolloutInput,
  intent: RolloutIntent,
  actor: Actor,
  trigger?: RolloutTrigger
): Promise<Result<RolloutAnswer>> {
  const mode = intent.kind === 'rollback' ? 'rollback' : intent.mode;
  const what = trigger?.kind === 'abort' ? 'abort' : intent.kind === 'rollback' ? 'manual rollback' : 'manual promotion';
  const result = await deps.telemetry.rollout(mode, deps.issuer.issueRollout({
    serviceId: input.serviceId,
    releaseId: input.releaseId,
    idempotencyKey: input.idempotencyKey,
    expectedRolloutGeneration: input.expectedRolloutGeneration,
    intent,
    issuer: issuerOf(actor.principal),
    reason: input.reason ?? what,
    fingerprintExtra: [input.reason ?? null],
    ...(trigger ? { trigger } : {}),
  }));
  if (!result.ok) return result;
  // Only automatic promotions are ever skipped.
  if (!result.value.issued) throw new Error('a manual rollout was skipped');
  const { service, rolloutId } = result.value;
  if (!result.replayed) {
    const releaseId = service.data.imageDeployment?.releaseId;
    const done = trigger?.kind === 'abort' ? 'aborted' : intent.kind === 'rollback' ? 'rolled back' : 'promoted';
    actor.log.info({ serviceId: input.serviceId, releaseId, rolloutId }, done);
  }
  return success({ service, rolloutId }, result.replayed);
}
