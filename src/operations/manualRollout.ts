import type { IService } from '../contracts/index.js';
import { issuerOf, type RolloutIntent, type RolloutTrigger } from '../domain/rollouts.js';
import type { RolloutIssuer } from './issueRollout.js';
import { success, type Actor, type Result } from '../domain/result.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

export interface ManualRolloutDeps {
  rollouts: RolloutIssuer;
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

/** A rollout an operator or CI asked for: the same issuance, log line and counting for promotion and rollback. */
export async function issueManualRollout (
  deps: ManualRolloutDeps,
  input: ManualRolloutInput,
  intent: RolloutIntent,
  actor: Actor,
  trigger?: RolloutTrigger
): Promise<Result<RolloutAnswer>> {
  const mode = intent.kind === 'rollback' ? 'rollback' : intent.mode;
  const what = trigger?.kind === 'abort' ? 'abort' : intent.kind === 'rollback' ? 'manual rollback' : 'manual promotion';
  const result = await deps.telemetry.rollout(mode, deps.rollouts.issueRollout({
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
