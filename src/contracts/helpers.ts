/**
 * The six helper functions of upstream `immutableimage.ts` (11.3.0), re-implemented
 * with identical observable behaviour for every input — return values, thrown
 * `Error` messages, error strings and their order — including runtime input that
 * does not conform to the static types (NaN, ±Infinity, -0, fractions, unsafe
 * integers, strings in number fields, whitespace, unicode, duplicates, empty arrays).
 * test/contracts/helpersParity.test.ts checks that against a transcription of upstream.
 *
 * Equivalence notes (why the code is written the way it is):
 * - Upstream's error rules are phrased as "bad if …" conditions with `<`, `!==`, `||`.
 *   With NaN those are not the negation of "good if …" (`!(NaN < 1)` is true), so the
 *   predicates below keep upstream's direction and operators.
 * - `Set` (SameValueZero) decides duplicates: NaN equals NaN, -0 equals 0.
 * - `flatMap`, `map`, `some`, `reduce` and `for…of` are used where upstream uses them, so
 *   that non-array or sparse inputs fail (or do not) exactly the same way; parameter names
 *   match upstream because V8 quotes them in TypeError messages.
 * - Truthiness is kept where upstream tests truthiness (an empty `rollbackOfRolloutId` or
 *   `mismatchReason` counts as absent).
 */
import type {
  IImageRolloutReporterStatus,
  IImageRolloutStatus,
  IImmutableImageDeploymentPlan,
  TSha256Digest,
} from './immutableImage.js';

/** Upstream's digest rule: lower-case `sha256:` and exactly 64 lower-case hex digits. */
const canonicalSha256Digest = /^sha256:[a-f0-9]{64}$/;
/** `localhost` or a lower-case DNS-like name, optionally with a port 1–99999 without leading zero. */
const canonicalRegistryHost = /^(?:localhost|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::[1-9][0-9]{0,4})?$/;
/** Lower-case path components joined by `/`, each made of alphanumeric runs joined by one `.`, `_` or `-`. */
const canonicalRepository = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/;

export const planValidationMessages = {
  rolloutGeneration: 'rolloutGeneration must be a positive safe integer',
  createdAt: 'createdAt must be a positive safe integer',
  pinnedReferenceMismatch: 'digestPinnedImageReference does not match registry, repository and digest',
  replicasPerNode: 'replicasPerNode must be a positive safe integer',
  emptyScope: 'immutable rollout target scope must contain clusters and nodes',
  duplicateScope: 'immutable rollout target scope must not contain duplicates',
  requiredReplicaCount: 'requiredReplicaCount does not match target nodes and replicasPerNode',
  rollbackWithoutTarget: 'rollback rollout must identify the rollout it replaces',
  rollbackTargetOnNonRollback: 'only rollback rollouts may set rollbackOfRolloutId',
} as const;

export const referenceErrorMessages = {
  nonCanonicalNames: 'registry host and repository must be canonical OCI names',
  nonCanonicalDigest: 'digest must be a canonical sha256 digest',
} as const;

export const statusValidationMessages = {
  aggregateCounts: 'rollout replica counts must be non-negative safe integers',
  duplicateReporters: 'rollout status must contain one latest report per reporter and session',
  reporterCounts: 'reporter replica counts must be non-negative safe integers',
  reporterIdentity: 'reporter rollout identity does not match aggregate rollout identity',
  reporterContradiction: 'reporter replica counts are contradictory',
  successIncomplete: 'successful rollout status requires every replica to be observed, healthy and verified',
  successWithMismatch: 'successful rollout status requires reporters without mismatch reasons',
  successNodeCountedTwice: 'successful rollout status must not count a node in multiple reporters',
  successReporterIncomplete: 'successful rollout requires every reporter replica to be healthy and verified',
  successTotalsDiffer: 'successful rollout aggregate must exactly match successful reporter evidence',
} as const;

/** Trims, lower-cases and returns the digest when it is then canonical; otherwise `undefined`. */
export const normalizeSha256Digest = (digest: string): TSha256Digest | undefined => {
  const candidate = digest.trim().toLowerCase();
  if (!canonicalSha256Digest.test(candidate)) {
    return undefined;
  }
  return candidate as TSha256Digest;
};

/** True only for an already canonical digest (no trimming, no case folding). */
export const isSha256Digest = (digest: string): digest is TSha256Digest =>
  canonicalSha256Digest.test(digest);

/** `host/repository@digest`; throws when host/repository (checked first) or the digest are not canonical. */
export const buildDigestPinnedImageReference = (
  registryHost: string,
  repository: string,
  digest: TSha256Digest,
): string => {
  const namesAreCanonical = canonicalRegistryHost.test(registryHost) && canonicalRepository.test(repository);
  if (!namesAreCanonical) {
    throw new Error(referenceErrorMessages.nonCanonicalNames);
  }
  if (!isSha256Digest(digest)) {
    throw new Error(referenceErrorMessages.nonCanonicalDigest);
  }
  return `${registryHost}/${repository}@${digest}`;
};

/** The normalized digest after the last `@`, or `undefined`. */
export const getDigestFromPinnedImageReference = (
  imageReference: string,
): TSha256Digest | undefined => {
  const at = imageReference.lastIndexOf('@');
  return at < 0 ? undefined : normalizeSha256Digest(imageReference.slice(at + 1));
};

/** "Not a positive safe integer" in upstream's terms (NaN, fractions, < 1, unsafe). */
const isNotPositiveSafeInteger = (value: number): boolean => !Number.isSafeInteger(value) || value < 1;

/** "Not a non-negative safe integer" in upstream's terms. */
const isNotNonNegativeSafeInteger = (value: number): boolean => !Number.isSafeInteger(value) || value < 0;

const containsDuplicates = (values: readonly unknown[]): boolean => new Set(values).size !== values.length;

/** The expected pinned reference, or the build error's message. */
const expectedPinnedReference = (
  planArg: IImmutableImageDeploymentPlan,
): { reference: string } | { problem: string } => {
  try {
    return {
      reference: buildDigestPinnedImageReference(planArg.registryHost, planArg.repository, planArg.requestedDigest),
    };
  } catch (error) {
    return { problem: (error as Error).message };
  }
};

/** Every rule an immutable deployment plan breaks, in upstream's order; `[]` when valid. */
export const validateImmutableImageDeploymentPlan = (
  planArg: IImmutableImageDeploymentPlan,
): string[] => {
  const problems: string[] = [];
  const report = (message: string): void => {
    problems.push(message);
  };

  if (isNotPositiveSafeInteger(planArg.rolloutGeneration)) report(planValidationMessages.rolloutGeneration);
  if (isNotPositiveSafeInteger(planArg.createdAt)) report(planValidationMessages.createdAt);

  const expected = expectedPinnedReference(planArg);
  if ('problem' in expected) {
    report(expected.problem);
  } else if (planArg.digestPinnedImageReference !== expected.reference) {
    // A built reference always contains '/' and '@', so it is never empty (upstream's `&&` guard).
    report(planValidationMessages.pinnedReferenceMismatch);
  }

  const scope = planArg.targetScope;
  if (isNotPositiveSafeInteger(scope.replicasPerNode)) report(planValidationMessages.replicasPerNode);
  if (scope.targetClusterIds.length < 1 || scope.targetNodeNames.length < 1) {
    report(planValidationMessages.emptyScope);
  }
  if (containsDuplicates(scope.targetClusterIds) || containsDuplicates(scope.targetNodeNames)) {
    report(planValidationMessages.duplicateScope);
  }
  if (scope.requiredReplicaCount !== scope.targetNodeNames.length * scope.replicasPerNode) {
    report(planValidationMessages.requiredReplicaCount);
  }

  const isRollback = planArg.mode === 'rollback';
  const namesReplacedRollout = Boolean(planArg.rollbackOfRolloutId);
  if (isRollback && !namesReplacedRollout) report(planValidationMessages.rollbackWithoutTarget);
  if (!isRollback && namesReplacedRollout) report(planValidationMessages.rollbackTargetOnNonRollback);

  return problems;
};

type ReplicaCounts = Pick<
  IImageRolloutStatus,
  'requiredReplicaCount' | 'observedReplicaCount' | 'healthyReplicaCount' | 'verifiedReplicaCount' | 'failedReplicaCount'
>;

const replicaCountsOf = (counts: ReplicaCounts): number[] => [
  counts.requiredReplicaCount,
  counts.observedReplicaCount,
  counts.healthyReplicaCount,
  counts.verifiedReplicaCount,
  counts.failedReplicaCount,
];

/** Upstream's "not every required replica is observed, healthy, verified and none failed". */
const hasIncompleteReplicas = (counts: ReplicaCounts): boolean =>
  counts.requiredReplicaCount < 1
  || counts.observedReplicaCount !== counts.requiredReplicaCount
  || counts.healthyReplicaCount !== counts.requiredReplicaCount
  || counts.verifiedReplicaCount !== counts.requiredReplicaCount
  || counts.failedReplicaCount !== 0;

const hasContradictoryCounts = (reporter: IImageRolloutReporterStatus): boolean =>
  reporter.observedReplicaCount > reporter.requiredReplicaCount
  || reporter.healthyReplicaCount > reporter.observedReplicaCount
  || reporter.verifiedReplicaCount > reporter.observedReplicaCount;

const zeroCounts = (): ReplicaCounts => ({
  requiredReplicaCount: 0,
  observedReplicaCount: 0,
  healthyReplicaCount: 0,
  verifiedReplicaCount: 0,
  failedReplicaCount: 0,
});

/** Adds one reporter's counts to a running total (left operand: the total, as upstream). */
const addReporterCounts = (sum: ReplicaCounts, reporter: IImageRolloutReporterStatus): ReplicaCounts => ({
  requiredReplicaCount: sum.requiredReplicaCount + reporter.requiredReplicaCount,
  observedReplicaCount: sum.observedReplicaCount + reporter.observedReplicaCount,
  healthyReplicaCount: sum.healthyReplicaCount + reporter.healthyReplicaCount,
  verifiedReplicaCount: sum.verifiedReplicaCount + reporter.verifiedReplicaCount,
  failedReplicaCount: sum.failedReplicaCount + reporter.failedReplicaCount,
});

const countsDiffer = (left: ReplicaCounts, right: ReplicaCounts): boolean =>
  left.requiredReplicaCount !== right.requiredReplicaCount
  || left.observedReplicaCount !== right.observedReplicaCount
  || left.healthyReplicaCount !== right.healthyReplicaCount
  || left.verifiedReplicaCount !== right.verifiedReplicaCount
  || left.failedReplicaCount !== right.failedReplicaCount;

/**
 * Every rule an image rollout status breaks, in upstream's order; `[]` when valid.
 * `succeeded` and `rolled-back` additionally require complete, verified, exactly
 * adding-up reporter evidence.
 */
export const validateImageRolloutStatus = (statusArg: IImageRolloutStatus): string[] => {
  const problems: string[] = [];

  if (replicaCountsOf(statusArg).some(isNotNonNegativeSafeInteger)) {
    problems.push(statusValidationMessages.aggregateCounts);
  }

  // `statusArg.reporters` is spelled out at each use: V8 quotes that expression in
  // "… is not a function / not iterable" errors, which must match upstream's.
  const reporterIds = statusArg.reporters.map((reporter) => reporter.reporterId);
  const sessionIds = statusArg.reporters.map((reporter) => reporter.reporterSessionId);
  const coveredNodeNames = statusArg.reporters.flatMap((reporter) => reporter.reporterNodeNames);
  if (containsDuplicates(reporterIds) || containsDuplicates(sessionIds)) {
    problems.push(statusValidationMessages.duplicateReporters);
  }

  for (const reporter of statusArg.reporters) {
    if (replicaCountsOf(reporter).some(isNotNonNegativeSafeInteger)) {
      problems.push(statusValidationMessages.reporterCounts);
    }
    if (reporter.rolloutId !== statusArg.rolloutId || reporter.rolloutGeneration !== statusArg.rolloutGeneration) {
      problems.push(statusValidationMessages.reporterIdentity);
    }
    if (hasContradictoryCounts(reporter)) {
      problems.push(statusValidationMessages.reporterContradiction);
    }
  }

  const claimsSuccess = statusArg.status === 'succeeded' || statusArg.status === 'rolled-back';
  if (!claimsSuccess) {
    return problems;
  }

  if (hasIncompleteReplicas(statusArg)) {
    problems.push(statusValidationMessages.successIncomplete);
  }
  if (statusArg.mismatchReason || statusArg.reporters.length < 1) {
    problems.push(statusValidationMessages.successWithMismatch);
  }
  if (containsDuplicates(coveredNodeNames)) {
    problems.push(statusValidationMessages.successNodeCountedTwice);
  }
  if (statusArg.reporters.some((reporter) => hasIncompleteReplicas(reporter) || Boolean(reporter.mismatchReason))) {
    problems.push(statusValidationMessages.successReporterIncomplete);
  }
  if (countsDiffer(statusArg.reporters.reduce(addReporterCounts, zeroCounts()), statusArg)) {
    problems.push(statusValidationMessages.successTotalsDiffer);
  }

  return problems;
};
