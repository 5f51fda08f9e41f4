/**
 * Compile-time shape check (type-checked by `tsc -p tsconfig.json --noEmit`; not a
 * runtime test). The `Upstream` namespace below is a test-only transcription of
 * the upstream `@serve.zone/interfaces` 11.3.0 interfaces (../shared/upstream/):
 * `immutableimage.ts` verbatim, the other modules as far as the diff shows them plus
 * the fields src/contracts models (marked "modeled"). Every contract type must be
 * exactly equal to its upstream counterpart: `Expect<Equals<Ours, Upstream>>` fails to
 * compile on any difference — a missing, extra, optional-vs-required or differently
 * typed member, `string` instead of `sha256:${string}`, and so on.
 */
import type * as C from '../../../src/contracts/index.js';

/** Exact type equality (identical types), not mere mutual assignability. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
type Expect<T extends true> = T;
type Not<T extends boolean> = T extends true ? false : true;
/** Flattens an intersection into one object type (for the project extension below). */
type Flat<T> = { [K in keyof T]: T[K] };

declare namespace Upstream {
  // ---- immutableimage.ts (verbatim, types only) ----
  /** Canonical lower-case OCI sha256 digest. */
  export type TSha256Digest = `sha256:${string}`;

  export type TImageDeploymentPolicy = 'legacy-tag' | 'immutable-digest';

  export type TOciManifestMediaType =
    | 'application/vnd.oci.image.index.v1+json'
    | 'application/vnd.oci.image.manifest.v1+json'
    | 'application/vnd.docker.distribution.manifest.list.v2+json'
    | 'application/vnd.docker.distribution.manifest.v2+json';

  export type TImmutableImageRolloutMode = 'promotion' | 'automatic' | 'rollback';

  export type TImmutableImageMismatchReason =
    | 'immutable-plan-missing'
    | 'requested-digest-missing'
    | 'requested-digest-malformed'
    | 'registry-digest-inconsistent'
    | 'runtime-capability-missing'
    | 'pull-failed'
    | 'pulled-digest-missing'
    | 'pulled-digest-mismatch'
    | 'service-image-not-digest-pinned'
    | 'service-image-digest-mismatch'
    | 'task-image-not-digest-pinned'
    | 'task-image-digest-mismatch'
    | 'container-inspection-unavailable'
    | 'container-image-id-missing'
    | 'container-repodigest-missing'
    | 'container-repodigest-mismatch'
    | 'runtime-attestation-missing'
    | 'required-replica-missing'
    | 'replica-unhealthy'
    | 'replica-failed'
    | 'stale-rollout-report'
    | 'rollback-target-not-accepted';

  export type TRuntimeImageVerificationStatus =
    | 'not-required'
    | 'pending'
    | 'verified'
    | 'missing'
    | 'mismatched';

  export type TImmutableImageRolloutStatus =
    | 'pending'
    | 'deploying'
    | 'verifying'
    | 'succeeded'
    | 'failed'
    | 'mismatched'
    | 'rolling-back'
    | 'rolled-back';

  export interface ICoreflowRuntimeCapabilities {
    immutableImageDeploymentVersion: 1;
  }

  /**
   * A registry manifest observed by Cloudly. Observation alone does not make the
   * release deployable: acceptedAt is set only by an explicit promotion or a
   * configured automatic promotion.
   */
  export interface IImageRelease {
    id: string;
    data: {
      serviceId: string;
      imageId: string;
      registryHost: string;
      repository: string;
      /** Digest of the registry root descriptor, preserving an index/list when submitted. */
      registryRootDigest: TSha256Digest;
      digestPinnedImageReference: string;
      manifestMediaType: TOciManifestMediaType;
      observedTags: string[];
      firstObservedAt: number;
      lastObservedAt: number;
      observationCount: number;
      acceptedAt?: number;
      lastPromotedAt?: number;
      promotionCount?: number;
    };
  }

  export interface IImmutableImageTargetScope {
    targetClusterIds: string[];
    targetNodeNames: string[];
    replicasPerNode: number;
    requiredReplicaCount: number;
  }

  /** Immutable desired state issued by Cloudly and consumed by Coreflow. */
  export interface IImmutableImageDeploymentPlan {
    policy: 'immutable-digest';
    rolloutId: string;
    rolloutGeneration: number;
    releaseId: string;
    registryHost: string;
    repository: string;
    requestedDigest: TSha256Digest;
    digestPinnedImageReference: string;
    manifestMediaType: TOciManifestMediaType;
    createdAt: number;
    mode: TImmutableImageRolloutMode;
    rollbackOfRolloutId?: string;
    targetScope: IImmutableImageTargetScope;
  }

  /** Runtime evidence collected from Docker service, task, container and image state. */
  interface IRuntimeImageEvidenceBase {
    rolloutId?: string;
    rolloutGeneration?: number;
    expectedDigest?: TSha256Digest;
    serviceImageReference?: string;
    taskImageReference?: string;
    taskReportedDigest?: TSha256Digest;
    containerImageId?: string;
    containerConfigImageReference?: string;
    resolvedDigest?: TSha256Digest;
    platformManifestDigest?: TSha256Digest;
    repoDigests?: string[];
    evidenceSource?: 'task-spec' | 'local-container-inspect';
    observedAt: number;
  }

  export interface IVerifiedRuntimeImageEvidence extends IRuntimeImageEvidenceBase {
    verificationStatus: 'verified';
    rolloutId: string;
    rolloutGeneration: number;
    expectedDigest: TSha256Digest;
    serviceImageReference: string;
    taskImageReference: string;
    taskReportedDigest: TSha256Digest;
    containerImageId: string;
    containerConfigImageReference: string;
    resolvedDigest: TSha256Digest;
    repoDigests: string[];
    evidenceSource: 'local-container-inspect';
    mismatchReason?: never;
  }

  export interface IUnverifiedRuntimeImageEvidence extends IRuntimeImageEvidenceBase {
    verificationStatus: 'missing' | 'mismatched';
    mismatchReason: TImmutableImageMismatchReason;
  }

  export interface IPendingRuntimeImageEvidence extends IRuntimeImageEvidenceBase {
    verificationStatus: 'pending' | 'not-required';
    mismatchReason?: never;
  }

  export type IRuntimeImageEvidence =
    | IVerifiedRuntimeImageEvidence
    | IUnverifiedRuntimeImageEvidence
    | IPendingRuntimeImageEvidence;

  /** Mandatory security envelope when reporting an immutable rollout. */
  export interface IImmutableRolloutReportEnvelope {
    rolloutId: string;
    rolloutGeneration: number;
    reporterSessionId: string;
    reportSequence: number;
    reporterCapabilities: ICoreflowRuntimeCapabilities;
    reporterNodeIds: string[];
    reporterNodeNames: string[];
  }

  export interface IImageRolloutReporterStatus {
    reporterId: string;
    reporterSessionId: string;
    clusterId: string;
    reporterNodeNames: string[];
    rolloutId: string;
    rolloutGeneration: number;
    reportSequence: number;
    reportedAt: number;
    requiredReplicaCount: number;
    observedReplicaCount: number;
    healthyReplicaCount: number;
    verifiedReplicaCount: number;
    failedReplicaCount: number;
    mismatchReason?: TImmutableImageMismatchReason;
  }

  export interface IImageRolloutStatus {
    rolloutId: string;
    rolloutGeneration: number;
    expectedDigest: TSha256Digest;
    status: TImmutableImageRolloutStatus;
    requiredReplicaCount: number;
    observedReplicaCount: number;
    healthyReplicaCount: number;
    verifiedReplicaCount: number;
    failedReplicaCount: number;
    mismatchReason?: TImmutableImageMismatchReason;
    updatedAt: number;
    reporters: IImageRolloutReporterStatus[];
  }

  // ---- registry.ts ----
  export type TRegistryProtocol = 'oci';

  export interface IRegistryTarget {
    protocol: TRegistryProtocol;
    registryHost: string;
    repository: string; // modeled
    tag?: string; // modeled
    imageUrl?: string; // modeled
    serviceId?: string; // modeled
    imageId?: string;
  }

  export interface IRegistryPushEvent {
    eventId?: string;
    releaseId?: string;
    protocol: TRegistryProtocol;
    registryHost: string;
    repository: string;
    tag: string; // the one hidden line
    digest: string;
    imageUrl: string;
    pushedAt: number;
    observedAt?: number;
    serviceId?: string;
    imageId?: string;
    actorUserId?: string;
    manifestMediaType?: string;
  }

  /** Fully verified registry observation used by immutable release processing. */
  export interface IImmutableRegistryPushEvent {
    deploymentPolicy: 'immutable-digest';
    eventId: string;
    releaseId: string;
    protocol: TRegistryProtocol;
    registryHost: string;
    repository: string;
    tag: string;
    registryRootDigest: TSha256Digest;
    digestPinnedImageReference: string;
    imageUrl: string;
    observedAt: number;
    serviceId: string;
    imageId: string;
    manifestMediaType: TOciManifestMediaType;
    actorUserId?: string;
  }

  // ---- image.ts ----
  export interface IImage {
    id: string;
    data: {
      name: string; // modeled
      description: string; // modeled
      versions: Array<{
        versionString: string;
        digest?: string;
        releaseId?: string;
        manifestMediaType?: string;
        registryRepository?: string;
        registryTag?: string;
        source?: 'upload' | 'registry';
        storagePath?: string; // modeled (one hidden line)
        size: number;
        createdAt: number;
      }>;
      lastPushEvent?: IRegistryPushEvent | IImmutableRegistryPushEvent;
    };
  }

  // ---- deployment.ts ----
  export interface IDeployment {
    id: string; // modeled
    serviceId: string; // modeled
    nodeName?: string; // modeled
    nodeId?: string; // modeled
    containerId?: string; // modeled
    usedImageId?: string; // modeled
    slot?: number;
    /** Docker desired state for this task/deployment. */
    desiredState?: string;
    /** Immutable rollout generation represented by this task, when applicable. */
    rolloutId?: string;
    rolloutGeneration?: number;
    /** Evidence derived from Docker runtime state rather than service intent metadata. */
    runtimeImageEvidence?: IRuntimeImageEvidence;
    deploymentLog: string[]; // modeled
    status: 'scheduled' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed'; // modeled
    deployedAt?: number; // modeled
  }

  // ---- user.ts (not in the diff: modeled) ----
  export interface IIdentity {
    name: string;
    userId: string;
    type?: 'human' | 'machine';
    role?: 'admin' | 'user' | 'api' | 'cluster';
    expiresAt: number;
    jwt: string;
  }

  // ---- service.ts ----
  export interface IService {
    id: string; // modeled
    data: {
      name: string; // modeled
      description: string; // modeled
      imageId: string; // modeled
      imageVersion: string;
      environment: { [key: string]: string }; // modeled
      secretBundleId?: string; // modeled
      scaleFactor: number; // modeled
      balancingStrategy: 'round-robin' | 'least-connections'; // modeled
      ports: { web: number; custom?: { [key: string]: string } }; // modeled
      resources?: { memorySizeMB?: number; cpus?: number }; // modeled
      domains: { name: string }[]; // modeled
      registryTarget?: IRegistryTarget;
      deployOnPush?: boolean;
      /** Fail closed unless Cloudly supplies and Coreflow verifies a digest-pinned rollout. */
      immutableImageRequired?: boolean;
      /** Server-managed immutable desired state. Use the promotion/rollback APIs to change it. */
      imageDeployment?: IImmutableImageDeploymentPlan;
      /** Server-managed aggregate of task-derived runtime evidence. */
      imageRolloutStatus?: IImageRolloutStatus;
      deploymentIds: string[];
    };
  }

  /** Caller-writable service data. Immutable policy and rollout fields are server-managed. */
  export type TServiceWritableData = Omit<
    IService['data'],
    'immutableImageRequired' | 'imageDeployment' | 'imageRolloutStatus'
  >;

  // ---- requests/service.ts and requests/deployment.ts (method, request, response) ----
  // `TService`/`TWritable` are parameters so that the same transcription serves the
  // upstream shapes and the shapes served by this project (with its `placement` extension).
  export interface IRequest_Any_Cloudly_GetServiceById<TService = IService> {
    method: 'getServiceById';
    request: { identity: IIdentity; serviceId: string }; // modeled
    response: { service: TService }; // modeled
  }

  export interface IRequest_Any_Cloudly_GetServiceImageReleases {
    method: 'getServiceImageReleases';
    request: {
      identity: IIdentity;
      serviceId: string;
    };
    response: {
      releases: IImageRelease[];
    };
  }

  export interface IRequest_Any_Cloudly_PromoteServiceImageRelease<TService = IService> {
    method: 'promoteServiceImageRelease';
    request: {
      identity: IIdentity;
      serviceId: string;
      releaseId: string;
      idempotencyKey: string;
      expectedRolloutGeneration: number;
      expectedCurrentRolloutId?: string;
      /** Explicitly opts the service into fail-closed immutable deployment. */
      enableImmutableImage: true;
    };
    response: {
      service: TService;
    };
  }

  export interface IRequest_Any_Cloudly_RollbackServiceImageRelease<TService = IService> {
    method: 'rollbackServiceImageRelease';
    request: {
      identity: IIdentity;
      serviceId: string;
      releaseId: string;
      idempotencyKey: string;
      expectedCurrentRolloutId: string;
      expectedRolloutGeneration: number;
    };
    response: {
      service: TService;
    };
  }

  export interface IRequest_Any_Cloudly_CreateService<TService = IService, TWritable = TServiceWritableData> {
    method: 'createService';
    request: {
      identity: IIdentity;
      serviceData: TWritable;
    };
    response: {
      service: TService;
    };
  }

  export interface IRequest_Any_Cloudly_UpdateService<TService = IService, TWritable = TServiceWritableData> {
    method: 'updateService';
    request: {
      identity: IIdentity;
      serviceId: string;
      serviceData: TWritable;
    };
    response: {
      service: TService;
    };
  }

  export interface IReq_Coreflow_Cloudly_ReportDeploymentSnapshots {
    method: 'reportDeploymentSnapshots';
    request: {
      identity: IIdentity; // modeled
      serviceId: string; // modeled
      deployments: IDeployment[]; // modeled
      reporterNodeNames?: string[];
      /** Mandatory when the referenced service requires immutable deployment. */
      immutableReport?: IImmutableRolloutReportEnvelope;
      reportedAt: number;
    };
    response: Record<string, never>;
  }
}

// ---- This project's extension of IService['data'] (not upstream) ----
type PlacementExtension = { placement?: { clusterIds: string[]; replicasPerNode: number } };
type RolloutPolicyExtension = {
  rolloutPolicy?: {
    progressDeadlineSeconds?: number;
    stabilityWindowSeconds?: number;
    clockToleranceSeconds?: number;
    autoRollback?: { enabled: boolean; triggers?: Array<'failed' | 'mismatched' | 'deadline'> };
    automaticPromotion?: { tagPattern?: string; semverRange?: string };
  };
};
type TrustPolicyExtension = {
  trustPolicy?: {
    publicKeys?: Array<{ keyId: string; publicKeyPem: string; description?: string }>;
    keylessIdentities?: Array<{ issuer: string; subject?: string; subjectPattern?: string }>;
    requiredAttestations?: string[];
  };
};
// The promotion policy's own shape is checked in test/unit/contracts/promotionPolicy.test.ts.
type PromotionPolicyExtension = { promotionPolicy?: C.IPromotionPolicy };
type Extensions = PlacementExtension & RolloutPolicyExtension & TrustPolicyExtension & PromotionPolicyExtension;
type ServedServiceData = Flat<Upstream.IService['data'] & Extensions>;
type ServedService = { id: string; data: ServedServiceData };
type ServedWritableData = Flat<Upstream.TServiceWritableData & Extensions>;

// ---- immutableimage.ts: every type, exactly ----
export type ImmutableImageShapes = [
  Expect<Equals<C.TSha256Digest, Upstream.TSha256Digest>>,
  Expect<Equals<C.TImageDeploymentPolicy, Upstream.TImageDeploymentPolicy>>,
  Expect<Equals<C.TOciManifestMediaType, Upstream.TOciManifestMediaType>>,
  Expect<Equals<C.TImmutableImageRolloutMode, Upstream.TImmutableImageRolloutMode>>,
  Expect<Equals<C.TImmutableImageMismatchReason, Upstream.TImmutableImageMismatchReason>>,
  Expect<Equals<C.TRuntimeImageVerificationStatus, Upstream.TRuntimeImageVerificationStatus>>,
  Expect<Equals<C.TImmutableImageRolloutStatus, Upstream.TImmutableImageRolloutStatus>>,
  Expect<Equals<C.ICoreflowRuntimeCapabilities, Upstream.ICoreflowRuntimeCapabilities>>,
  Expect<Equals<C.IImageRelease, Upstream.IImageRelease>>,
  Expect<Equals<C.IImmutableImageTargetScope, Upstream.IImmutableImageTargetScope>>,
  Expect<Equals<C.IImmutableImageDeploymentPlan, Upstream.IImmutableImageDeploymentPlan>>,
  Expect<Equals<C.IVerifiedRuntimeImageEvidence, Upstream.IVerifiedRuntimeImageEvidence>>,
  Expect<Equals<C.IUnverifiedRuntimeImageEvidence, Upstream.IUnverifiedRuntimeImageEvidence>>,
  Expect<Equals<C.IPendingRuntimeImageEvidence, Upstream.IPendingRuntimeImageEvidence>>,
  Expect<Equals<C.IRuntimeImageEvidence, Upstream.IRuntimeImageEvidence>>,
  Expect<Equals<C.IImmutableRolloutReportEnvelope, Upstream.IImmutableRolloutReportEnvelope>>,
  Expect<Equals<C.IImageRolloutReporterStatus, Upstream.IImageRolloutReporterStatus>>,
  Expect<Equals<C.IImageRolloutStatus, Upstream.IImageRolloutStatus>>,
];

// ---- helper signatures ----
export type HelperSignatures = [
  Expect<Equals<typeof C.normalizeSha256Digest, (digest: string) => Upstream.TSha256Digest | undefined>>,
  Expect<Equals<typeof C.isSha256Digest, (digest: string) => digest is Upstream.TSha256Digest>>,
  Expect<Equals<
    typeof C.buildDigestPinnedImageReference,
    (registryHost: string, repository: string, digest: Upstream.TSha256Digest) => string
  >>,
  Expect<Equals<typeof C.getDigestFromPinnedImageReference, (imageReference: string) => Upstream.TSha256Digest | undefined>>,
  Expect<Equals<
    typeof C.validateImmutableImageDeploymentPlan,
    (planArg: Upstream.IImmutableImageDeploymentPlan) => string[]
  >>,
  Expect<Equals<typeof C.validateImageRolloutStatus, (statusArg: Upstream.IImageRolloutStatus) => string[]>>,
];

// ---- registry, image, deployment, identity, service ----
export type DataShapes = [
  Expect<Equals<C.TRegistryProtocol, Upstream.TRegistryProtocol>>,
  Expect<Equals<C.IRegistryTarget, Upstream.IRegistryTarget>>,
  Expect<Equals<C.IRegistryPushEvent, Upstream.IRegistryPushEvent>>,
  Expect<Equals<C.IImmutableRegistryPushEvent, Upstream.IImmutableRegistryPushEvent>>,
  Expect<Equals<C.IImage, Upstream.IImage>>,
  Expect<Equals<C.IDeployment, Upstream.IDeployment>>,
  Expect<Equals<C.IIdentity, Upstream.IIdentity>>,
  // Without the project extensions, IService['data'] is upstream's; with them, exactly upstream + placement + rolloutPolicy + trustPolicy + promotionPolicy.
  Expect<Equals<Flat<Omit<C.IService['data'], 'placement' | 'rolloutPolicy' | 'trustPolicy' | 'promotionPolicy'>>, Upstream.IService['data']>>,
  Expect<Equals<C.IService['data'], ServedServiceData>>,
  Expect<Equals<C.IService, ServedService>>,
  Expect<Equals<Flat<Omit<C.TServiceWritableData, 'placement' | 'rolloutPolicy' | 'trustPolicy' | 'promotionPolicy'>>, Flat<Upstream.TServiceWritableData>>>,
  Expect<Equals<C.ITrustPolicy, NonNullable<TrustPolicyExtension['trustPolicy']>>>,
  Expect<Equals<C.IRolloutPolicy, NonNullable<RolloutPolicyExtension['rolloutPolicy']>>>,
  Expect<Equals<C.TServiceWritableData, ServedWritableData>>,
  Expect<Equals<C.IServicePlacement, NonNullable<PlacementExtension['placement']>>>,
];

// ---- TypedRequest methods: method, request, response ----
export type RequestShapes = [
  Expect<Equals<C.IRequest_Any_Cloudly_GetServiceById, Upstream.IRequest_Any_Cloudly_GetServiceById<ServedService>>>,
  Expect<Equals<C.IRequest_Any_Cloudly_GetServiceImageReleases, Upstream.IRequest_Any_Cloudly_GetServiceImageReleases>>,
  Expect<Equals<
    C.IRequest_Any_Cloudly_PromoteServiceImageRelease,
    Upstream.IRequest_Any_Cloudly_PromoteServiceImageRelease<ServedService>
  >>,
  Expect<Equals<
    C.IRequest_Any_Cloudly_RollbackServiceImageRelease,
    Upstream.IRequest_Any_Cloudly_RollbackServiceImageRelease<ServedService>
  >>,
  Expect<Equals<
    C.IRequest_Any_Cloudly_CreateService,
    Upstream.IRequest_Any_Cloudly_CreateService<ServedService, ServedWritableData>
  >>,
  Expect<Equals<
    C.IRequest_Any_Cloudly_UpdateService,
    Upstream.IRequest_Any_Cloudly_UpdateService<ServedService, ServedWritableData>
  >>,
  Expect<Equals<C.IReq_Coreflow_Cloudly_ReportDeploymentSnapshots, Upstream.IReq_Coreflow_Cloudly_ReportDeploymentSnapshots>>,
  // The named request/response schemas are the same types.
  Expect<Equals<C.PromoteServiceImageReleaseRequest, Upstream.IRequest_Any_Cloudly_PromoteServiceImageRelease['request']>>,
  Expect<Equals<C.ReportDeploymentSnapshotsResponse, Record<string, never>>>,
  // The payload an operation receives is the upstream request without `identity`.
  Expect<Equals<
    Flat<C.TypedRequestPayload<'promoteServiceImageRelease'>>,
    Flat<Omit<Upstream.IRequest_Any_Cloudly_PromoteServiceImageRelease['request'], 'identity'>>
  >>,
  Expect<Equals<
    Flat<C.TypedRequestPayload<'reportDeploymentSnapshots'>>,
    Flat<Omit<Upstream.IReq_Coreflow_Cloudly_ReportDeploymentSnapshots['request'], 'identity'>>
  >>,
  Expect<Equals<C.TTypedRequestMethod,
    | 'getServiceById' | 'getServiceImageReleases' | 'promoteServiceImageRelease'
    | 'rollbackServiceImageRelease' | 'createService' | 'updateService' | 'reportDeploymentSnapshots'>>,
];

// ---- the check itself is sensitive: near-misses are NOT equal ----
export type Sensitivity = [
  Expect<Not<Equals<string, Upstream.TSha256Digest>>>,
  Expect<Not<Equals<{ a?: string }, { a: string }>>>,
  Expect<Not<Equals<{ a: string }, { a: string; b?: never }>>>,
  Expect<Not<Equals<{ a: number }, { a: 1 }>>>,
  Expect<Not<Equals<C.IImageRelease, Flat<Upstream.IImageRelease & { extra?: string }>>>>,
  Expect<Not<Equals<C.IService, Upstream.IService>>>,
];
