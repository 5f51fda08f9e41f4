/**
 * TypeBox schemas for every type of upstream `@serve.zone/interfaces` 11.3.0
 * `ts/data/immutableimage.ts` (names and shapes are binding; see
 * ../shared/upstream/immutableimage.ts). The helper functions of that module
 * live in ./helpers.ts.
 *
 * What the schemas add to upstream's static types (upstream says `string`/`number`):
 * - every `TSha256Digest` is validated with `^sha256:[a-f0-9]{64}$` (upstream's
 *   "canonical lower-case OCI sha256 digest"),
 * - timestamps, counts, generations and sequences are safe non-negative integers,
 * - strings and arrays are bounded (./common.ts), unknown properties are rejected.
 * Semantic rules (generation ≥ 1, replica arithmetic, rollback consistency, …) are
 * left to `validateImmutableImageDeploymentPlan` / `validateImageRolloutStatus`,
 * so that they are reported with upstream's messages.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  Id,
  Name,
  NonNegativeSafeInteger,
  Reference,
  RegistryHost,
  Repository,
  Tag,
  Timestamp,
  contractLimits,
  strictObject,
} from './common.js';
import { literalUnion } from './literals.js';

/** The pattern upstream's `sha256DigestRegex` uses, as a JSON Schema `pattern`. */
export const sha256DigestPattern = '^sha256:[a-f0-9]{64}$';

/**
 * Canonical lower-case OCI sha256 digest. Upstream's static type is the template
 * literal `sha256:${string}`; the schema is stricter (64 lower-case hex digits) and
 * declares exactly upstream's static type.
 */
export const TSha256Digest = Type.Unsafe<`sha256:${string}`>(
  Type.String({ pattern: sha256DigestPattern }),
);
export type TSha256Digest = Static<typeof TSha256Digest>;

export const imageDeploymentPolicies = ['legacy-tag', 'immutable-digest'] as const;
export const TImageDeploymentPolicy = literalUnion(imageDeploymentPolicies);
export type TImageDeploymentPolicy = Static<typeof TImageDeploymentPolicy>;

export const ociManifestMediaTypes = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
] as const;
export const TOciManifestMediaType = literalUnion(ociManifestMediaTypes);
export type TOciManifestMediaType = Static<typeof TOciManifestMediaType>;

export const immutableImageRolloutModes = ['promotion', 'automatic', 'rollback'] as const;
export const TImmutableImageRolloutMode = literalUnion(immutableImageRolloutModes);
export type TImmutableImageRolloutMode = Static<typeof TImmutableImageRolloutMode>;

export const immutableImageMismatchReasons = [
  'immutable-plan-missing',
  'requested-digest-missing',
  'requested-digest-malformed',
  'registry-digest-inconsistent',
  'runtime-capability-missing',
  'pull-failed',
  'pulled-digest-missing',
  'pulled-digest-mismatch',
  'service-image-not-digest-pinned',
  'service-image-digest-mismatch',
  'task-image-not-digest-pinned',
  'task-image-digest-mismatch',
  'container-inspection-unavailable',
  'container-image-id-missing',
  'container-repodigest-missing',
  'container-repodigest-mismatch',
  'runtime-attestation-missing',
  'required-replica-missing',
  'replica-unhealthy',
  'replica-failed',
  'stale-rollout-report',
  'rollback-target-not-accepted',
] as const;
export const TImmutableImageMismatchReason = literalUnion(immutableImageMismatchReasons);
export type TImmutableImageMismatchReason = Static<typeof TImmutableImageMismatchReason>;

export const runtimeImageVerificationStatuses = [
  'not-required',
  'pending',
  'verified',
  'missing',
  'mismatched',
] as const;
export const TRuntimeImageVerificationStatus = literalUnion(runtimeImageVerificationStatuses);
export type TRuntimeImageVerificationStatus = Static<typeof TRuntimeImageVerificationStatus>;

export const immutableImageRolloutStatuses = [
  'pending',
  'deploying',
  'verifying',
  'succeeded',
  'failed',
  'mismatched',
  'rolling-back',
  'rolled-back',
] as const;
export const TImmutableImageRolloutStatus = literalUnion(immutableImageRolloutStatuses);
export type TImmutableImageRolloutStatus = Static<typeof TImmutableImageRolloutStatus>;

export const ICoreflowRuntimeCapabilities = strictObject({
  immutableImageDeploymentVersion: Type.Literal(1),
});
export type ICoreflowRuntimeCapabilities = Static<typeof ICoreflowRuntimeCapabilities>;

/**
 * A registry manifest observed by Cloudly. Observation alone does not make the
 * release deployable: acceptedAt is set only by an explicit promotion or a
 * configured automatic promotion.
 */
export const IImageRelease = strictObject({
  id: Id,
  data: strictObject({
    serviceId: Id,
    imageId: Id,
    registryHost: RegistryHost,
    repository: Repository,
    /** Digest of the registry root descriptor, preserving an index/list when submitted. */
    registryRootDigest: TSha256Digest,
    digestPinnedImageReference: Reference,
    manifestMediaType: TOciManifestMediaType,
    observedTags: Type.Array(Tag, { maxItems: contractLimits.observedTags }),
    firstObservedAt: Timestamp,
    lastObservedAt: Timestamp,
    observationCount: NonNegativeSafeInteger,
    acceptedAt: Type.Optional(Timestamp),
    lastPromotedAt: Type.Optional(Timestamp),
    promotionCount: Type.Optional(NonNegativeSafeInteger),
  }),
});
export type IImageRelease = Static<typeof IImageRelease>;

export const IImmutableImageTargetScope = strictObject({
  targetClusterIds: Type.Array(Id, { maxItems: contractLimits.clusters }),
  targetNodeNames: Type.Array(Name, { maxItems: contractLimits.nodes }),
  replicasPerNode: NonNegativeSafeInteger,
  requiredReplicaCount: NonNegativeSafeInteger,
});
export type IImmutableImageTargetScope = Static<typeof IImmutableImageTargetScope>;

/** Immutable desired state issued by Cloudly and consumed by Coreflow. */
export const IImmutableImageDeploymentPlan = strictObject({
  policy: Type.Literal('immutable-digest'),
  rolloutId: Id,
  rolloutGeneration: NonNegativeSafeInteger,
  releaseId: Id,
  registryHost: RegistryHost,
  repository: Repository,
  requestedDigest: TSha256Digest,
  digestPinnedImageReference: Reference,
  manifestMediaType: TOciManifestMediaType,
  createdAt: Timestamp,
  mode: TImmutableImageRolloutMode,
  rollbackOfRolloutId: Type.Optional(Id),
  targetScope: IImmutableImageTargetScope,
});
export type IImmutableImageDeploymentPlan = Static<typeof IImmutableImageDeploymentPlan>;

/** Runtime evidence collected from Docker service, task, container and image state. */
const runtimeImageEvidenceBase = {
  rolloutId: Type.Optional(Id),
  rolloutGeneration: Type.Optional(NonNegativeSafeInteger),
  expectedDigest: Type.Optional(TSha256Digest),
  serviceImageReference: Type.Optional(Reference),
  taskImageReference: Type.Optional(Reference),
  taskReportedDigest: Type.Optional(TSha256Digest),
  containerImageId: Type.Optional(Id),
  containerConfigImageReference: Type.Optional(Reference),
  resolvedDigest: Type.Optional(TSha256Digest),
  platformManifestDigest: Type.Optional(TSha256Digest),
  repoDigests: Type.Optional(Type.Array(Reference, { maxItems: contractLimits.repoDigests })),
  evidenceSource: Type.Optional(literalUnion(['task-spec', 'local-container-inspect'])),
  observedAt: Timestamp,
};

export const IVerifiedRuntimeImageEvidence = strictObject({
  ...runtimeImageEvidenceBase,
  verificationStatus: Type.Literal('verified'),
  rolloutId: Id,
  rolloutGeneration: NonNegativeSafeInteger,
  expectedDigest: TSha256Digest,
  serviceImageReference: Reference,
  taskImageReference: Reference,
  taskReportedDigest: TSha256Digest,
  containerImageId: Id,
  containerConfigImageReference: Reference,
  resolvedDigest: TSha256Digest,
  repoDigests: Type.Array(Reference, { maxItems: contractLimits.repoDigests }),
  evidenceSource: Type.Literal('local-container-inspect'),
  mismatchReason: Type.Optional(Type.Never()),
});
export type IVerifiedRuntimeImageEvidence = Static<typeof IVerifiedRuntimeImageEvidence>;

export const IUnverifiedRuntimeImageEvidence = strictObject({
  ...runtimeImageEvidenceBase,
  verificationStatus: literalUnion(['missing', 'mismatched']),
  mismatchReason: TImmutableImageMismatchReason,
});
export type IUnverifiedRuntimeImageEvidence = Static<typeof IUnverifiedRuntimeImageEvidence>;

export const IPendingRuntimeImageEvidence = strictObject({
  ...runtimeImageEvidenceBase,
  verificationStatus: literalUnion(['pending', 'not-required']),
  mismatchReason: Type.Optional(Type.Never()),
});
export type IPendingRuntimeImageEvidence = Static<typeof IPendingRuntimeImageEvidence>;

/**
 * The three evidence shapes, discriminated by `verificationStatus` (each value
 * belongs to exactly one branch, so at most one `anyOf` branch can match).
 */
export const IRuntimeImageEvidence = Type.Union([
  IVerifiedRuntimeImageEvidence,
  IUnverifiedRuntimeImageEvidence,
  IPendingRuntimeImageEvidence,
]);
export type IRuntimeImageEvidence = Static<typeof IRuntimeImageEvidence>;

/** Mandatory security envelope when reporting an immutable rollout. */
export const IImmutableRolloutReportEnvelope = strictObject({
  rolloutId: Id,
  rolloutGeneration: NonNegativeSafeInteger,
  reporterSessionId: Id,
  reportSequence: NonNegativeSafeInteger,
  reporterCapabilities: ICoreflowRuntimeCapabilities,
  reporterNodeIds: Type.Array(Id, { maxItems: contractLimits.nodes }),
  reporterNodeNames: Type.Array(Name, { maxItems: contractLimits.nodes }),
});
export type IImmutableRolloutReportEnvelope = Static<typeof IImmutableRolloutReportEnvelope>;

export const IImageRolloutReporterStatus = strictObject({
  reporterId: Id,
  reporterSessionId: Id,
  clusterId: Id,
  reporterNodeNames: Type.Array(Name, { maxItems: contractLimits.nodes }),
  rolloutId: Id,
  rolloutGeneration: NonNegativeSafeInteger,
  reportSequence: NonNegativeSafeInteger,
  reportedAt: Timestamp,
  requiredReplicaCount: NonNegativeSafeInteger,
  observedReplicaCount: NonNegativeSafeInteger,
  healthyReplicaCount: NonNegativeSafeInteger,
  verifiedReplicaCount: NonNegativeSafeInteger,
  failedReplicaCount: NonNegativeSafeInteger,
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
});
export type IImageRolloutReporterStatus = Static<typeof IImageRolloutReporterStatus>;

export const IImageRolloutStatus = strictObject({
  rolloutId: Id,
  rolloutGeneration: NonNegativeSafeInteger,
  expectedDigest: TSha256Digest,
  status: TImmutableImageRolloutStatus,
  requiredReplicaCount: NonNegativeSafeInteger,
  observedReplicaCount: NonNegativeSafeInteger,
  healthyReplicaCount: NonNegativeSafeInteger,
  verifiedReplicaCount: NonNegativeSafeInteger,
  failedReplicaCount: NonNegativeSafeInteger,
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
  updatedAt: Timestamp,
  reporters: Type.Array(IImageRolloutReporterStatus, { maxItems: contractLimits.reporters }),
});
export type IImageRolloutStatus = Static<typeof IImageRolloutStatus>;
