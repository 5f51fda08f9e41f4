import type { EffectivePromotionPolicy } from './policy.js';

/**
 * Pipelines: a digest may be promoted to a service only once it has succeeded in each upstream
 * service (stage) the policy requires and stayed there, good, for the stage's soak time. Decided
 * from the stages' rollout history (the facts below; the store reads them from `rollouts`).
 *
 * What counts in a stage, for a digest:
 * - a rollout of the digest that succeeded (`succeededAt`, the sticky milestone; a rollback that
 *   rolled back to it counts as well: it ran and verified there);
 * - that stayed in place for the soak, from its success until now or until the next rollout
 *   superseded it — a digest that soaked and was then replaced by a newer build stays verified;
 * - and that came after the stage's last word against the digest: a revocation of one of its
 *   successes, or a rollback or abort away from it. Such a word voids every earlier success of the
 *   digest there; promoting it to the stage again (and soaking) is the way back.
 *
 * Otherwise the refusal names the stage and what is missing, from the digest's latest rollout
 * there: never promoted, not succeeded yet (or replaced before it did), not soaked (with the time
 * left, or how long it ran before it was replaced), failed, revoked, rolled back.
 */

/** One rollout of a stage, as far as pipelines are concerned (from the rollout history). */
export interface StageRollout {
  rolloutId: string;
  /** The digest it deployed (`plan.requestedDigest`). */
  digest: string;
  issuedAt: number;
  succeededAt?: number;
  /** The first failure before any success. */
  failure?: { at: number, reason: string };
  /** When its runtime-verification attestation was revoked (the success no longer holds). */
  revokedAt?: number;
  /** When and how the next rollout replaced it; absent while it is the stage's current rollout. */
  ended?: { at: number, kind: 'superseded' | 'rolled-back' | 'aborted' };
}

/** A stage's history: the rollouts of the digests in question (more do no harm). */
export interface StageFacts {
  serviceId: string;
  serviceName?: string;
  rollouts: readonly StageRollout[];
}

export type StageMissing = 'never-promoted' | 'not-succeeded' | 'not-soaked' | 'failed' | 'revoked' | 'rolled-back';

interface StageRef { serviceId: string, serviceName?: string, soakSeconds: number }

/** What a stage lacks, and the facts that say so. */
export type StageGap =
  | { satisfied: false, missing: 'never-promoted' }
  /** Promoted, no success yet: in progress, or replaced before it succeeded. */
  | { satisfied: false, missing: 'not-succeeded', rolloutId: string, inProgress: boolean }
  /** Succeeded, not soaked: still there (`remainingSeconds`, `soakedAt`), or replaced after `ranSeconds`. */
  | { satisfied: false, missing: 'not-soaked', rolloutId: string, succeededAt: number, ranSeconds: number, remainingSeconds?: number, soakedAt?: number }
  | { satisfied: false, missing: 'failed', rolloutId: string, failedAt: number, reason: string }
  | { satisfied: false, missing: 'revoked', rolloutId: string, revokedAt: number }
  | { satisfied: false, missing: 'rolled-back', rolloutId: string, endedAt: number, by: 'rolled-back' | 'aborted' };

export type StageVerdict = StageRef & ({ satisfied: true, rolloutId: string, succeededAt: number, soakedAt: number } | StageGap);

const endedBy = (r: StageRollout, at: number): StageRollout['ended'] => (r.ended !== undefined && r.ended.at <= at ? r.ended : undefined);
const revokedBy = (r: StageRollout, at: number): number | undefined => (r.revokedAt !== undefined && r.revokedAt <= at ? r.revokedAt : undefined);
const succeededBy = (r: StageRollout, at: number): number | undefined => (r.succeededAt !== undefined && r.succeededAt <= at ? r.succeededAt : undefined);

/** The instant of the stage's last word against the digest (a revocation, a rollback or abort away from it), if any. */
function lastWordAgainst (rollouts: readonly StageRollout[], at: number): number | undefined {
  const words = rollouts.flatMap((r) => {
    const ended = endedBy(r, at);
    return [revokedBy(r, at), ended !== undefined && ended.kind !== 'superseded' ? ended.at : undefined];
  }).filter((t): t is number => t !== undefined);
  return words.length === 0 ? undefined : Math.max(...words);
}

/** The earliest instant the digest had soaked in the stage, by a rollout that still counts; undefined if none has. */
function soakedSince (rollouts: readonly StageRollout[], soakMs: number, at: number): { rolloutId: string, succeededAt: number, soakedAt: number } | undefined {
  const since = lastWordAgainst(rollouts, at);
  const soaked = rollouts.flatMap((rollout) => {
    const succeededAt = succeededBy(rollout, at);
    // A revocation of this very success, or a rollback away from it, is such a last word: it comes after the success.
    if (succeededAt === undefined || (since !== undefined && succeededAt <= since)) return [];
    const goodUntil = endedBy(rollout, at)?.at ?? at;
    return goodUntil - succeededAt >= soakMs ? [{ rolloutId: rollout.rolloutId, succeededAt, soakedAt: succeededAt + soakMs }] : [];
  });
  return soaked.sort((a, b) => a.soakedAt - b.soakedAt)[0];
}

/** What is missing, told from the digest's latest rollout in the stage. */
function missingFrom (latest: StageRollout, soakMs: number, at: number): StageGap {
  const rolloutId = latest.rolloutId;
  const revokedAt = revokedBy(latest, at);
  if (revokedAt !== undefined) return { satisfied: false, missing: 'revoked', rolloutId, revokedAt };
  const ended = endedBy(latest, at);
  if (ended !== undefined && ended.kind !== 'superseded') return { satisfied: false, missing: 'rolled-back', rolloutId, endedAt: ended.at, by: ended.kind };
  const succeededAt = succeededBy(latest, at);
  if (succeededAt !== undefined) {
    const ranMs = (ended?.at ?? at) - succeededAt;
    const still = ended === undefined ? { remainingSeconds: Math.ceil((soakMs - ranMs) / 1000), soakedAt: succeededAt + soakMs } : {};
    return { satisfied: false, missing: 'not-soaked', rolloutId, succeededAt, ranSeconds: Math.floor(ranMs / 1000), ...still };
  }
  if (latest.failure !== undefined && latest.failure.at <= at) {
    return { satisfied: false, missing: 'failed', rolloutId, failedAt: latest.failure.at, reason: latest.failure.reason };
  }
  return { satisfied: false, missing: 'not-succeeded', rolloutId, inProgress: ended === undefined };
}

/** Whether `digest` satisfies one stage at `at`, and if not, what is missing. */
export function stageVerdict (digest: string, stage: { serviceId: string, soakSeconds: number }, facts: StageFacts | undefined, at: number): StageVerdict {
  const name = facts?.serviceName === undefined ? {} : { serviceName: facts.serviceName };
  const ref: StageRef = { serviceId: stage.serviceId, ...name, soakSeconds: stage.soakSeconds };
  const rollouts = (facts?.rollouts ?? [])
    .filter((r) => r.digest === digest && r.issuedAt <= at)
    .sort((a, b) => a.issuedAt - b.issuedAt || (a.rolloutId < b.rolloutId ? -1 : 1));
  const latest = rollouts.at(-1);
  if (latest === undefined) return { ...ref, satisfied: false, missing: 'never-promoted' };
  const soakMs = stage.soakSeconds * 1000;
  const soaked = soakedSince(rollouts, soakMs, at);
  if (soaked !== undefined) return { ...ref, satisfied: true, ...soaked };
  return { ...ref, ...missingFrom(latest, soakMs, at) };
}

export interface PipelineVerdict {
  allowed: boolean;
  /** One verdict per required stage, in the policy's order. */
  stages: StageVerdict[];
  /** The first stage that is not satisfied (what a refusal names). */
  refusedBy?: StageVerdict;
  /**
   * Allowed: when the digest became eligible (the last stage's soak ended). Refused only because
   * stages are still soaking: when it will be, if nothing changes (a sweeper's wake-up time).
   */
  eligibleAt?: number;
}

type Pipeline = NonNullable<EffectivePromotionPolicy['pipeline']>;

/** Whether `digest` may be promoted to the service whose pipeline this is, at `at`. No pipeline: allowed. */
export function pipelineVerdict (digest: string, pipeline: Pipeline | undefined, facts: readonly StageFacts[], at: number): PipelineVerdict {
  if (pipeline === undefined) return { allowed: true, stages: [] };
  const stages = pipeline.requires.map((stage) => stageVerdict(digest, stage, facts.find((f) => f.serviceId === stage.serviceId), at));
  const refusedBy = stages.find((s) => !s.satisfied);
  const soakedAt = stages.map((s) => (s.satisfied ? s.soakedAt : s.missing === 'not-soaked' ? s.soakedAt : undefined));
  const eligibleAt = soakedAt.every((t) => t !== undefined) && stages.length > 0 ? Math.max(...soakedAt) : undefined;
  return {
    allowed: refusedBy === undefined,
    stages,
    ...(refusedBy === undefined ? {} : { refusedBy }),
    ...(eligibleAt === undefined ? {} : { eligibleAt }),
  };
}

/**
 * The digests that automatic downstream promotion may promote at `at`: those the pipeline allows,
 * oldest eligibility first, that became eligible after `since` (when given) and are not in
 * `exclude` (digests already promoted downstream: once per digest). Nothing when the pipeline's
 * automatic promotion is off. Which one to promote (never an older release) is the caller's rule.
 */
export function digestsEligibleAt (
  pipeline: Pipeline | undefined, facts: readonly StageFacts[], at: number, options: { since?: number, exclude?: ReadonlySet<string> } = {},
): Array<{ digest: string, eligibleAt: number }> {
  if (pipeline === undefined || !pipeline.automaticPromotion || pipeline.requires.length === 0) return [];
  const digests = new Set(facts.flatMap((f) => f.rollouts.map((r) => r.digest)));
  return [...digests]
    .filter((digest) => options.exclude?.has(digest) !== true)
    .map((digest) => ({ digest, verdict: pipelineVerdict(digest, pipeline, facts, at) }))
    .flatMap(({ digest, verdict }) => (verdict.allowed && verdict.eligibleAt !== undefined ? [{ digest, eligibleAt: verdict.eligibleAt }] : []))
    .filter(({ eligibleAt }) => options.since === undefined || eligibleAt > options.since)
    .sort((a, b) => a.eligibleAt - b.eligibleAt || (a.digest < b.digest ? -1 : 1));
}
