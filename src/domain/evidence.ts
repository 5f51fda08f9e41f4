import {
  getDigestFromPinnedImageReference, isSha256Digest,
  type IImmutableImageDeploymentPlan, type TImmutableImageMismatchReason, type TOciManifestMediaType,
  type TRuntimeImageVerificationStatus,
} from '../contracts/index.js';
import type { ReplicaHealth, ReplicaVerification } from './rolloutStatus.js';

/**
 * Fail-closed re-verification of one replica's runtime image evidence (docs/lifecycle.md,
 * "Snapshot reports"). Coreflow sends raw Docker facts plus its own verdict
 * (`verificationStatus`, `mismatchReason`); the verdict is never read. The server
 * recomputes it from the raw fields against the current plan and names the upstream
 * reason of the FIRST check that fails:
 *
 *   0. deployment rolloutId / rolloutGeneration (when present) ≠ plan → other-rollout
 *   1. no runtimeImageEvidence                          → runtime-attestation-missing (missing)
 *  1b. replica not running, evidence not from inspection → pending (not verified yet, no mismatch)
 *   2. evidenceSource ≠ local-container-inspect         → container-inspection-unavailable
 *   3. evidence rolloutId / rolloutGeneration ≠ plan    → stale-rollout-report
 *   4. expectedDigest absent / malformed / ≠ plan       → requested-digest-missing / -malformed /
 *                                                         registry-digest-inconsistent
 *   5. serviceImageReference                            → service-image-not-digest-pinned / -digest-mismatch
 *   6. taskImageReference                               → task-image-not-digest-pinned / -digest-mismatch
 *   7. taskReportedDigest absent / ≠ plan               → pulled-digest-missing / -mismatch
 *   8. containerImageId absent / not sha256:<64 hex>    → container-image-id-missing
 *   9. repoDigests empty / without host/repo@digest     → container-repodigest-missing / -mismatch
 *  10. resolvedDigest absent / ≠ plan (multi-arch rule) → pulled-digest-missing / -mismatch
 *  11. everything passed                               → verified (health does not matter here)
 *
 * Why this order: it follows the chain of custody from the report to the running
 * container, so the reason names the earliest broken link — the one an operator fixes
 * first, and the one that makes every later check meaningless.
 * - 0/1: whose evidence is this, and is there any? A task of the previous rollout still
 *   running during the update is simply not counted; it is not a failure of this one.
 * - 2/3: is the evidence runtime state (not task-spec intent) about THIS rollout? A
 *   report about another generation says nothing about the digests that follow.
 * - 4: did the reporter work from the plan's digest at all? Otherwise every digest
 *   comparison below fails for one upstream reason, which is the one to report.
 * - 5→6→7: what Swarm was told (service spec), what it scheduled (task spec), what the
 *   task says it pulled — intent before execution.
 * - 8→9→10: what the container actually runs: a local image exists, it is bound to
 *   `host/repo@digest` by RepoDigests, and the digest the engine resolved. Check 10 comes
 *   last because its multi-arch exception relies on checks 7 and 9 having passed.
 *
 * Strictness beyond the letter of each check (all fail closed):
 * - digests inside references are compared exactly, not after the helper's trim/lower-case
 *   normalization (`…@SHA256:AB…` is pinned but not to the plan's canonical digest);
 * - the optional `:tag` in a reference must be a valid Docker tag (`[\w][\w.-]{0,127}`);
 * - a `resolvedDigest` that differs from the plan must itself be canonical to be accepted
 *   under the multi-arch rule;
 * - values of the wrong runtime type count as absent or malformed, never as a match.
 * `containerConfigImageReference` is not checked: it is not part of the check list, and in
 * Swarm it repeats the task's image reference, which check 6 binds.
 */

/**
 * Runtime evidence as the lenient input schema (src/contracts/reports.ts) may let it
 * through: every field optional, `verificationStatus` any of the five values, digests
 * plain strings (a malformed one must reach check 4, not fail the whole report).
 * Deliberately flat and structural rather than the upstream union, so that a forged
 * `verified` claim with fields missing still type-checks and still gets a verdict. Any
 * upstream `IRuntimeImageEvidence` is one.
 */
export interface ReportedEvidence {
  rolloutId?: string;
  rolloutGeneration?: number;
  expectedDigest?: string;
  serviceImageReference?: string;
  taskImageReference?: string;
  taskReportedDigest?: string;
  containerImageId?: string;
  containerConfigImageReference?: string;
  resolvedDigest?: string;
  platformManifestDigest?: string;
  repoDigests?: readonly string[];
  evidenceSource?: string;
  observedAt?: number;
  /** The reporter's claim: never read. */
  verificationStatus?: TRuntimeImageVerificationStatus;
  /** The reporter's claim: never read. */
  mismatchReason?: TImmutableImageMismatchReason;
}

/** The fields of a reported `IDeployment` the verdict depends on (an `IDeployment` is one). */
export interface ReportedDeployment {
  /** Cloudly's deployment lifecycle status (running, starting, failed, …). */
  status: string;
  rolloutId?: string;
  rolloutGeneration?: number;
  runtimeImageEvidence?: ReportedEvidence;
}

export interface ReplicaVerdict {
  /** 'healthy' (status running), 'failed' (status failed), otherwise 'unhealthy'. */
  health: ReplicaHealth;
  verification: ReplicaVerification;
  /** Set iff `verification` is 'mismatched' or 'missing': the first failed check's reason. */
  mismatchReason?: TImmutableImageMismatchReason;
}

/** The health a deployment status stands for. */
const replicaHealthOf = (status: string): ReplicaHealth => {
  if (status === 'running') return 'healthy';
  if (status === 'failed') return 'failed';
  return 'unhealthy';
};

/**
 * Multi-arch rule (check 10):
 *
 * The plan's `requestedDigest` is the registry ROOT digest. For a multi-arch image that
 * root is an OCI image index or a Docker manifest list, while the engine on a node may
 * report the digest of the platform manifest it selected from that index as the
 * container's resolved digest. So `resolvedDigest ≠ requestedDigest` is accepted only
 * when ALL of these hold:
 * 1. the plan's `manifestMediaType` is `application/vnd.oci.image.index.v1+json` or
 *    `application/vnd.docker.distribution.manifest.list.v2+json` (a single-platform
 *    manifest has no other digest it could legitimately resolve to);
 * 2. the evidence names that platform manifest: `platformManifestDigest === resolvedDigest`
 *    (and it is a canonical sha256 digest);
 * 3. the task and the local image are already bound to the index digest: the task's
 *    reported digest equals the plan's (check 7) and the container's RepoDigests contain
 *    `host/repo@<index digest>` (check 9). Both are checked before this rule, so a report
 *    that reaches it has passed them.
 * Why that is enough: when Docker pulls an image by index digest it records the index
 * digest — not the platform manifest's — in the image's RepoDigests. The server cannot
 * check the index → platform-manifest mapping itself (that needs the registry), so it
 * relies on RepoDigests binding the local image to the index, and accepts the platform
 * digest only as the resolution of that index. Any other difference is
 * `pulled-digest-mismatch`.
 */
const imageIndexMediaTypes: ReadonlySet<TOciManifestMediaType> = new Set<TOciManifestMediaType>([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);

/** Docker's tag grammar. */
const dockerTag = /^[\w][\w.-]{0,127}$/;

const isString = (value: unknown): value is string => typeof value === 'string';

/** `name` without an optional `:tag` on its last path segment; undefined when the tag is not a valid tag. */
const withoutTag = (name: string): string | undefined => {
  const lastSegmentStart = name.lastIndexOf('/') + 1;
  const colon = name.indexOf(':', lastSegmentStart);
  if (colon < 0) return name;
  return dockerTag.test(name.slice(colon + 1)) ? name.slice(0, colon) : undefined;
};

type ReferenceBinding = 'bound' | 'not-pinned' | 'mismatch';

/**
 * Whether a Docker image reference is pinned, and pinned to exactly the plan's image and digest.
 * (The plan's own reference — what an honest agent reports — is bound without parsing: plan
 * validation makes it `host/repo@digest` of exactly the plan's registry, repository and digest.)
 */
const bindingOf = (plan: IImmutableImageDeploymentPlan, reference: unknown): ReferenceBinding => {
  if (reference === plan.digestPinnedImageReference) return 'bound';
  if (!isString(reference) || getDigestFromPinnedImageReference(reference) === undefined) return 'not-pinned';
  const at = reference.lastIndexOf('@');
  const name = withoutTag(reference.slice(0, at));
  const digest = reference.slice(at + 1);
  return name === `${plan.registryHost}/${plan.repository}` && digest === plan.requestedDigest ? 'bound' : 'mismatch';
};

/** Checks 2–10 on present evidence: the reason of the first failed check, or undefined. */
const firstFailedCheck = (
  plan: IImmutableImageDeploymentPlan,
  evidence: ReportedEvidence,
): TImmutableImageMismatchReason | undefined => {
  // 2. Runtime state only: task-spec evidence is what Swarm was asked to run.
  if (evidence.evidenceSource !== 'local-container-inspect') return 'container-inspection-unavailable';

  // 3. About this rollout.
  if (evidence.rolloutId !== plan.rolloutId || evidence.rolloutGeneration !== plan.rolloutGeneration) {
    return 'stale-rollout-report';
  }

  // 4. The reporter worked from the plan's digest.
  const expected = evidence.expectedDigest;
  if (expected !== plan.requestedDigest) {
    if (expected === undefined) return 'requested-digest-missing';
    if (!isString(expected) || !isSha256Digest(expected)) return 'requested-digest-malformed';
    return 'registry-digest-inconsistent';
  }

  // 5. Service spec.
  const service = bindingOf(plan, evidence.serviceImageReference);
  if (service === 'not-pinned') return 'service-image-not-digest-pinned';
  if (service === 'mismatch') return 'service-image-digest-mismatch';

  // 6. Task spec.
  const task = bindingOf(plan, evidence.taskImageReference);
  if (task === 'not-pinned') return 'task-image-not-digest-pinned';
  if (task === 'mismatch') return 'task-image-digest-mismatch';

  // 7. What the task says it pulled.
  if (evidence.taskReportedDigest === undefined) return 'pulled-digest-missing';
  if (evidence.taskReportedDigest !== plan.requestedDigest) return 'pulled-digest-mismatch';

  // 8. A local image exists (its id is the config digest, unrelated to the manifest digest).
  if (!isString(evidence.containerImageId) || !isSha256Digest(evidence.containerImageId)) {
    return 'container-image-id-missing';
  }

  // 9. The local image is bound to host/repo@digest.
  const repoDigests = evidence.repoDigests;
  if (!Array.isArray(repoDigests) || repoDigests.length === 0) return 'container-repodigest-missing';
  // (Plan validation makes the plan's reference exactly host/repo@digest of its registry, repository and digest.)
  const pinned = plan.digestPinnedImageReference;
  if (!repoDigests.some((entry) => entry === pinned)) return 'container-repodigest-mismatch';

  // 10. The digest the engine resolved, with the multi-arch rule above.
  const resolved = evidence.resolvedDigest;
  if (resolved === undefined) return 'pulled-digest-missing';
  if (resolved === plan.requestedDigest) return undefined;
  const isPlatformOfIndex = imageIndexMediaTypes.has(plan.manifestMediaType)
    && isString(resolved) && isSha256Digest(resolved)
    && evidence.platformManifestDigest === resolved;
  return isPlatformOfIndex ? undefined : 'pulled-digest-mismatch';
};

/**
 * The server's verdict on one reported replica against the current plan. The reporter's
 * `verificationStatus` and `mismatchReason` are never read.
 */
export function verifyReplicaEvidence (plan: IImmutableImageDeploymentPlan, deployment: ReportedDeployment): ReplicaVerdict {
  const health = replicaHealthOf(deployment.status);

  // 0. A task of another rollout (typically the previous one, still running during the update).
  const ofOtherRollout = (deployment.rolloutId !== undefined && deployment.rolloutId !== plan.rolloutId)
    || (deployment.rolloutGeneration !== undefined && deployment.rolloutGeneration !== plan.rolloutGeneration);
  if (ofOtherRollout) return { health, verification: 'other-rollout' };

  // 1. No evidence at all.
  const evidence = deployment.runtimeImageEvidence;
  if (evidence === undefined || evidence === null || typeof evidence !== 'object') {
    return { health, verification: 'missing', mismatchReason: 'runtime-attestation-missing' };
  }

  // 1b. A replica that is not running yet (scheduled, starting) has no container to inspect: the
  // upstream `pending` evidence. Not verified yet — not a mismatch. A RUNNING replica without
  // container inspection stays a mismatch (check 2), whatever it claims.
  if (deployment.status !== 'running' && evidence.evidenceSource !== 'local-container-inspect') {
    return { health, verification: 'pending' };
  }

  const mismatchReason = firstFailedCheck(plan, evidence);
  return mismatchReason === undefined
    ? { health, verification: 'verified' }
    : { health, verification: 'mismatched', mismatchReason };
}
