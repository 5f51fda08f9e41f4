import { createHash } from 'node:crypto';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  IImmutableImageDeploymentPlan as PlanSchema, validateImageRolloutStatus, validateImmutableImageDeploymentPlan,
  type IImageRelease, type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
  type IImmutableImageTargetScope, type IService, type TImmutableImageRolloutMode, type TSha256Digest,
} from '../contracts/index.js';
import { AppError } from '../errors.js';
import type { Principal } from './principal.js';

/**
 * Pure rules of promotion and rollback (DESIGN §5): preconditions, the plan,
 * the reset rollout status, the response snapshot. No I/O here; the lifecycle
 * module sequences the writes.
 */

/** The rollout generation of a service: 0 before its first rollout. */
export const currentGeneration = (service: IService): number => service.data.imageDeployment?.rolloutGeneration ?? 0;

/** Who asked for a rollout, as kept in the history. */
export interface Issuer {
  subject: string;
  role: Principal['role'] | 'system';
  type: Principal['type'];
}

export const issuerOf = (principal: Principal): Issuer => ({ subject: principal.subject, role: principal.role, type: principal.type });

/** An operator's rollback holds automatic promotion until the next explicit promotion. */
export interface AutomationHold {
  since: number;
  rolloutId: string;
  by: string;
}

/** One entry of the rollout history: the plan and why it was issued. */
export interface RolloutRecord {
  rolloutId: string;
  serviceId: string;
  generation: number;
  mode: TImmutableImageRolloutMode;
  releaseId: string;
  plan: IImmutableImageDeploymentPlan;
  /** The rollout this one replaced (absent for the first). */
  previous?: { rolloutId: string, releaseId: string, requestedDigest: TSha256Digest };
  issuedBy: Issuer;
  reason: string;
  /** set: a rollback put automation on hold; cleared: an explicit promotion lifted it. */
  hold: 'set' | 'cleared' | 'unchanged';
  /** The idempotency record that created it: at most one rollout per record (unique). */
  idempotencyRecordId: string;
  /** The service exactly as this rollout writes it: the response, identical on every replay. */
  serviceAfter: IService;
  /** pending until the service document carries the plan; any process may finish it. */
  state: 'pending' | 'applied';
  createdAt: number;
}

export type RolloutIntent =
  | { kind: 'promotion', mode: 'promotion' | 'automatic', expectedCurrentRolloutId?: string }
  | { kind: 'rollback', expectedCurrentRolloutId: string };

export interface PlanInput {
  service: IService;
  release: IImageRelease | null;
  releaseId: string;
  expectedRolloutGeneration: number;
  intent: RolloutIntent;
  targetScope: IImmutableImageTargetScope;
  rolloutId: string;
  now: number;
}

/** The values a conflict answer names: the service's generation and current rollout. */
export const conflict = (service: IService): Record<string, unknown> => ({
  currentGeneration: currentGeneration(service),
  currentRolloutId: service.data.imageDeployment?.rolloutId ?? null,
});

/**
 * Checks the preconditions against the current service and release, in a fixed
 * order, and throws the first failure as a coded error. Every failure here is
 * deterministic for the request, so the idempotency record stores it.
 */
export function checkPreconditions (input: Omit<PlanInput, 'targetScope' | 'rolloutId' | 'now'>): IImageRelease {
  const { service, release, releaseId, expectedRolloutGeneration, intent } = input;
  const current = service.data.imageDeployment;
  const generation = currentGeneration(service);
  if (intent.kind === 'rollback' && !current) {
    throw new AppError('no-current-rollout', `service '${service.id}' has no rollout to roll back`, { details: conflict(service) });
  }
  if (expectedRolloutGeneration !== generation) {
    throw new AppError('rollout-generation-conflict',
      `expected rollout generation ${expectedRolloutGeneration} but the service is at ${generation}`, { details: conflict(service) });
  }
  if (intent.expectedCurrentRolloutId !== undefined && intent.expectedCurrentRolloutId !== current?.rolloutId) {
    throw new AppError('current-rollout-mismatch',
      `expected current rollout '${intent.expectedCurrentRolloutId}' but it is '${current?.rolloutId ?? 'none'}'`, { details: conflict(service) });
  }
  if (!release || release.data.serviceId !== service.id) {
    throw new AppError('release-not-found', `release '${releaseId}' does not exist for service '${service.id}'`, { details: { serviceId: service.id, releaseId } });
  }
  if (intent.kind === 'rollback') {
    if (release.data.acceptedAt === undefined) {
      throw new AppError('rollback-target-not-accepted', `release '${releaseId}' was never promoted, so it is no known-good target`, { details: { releaseId } });
    }
    if (current && isSameImage(current, release)) {
      throw new AppError('rollback-target-is-current', `release '${releaseId}' is the digest deployed now`, { details: { releaseId, ...conflict(service) } });
    }
  }
  return release;
}

export const isSameImage = (plan: IImmutableImageDeploymentPlan, release: IImageRelease): boolean =>
  plan.requestedDigest === release.data.registryRootDigest &&
  plan.registryHost === release.data.registryHost &&
  plan.repository === release.data.repository;

const planCheck = TypeCompiler.Compile(PlanSchema);

/** Builds the next plan; throws `invalid-deployment-plan` with the upstream validator's messages. */
export function buildPlan (input: PlanInput, release: IImageRelease): IImmutableImageDeploymentPlan {
  const { service, intent, targetScope, rolloutId, now } = input;
  const plan: IImmutableImageDeploymentPlan = {
    policy: 'immutable-digest',
    rolloutId,
    rolloutGeneration: currentGeneration(service) + 1,
    releaseId: release.id,
    registryHost: release.data.registryHost,
    repository: release.data.repository,
    requestedDigest: release.data.registryRootDigest,
    digestPinnedImageReference: release.data.digestPinnedImageReference,
    manifestMediaType: release.data.manifestMediaType,
    createdAt: now,
    mode: intent.kind === 'rollback' ? 'rollback' : intent.mode,
    ...(intent.kind === 'rollback' && service.data.imageDeployment ? { rollbackOfRolloutId: service.data.imageDeployment.rolloutId } : {}),
    targetScope,
  };
  const problems = validateImmutableImageDeploymentPlan(plan);
  // The upstream validator checks the rules, not the schema's size limits: a placement whose
  // clusters hold more than 4096 nodes would store a plan no client could read back.
  if (problems.length === 0) {
    for (const error of planCheck.Errors(plan)) problems.push(`plan${error.path.replace(/\//g, '.')}: ${error.message}`);
  }
  if (problems.length > 0) {
    throw new AppError('invalid-deployment-plan', problems.join('; '), { details: { problems } });
  }
  return plan;
}

/** The status a new rollout starts with: nothing observed yet. */
function initialStatus (plan: IImmutableImageDeploymentPlan): IImageRolloutStatus {
  const status: IImageRolloutStatus = {
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    status: plan.mode === 'rollback' ? 'rolling-back' : 'pending',
    requiredReplicaCount: plan.targetScope.requiredReplicaCount,
    observedReplicaCount: 0,
    healthyReplicaCount: 0,
    verifiedReplicaCount: 0,
    failedReplicaCount: 0,
    updatedAt: plan.createdAt,
    reporters: [],
  };
  const problems = validateImageRolloutStatus(status);
  if (problems.length > 0) throw new Error(`initial rollout status is invalid: ${problems.join('; ')}`);
  return status;
}

/** The service as the rollout leaves it: plan, reset status, immutable deployment required. */
export function serviceAfterRollout (service: IService, plan: IImmutableImageDeploymentPlan): IService {
  return {
    id: service.id,
    data: { ...service.data, immutableImageRequired: true, imageDeployment: plan, imageRolloutStatus: initialStatus(plan) },
  };
}

/** Stable hash of what identifies a request for Idempotency-Key reuse detection. */
export function requestFingerprint (parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** The idempotency record id: keys are scoped to the service. */
export function idempotencyRecordId (serviceId: string, key: string): string {
  return createHash('sha256').update(`${serviceId}\u0000${key}`).digest('hex');
}

/**
 * What a rollout record stores as `idempotencyRecordId`: the record id and the creation time of
 * the key's idempotency record, `<hex>:<ms>`. It finds the rollout of a retried (or crashed)
 * request while the record lives, and nothing once the key has expired and is used anew.
 */
export const rolloutRefFor = (recordId: string, claimedAt: number): string => `${recordId}:${claimedAt}`;

/** The key hash part of a rollout's `idempotencyRecordId` (the history's `idempotencyKeyHash`). */
export const keyHashOfRolloutRef = (ref: string): string => ref.split(':', 1)[0] as string;
