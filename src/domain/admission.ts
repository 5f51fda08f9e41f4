import type { IImageRelease, IService } from '../contracts/index.js';
import { errors, type AppError } from '../errors.js';
import { placementRefusal, type ClusterNodes } from './clusters.js';
import type { GlobalGovernance, TGovernanceIntent } from '../contracts/promotionPolicy.js';
import type { BreakGlassGrant } from './governance/breakGlass.js';
import { freezeDecision, pipelineRefusal, type FreezeDecision } from './governance/gate.js';
import type { StageFacts } from './governance/pipelines.js';
import type { EffectivePromotionPolicy } from './governance/policy.js';
import type { VerifiedRelease } from './lifecycle.js';
import type { ReleaseVerification, RolloutTrustCheck } from './trust/releaseVerification.js';
import {
  automaticPromotionSkip, automaticPromotionSkipDetail, currentGeneration, currentRolloutOf, isSameImage,
  type AutomaticPromotionSkip, type AutomationHold, type RolloutIntent,
} from './rollouts.js';

/**
 * Admission: every rollout — promotion, automatic promotion, rollback, abort, automatic rollback — passes
 * the same ordered list of rules before it is issued. Each rule is a pure function of the intent and the
 * facts the use case read; the first that refuses decides. What a refusal then does for each intent
 * (kept with the Idempotency-Key and replayed, an automatic promotion's conflict or skip, a waiting push
 * that keeps waiting) is data of the error catalogue (src/errors.ts `rolloutRefusalOf`). Adding a rule
 * is one function here and one catalogue entry.
 */

/**
 * The signature rule's fact (services with a trust policy only): the target digest passed the policy
 * (the registry was asked, or a rollback relies on the release's stored verification under the same
 * policy), or it was refused (a trust refusal, or `registry-unavailable`). Read by the use case, with
 * the registry's I/O, before anything is written.
 */
export type TrustFact =
  | { kind: 'passed', check: RolloutTrustCheck, verification?: ReleaseVerification }
  | { kind: 'refused', error: AppError };

/**
 * The governance rules' facts (promotions only; docs/governance.md): the global policy, the service's
 * promotion policy with its defaults, and each upstream stage's rollouts of the target digest.
 */
export interface GovernanceFacts {
  at: number;
  global?: GlobalGovernance;
  policy: EffectivePromotionPolicy;
  stages: readonly StageFacts[];
  /** The target release's digest. */
  digest: string;
  /** The break-glass grant the promotion names ('missing': none of that id for the service). */
  breakGlass?: BreakGlassGrant | 'missing';
}

/** What the rules look at. `release` is the target: the one named, or for an abort the last verified release. */
export interface AdmissionFacts {
  service: IService;
  hold?: AutomationHold | undefined;
  verifiedReleases: readonly VerifiedRelease[];
  /** The release the rollout would deploy (null: none of that id). */
  releaseId: string;
  release: IImageRelease | null;
  /** The release deployed now (read for automatic promotion only). */
  currentRelease?: IImageRelease | null;
  /** The placement's registered clusters with their nodes. */
  clusters: readonly ClusterNodes[];
  /** The generation the caller expects (automatic promotion: whatever is current when it plans). */
  expectedRolloutGeneration: number;
  /** Read for promotions: what stop-the-line, the windows and the pipeline look at. */
  governance?: GovernanceFacts;
  /** The signature verification of the target's digest; read only when every other rule admits (src/operations/trustCheck.ts). */
  trust?: TrustFact;
}

/** An automatic promotion that does not apply: not an error, an answer. */
export interface Skip { skip: AutomaticPromotionSkip, detail: string }

export type AdmissionVerdict = AppError | Skip | undefined;

export interface AdmissionRule {
  /** A name for logs and the documentation (docs/lifecycle.md "Admission"). */
  name: string;
  appliesTo: (intent: RolloutIntent) => boolean;
  check: (intent: RolloutIntent, facts: AdmissionFacts) => AdmissionVerdict;
}

const any = (): boolean => true;
const isAutomatic = (intent: RolloutIntent): boolean => intent.kind === 'promotion' && intent.mode === 'automatic';
const isRollback = (intent: RolloutIntent): boolean => intent.kind === 'rollback';
const toLastVerified = (intent: RolloutIntent): boolean => intent.kind === 'rollback' && intent.toLastVerified === true;

/** deployOnPush, no operator's hold, not the digest deployed now, never an older release. */
export const automationAllowed = (intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  const pipeline = intent.kind === 'promotion' && intent.pipeline === true;
  const enabled = pipeline ? f.service.data.promotionPolicy?.pipeline?.automaticPromotion?.enabled === true : f.service.data.deployOnPush === true;
  const skip = automaticPromotionSkip(f.service, f.hold, f.release, f.currentRelease, enabled);
  return skip ? { skip, detail: automaticPromotionSkipDetail(skip, f.hold) } : undefined;
};

/** A rollback needs a rollout to roll back. */
export const hasCurrentRollout = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict =>
  f.service.data.imageDeployment ? undefined : errors.noCurrentRollout(f.service.id, currentRolloutOf(f.service));

/** The compare-and-swap: the caller's generation is the service's. */
export const generationMatches = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  const generation = currentGeneration(f.service);
  if (f.expectedRolloutGeneration === generation) return undefined;
  return errors.rolloutGenerationConflict(`expected rollout generation ${f.expectedRolloutGeneration} but the service is at ${generation}`,
    currentRolloutOf(f.service));
};

/** The compare-and-swap: the rollout the caller names is still the current one. */
export const currentRolloutMatches = (intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  const expected = intent.expectedCurrentRolloutId;
  if (expected === undefined || expected === f.service.data.imageDeployment?.rolloutId) return undefined;
  return errors.currentRolloutMismatch(expected, currentRolloutOf(f.service));
};

/** An abort (automatic rollback) returns to the last verified release: there must be one. */
export const verifiedReleaseExists = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict =>
  f.releaseId === '' ? errors.noVerifiedRelease(f.service.id, currentRolloutOf(f.service)) : undefined;

/** The target is a release of this service. */
export const releaseOfService = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict =>
  f.release && f.release.data.serviceId === f.service.id ? undefined : errors.releaseNotFound(f.service.id, f.releaseId);

/** A rollback target was accepted (promoted) before. */
export const rollbackTargetAccepted = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict =>
  f.release?.data.acceptedAt === undefined ? errors.rollbackTargetNotAccepted(f.releaseId) : undefined;

/** A rollback target is not the digest deployed now. */
export const rollbackTargetNotCurrent = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  const current = f.service.data.imageDeployment;
  return current && f.release && isSameImage(current, f.release) ? errors.rollbackTargetIsCurrent(f.releaseId, currentRolloutOf(f.service)) : undefined;
};

/** The placement's clusters are registered (a rollback goes to the registered ones). */
export const placementRegistered = (intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict =>
  placementRefusal(f.service.id, f.service.data.placement, f.clusters, intent.kind);

/** The governance intent of a rollout: which kind of promotion, or a return to a known-good release. */
export const governanceIntentOf = (intent: RolloutIntent): TGovernanceIntent =>
  intent.kind === 'rollback' ? 'rollback' : intent.pipeline === true ? 'pipeline-promotion' : intent.mode === 'automatic' ? 'automatic-promotion' : 'promotion';

const isPromotion = (intent: RolloutIntent): boolean => intent.kind === 'promotion';

/** Fail closed: a promotion whose governance facts were not read is refused, never let through. */
const governanceUnread = (f: AdmissionFacts): AppError => errors.internalError(new Error(`the governance of service '${f.service.id}' was not read`));

/** Stop-the-line, then the windows (global and the service's): a closed one refuses a promotion, telling when it opens. */
export const promotionsOpen = (intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  if (f.governance === undefined) return governanceUnread(f);
  const decision = freezeOf(intent, f.governance, f);
  return decision.pass ? undefined : decision.error;
};

/** Stop-the-line and the windows, passed by the named break-glass grant if it covers the promotion. */
export function freezeOf (intent: RolloutIntent, g: GovernanceFacts, f: Pick<AdmissionFacts, 'service' | 'releaseId'>): FreezeDecision {
  const named = intent.kind === 'promotion' ? intent.breakGlassGrantId : undefined;
  if (g.breakGlass === 'missing') return { pass: false, error: errors.breakGlassNotAvailable('not-found', named) };
  return freezeDecision({
    intent: governanceIntentOf(intent),
    at: g.at,
    policy: g.policy,
    serviceId: f.service.id,
    releaseId: f.releaseId,
    ...(g.global ? { global: g.global } : {}),
    ...(g.breakGlass ? { breakGlass: g.breakGlass } : {}),
  });
}

/** The pipeline: the digest has succeeded and soaked in every upstream stage. */
export const pipelinePassed = (intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  const g = f.governance;
  if (g === undefined) return governanceUnread(f);
  return pipelineRefusal(g.digest, g.policy, g.stages, g.at, governanceIntentOf(intent)) ?? undefined;
};

/**
 * A service with a trust policy deploys only a digest that passed it (docs/trust.md): fail closed —
 * no verification read is a refusal too.
 */
export const signatureVerified = (_intent: RolloutIntent, f: AdmissionFacts): AdmissionVerdict => {
  if (f.service.data.trustPolicy === undefined) return undefined;
  if (f.trust === undefined) return errors.internalError(new Error(`the digest of release '${f.releaseId}' was not verified against the trust policy`));
  return f.trust.kind === 'refused' ? f.trust.error : undefined;
};

/** The rules, in order. */
export const admissionRules: readonly AdmissionRule[] = [
  { name: 'automation-allowed', appliesTo: isAutomatic, check: automationAllowed },
  { name: 'current-rollout-exists', appliesTo: isRollback, check: hasCurrentRollout },
  { name: 'generation', appliesTo: any, check: generationMatches },
  { name: 'current-rollout', appliesTo: any, check: currentRolloutMatches },
  { name: 'verified-release', appliesTo: toLastVerified, check: verifiedReleaseExists },
  { name: 'release-of-service', appliesTo: any, check: releaseOfService },
  { name: 'rollback-target-accepted', appliesTo: isRollback, check: rollbackTargetAccepted },
  { name: 'rollback-target-not-current', appliesTo: isRollback, check: rollbackTargetNotCurrent },
  { name: 'placement-registered', appliesTo: any, check: placementRegistered },
  { name: 'promotions-open', appliesTo: isPromotion, check: promotionsOpen },
  { name: 'pipeline', appliesTo: isPromotion, check: pipelinePassed },
  // Last: its fact costs the registry's round trips, read only once every rule above admits.
  { name: 'signature-verified', appliesTo: any, check: signatureVerified },
];

/** The rules whose facts are read from the database only (all but the signature rule): run before the registry is asked. */
export const rulesBeforeVerification: readonly AdmissionRule[] = admissionRules.filter((rule) => rule.check !== signatureVerified);

/** Runs the rules in order: the first verdict, or undefined when every rule admits the rollout. */
export function admit (intent: RolloutIntent, facts: AdmissionFacts, rules: readonly AdmissionRule[] = admissionRules): AdmissionVerdict {
  for (const rule of rules) {
    if (!rule.appliesTo(intent)) continue;
    const verdict = rule.check(intent, facts);
    if (verdict) return verdict;
  }
  return undefined;
}

export const isSkip = (verdict: AdmissionVerdict): verdict is Skip => verdict !== undefined && 'skip' in verdict;
