import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  IImmutableImageDeploymentPlan as PlanSchema, validateImageRolloutStatus, validateImmutableImageDeploymentPlan,
  type IImageRelease, type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
  type IImmutableImageTargetScope, type IService, type TImmutableImageRolloutMode, type TSha256Digest,
} from '../contracts/index.js';
import { errors, type AppError, type CurrentRollout } from '../errors.js';
import type { DeadlineDecision, FailureMilestone } from './lifecycle.js';
import type { Principal } from './principal.js';
import type { ReleaseVerification, RolloutTrustCheck } from './trust/releaseVerification.js';

/**
 * Pure rules of promotion and rollback (docs/lifecycle.md): preconditions, the plan, the reset
 * rollout status, the response snapshot. No I/O here; src/operations/issueRollout.ts
 * sequences the writes. Refusals are returned, never thrown.
 */

/** The rollout generation of a service: 0 before its first rollout. */
export const currentGeneration = (service: IService): number => service.data.imageDeployment?.rolloutGeneration ?? 0;

/** The values a conflict answer names: the service's generation and current rollout. */
export const currentRolloutOf = (service: IService): CurrentRollout => ({
  currentGeneration: currentGeneration(service),
  currentRolloutId: service.data.imageDeployment?.rolloutId ?? null,
});

/** Who asked for a rollout, as kept in the history. */
export interface Issuer {
  subject: string;
  role: Principal['role'] | 'system';
  type: Principal['type'];
}

export const issuerOf = (principal: Principal): Issuer => ({ subject: principal.subject, role: principal.role, type: principal.type });

/** An operator's rollback holds automatic promotion until the next explicit promotion. */
export const AutomationHold = Type.Object({
  since: Type.Integer(),
  rolloutId: Type.String(),
  by: Type.String(),
}, { description: 'set by a manual rollback: automatic promotion is off until the next explicit promotion' });
export type AutomationHold = Static<typeof AutomationHold>;

/** How a rollout stopped being current: a newer promotion, a rollback of it, an abort of it. */
export interface RolloutEnd {
  at: number;
  by: 'superseded' | 'rolled-back' | 'aborted';
  /** The rollout that replaced it. */
  rolloutId: string;
}

/** What made the server issue a rollout no one asked for directly (absent: an operator, CI or a push asked). */
export type RolloutTrigger =
  | { kind: 'abort' }
  | { kind: 'automatic-rollback', cause: 'failed' | 'mismatched' | 'deadline', ofRolloutId: string, reason: string }
  | { kind: 'deferred-promotion', afterRolloutId: string }
  /** Promoted downstream by the pipeline: the upstream stages the digest passed. */
  | { kind: 'pipeline-promotion', stages: string[] };

/** One entry of the rollout history: the plan and why it was issued (the stored document, not an API shape). */
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
  trigger?: RolloutTrigger;
  /** Milestones, each written once (src/operations/lifecycle.ts): the first success (sticky), the first failure before it, the deadline's verdict. */
  succeededAt?: number;
  failure?: FailureMilestone;
  deadline?: DeadlineDecision;
  /** When its success was revoked: it drifted after it succeeded (docs/attestations.md "Revocation"); pipelines read it. */
  revokedAt?: number;
  /** Set when the next rollout replaced it. */
  ended?: RolloutEnd;
  /** A service with a trust policy: how the signature rule admitted it (docs/trust.md). */
  trust?: RolloutTrustCheck;
  /** The verification the registry's signatures passed (basis `registry`): copied onto the release when the rollout is finished. */
  verification?: ReleaseVerification;
  /** The break-glass grant it passed a closed window with (docs/governance.md "Break-glass"). */
  breakGlass?: BreakGlassUse;
  /** The promotion request it was issued for, with its requester and approvers (docs/governance.md "Approvals"). */
  approval?: ApprovalUse;
}

/** A promotion request as the rollout its approvals issued records it. */
export interface ApprovalUse {
  requestId: string;
  requestedBy: { subject: string, role: string };
  approvedBy: Array<{ subject: string, role: string, at: number }>;
}

/** A break-glass grant as the rollout it let through records it. */
export interface BreakGlassUse {
  grantId: string;
  reason: string;
  requestedBy: string;
  approvedBy: string;
  /** The end of its time box. */
  until: number;
}

export type RolloutIntent =
  /**
   * `breakGlassGrantId`: a promotion by hand naming a break-glass grant to pass a closed window; `pipeline`: an automatic
   * promotion the server makes downstream once every upstream stage is satisfied (docs/governance.md).
   */
  | { kind: 'promotion', mode: 'promotion' | 'automatic', expectedCurrentRolloutId?: string, breakGlassGrantId?: string, pipeline?: true }
  /** `toLastVerified`: the target is the last verified release, found when planning (abort, automatic rollback). */
  | { kind: 'rollback', expectedCurrentRolloutId: string, toLastVerified?: boolean };

/** The operation name of an intent: idempotency records, metrics and fingerprints use it. */
export const operationOf = (intent: RolloutIntent): TImmutableImageRolloutMode => (intent.kind === 'rollback' ? 'rollback' : intent.mode);

/** The plan deploys exactly this release's image. */
export const isSameImage = (plan: IImmutableImageDeploymentPlan, release: IImageRelease): boolean =>
  plan.requestedDigest === release.data.registryRootDigest &&
  plan.registryHost === release.data.registryHost &&
  plan.repository === release.data.repository;

/** Why a push event does not promote automatically; undefined when it may. */
export type AutomaticPromotionSkip = 'not-enabled' | 'on-hold' | 'already-current' | 'older-than-current';

/**
 * deployOnPush (docs/lifecycle.md): only services with deployOnPush that were explicitly promoted once
 * (immutableImageRequired), never while an operator's rollback holds automation, never to the
 * digest that is deployed already, never to a release first observed before the current one
 * (a late push of an old digest).
 */
export function automaticPromotionSkip (
  service: IService,
  hold: AutomationHold | undefined,
  release: IImageRelease | null,
  currentRelease?: IImageRelease | null,
  /** What turns this kind of automatic promotion on (default: deployOnPush; a pipeline's: its automaticPromotion). */
  enabled: boolean = service.data.deployOnPush === true,
): AutomaticPromotionSkip | undefined {
  if (!enabled || !service.data.immutableImageRequired) return 'not-enabled';
  if (hold) return 'on-hold';
  const current = service.data.imageDeployment;
  if (current && release && isSameImage(current, release)) return 'already-current';
  if (release && currentRelease && release.data.firstObservedAt < currentRelease.data.firstObservedAt) return 'older-than-current';
  return undefined;
}

export const automaticPromotionSkipDetail = (skip: AutomaticPromotionSkip, hold: AutomationHold | undefined): string => ({
  'not-enabled': 'automatic promotion needs deployOnPush and a first explicit promotion',
  'on-hold': `automatic promotion is on hold since the rollback in rollout '${hold?.rolloutId ?? ''}'`,
  'already-current': 'the pushed digest is already deployed',
  'older-than-current': 'the pushed digest was first observed before the one deployed now: automation never goes back',
})[skip];

const planCheck = TypeCompiler.Compile(PlanSchema);

export interface PlanInput {
  service: IService;
  release: IImageRelease;
  intent: RolloutIntent;
  targetScope: IImmutableImageTargetScope;
  rolloutId: string;
  now: number;
}

/** The next plan, or `invalid-deployment-plan` with the upstream validator's messages. */
export function buildPlan (input: PlanInput): { plan: IImmutableImageDeploymentPlan } | { refusal: AppError } {
  const { service, release, intent, targetScope, rolloutId, now } = input;
  const current = service.data.imageDeployment;
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
    mode: operationOf(intent),
    rollbackOfRolloutId: intent.kind === 'rollback' ? current?.rolloutId : undefined,
    targetScope,
  };
  if (plan.rollbackOfRolloutId === undefined) delete plan.rollbackOfRolloutId;
  const problems = validateImmutableImageDeploymentPlan(plan);
  // The upstream validator checks the rules, not the schema's size limits: a placement whose
  // clusters hold more than 4096 nodes would store a plan no client could read back.
  if (problems.length === 0) {
    for (const error of planCheck.Errors(plan)) problems.push(`plan${error.path.replace(/\//g, '.')}: ${error.message}`);
  }
  return problems.length > 0 ? { refusal: errors.invalidDeploymentPlan(problems) } : { plan };
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
