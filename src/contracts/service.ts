/**
 * Upstream `ts/data/service.ts` `IService` and `TServiceWritableData` (11.3.0).
 *
 * Visible in the diff: `data.imageVersion`, `data.registryTarget?`, `data.deployOnPush?`,
 * the 11.3.0 additions `data.immutableImageRequired?`, `data.imageDeployment?`,
 * `data.imageRolloutStatus?`, `data.deploymentIds`, and `TServiceWritableData`.
 * Modeled (hidden by the diff; the fields a Cloudly service obviously carries):
 * `id`, `data.name`, `data.description`, `data.imageId`, `data.environment`,
 * `data.secretBundleId?`, `data.scaleFactor`, `data.balancingStrategy`, `data.ports`,
 * `data.resources?`, `data.domains`.
 * Not modeled (upstream has them, this product does not use them): volumes, mail,
 * hosted-app lifecycle, app-store published ports, domain routes, public port
 * mappings, target ports, the rolling-update flag.
 *
 * Project extensions (not upstream): `data.placement?` names the clusters a service
 * runs on and the replicas per node; promotion computes the rollout target scope
 * from it and the registered nodes. `data.rolloutPolicy?` holds the lifecycle settings. `data.trustPolicy?`
 * names the signatures and attestations a digest needs before a rollout of it is issued.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Id, Name, contractLimits, strictObject } from './common.js';
import { ClusterId } from './clusters.js';
import { IImageRolloutStatus, IImmutableImageDeploymentPlan } from './immutableImage.js';
import { literalUnion } from './literals.js';
import { IRegistryTarget } from './registry.js';
import { IRolloutPolicy } from './rolloutPolicy.js';
import { IPromotionPolicy } from './promotionPolicy.js';
import { ITrustPolicy } from './trustPolicy.js';

/**
 * Map keys are stored as document field names: they must never start with `$` or
 * contain `.` (docs/operations.md), hence the key patterns below.
 */
const environmentVariableName = '^[A-Za-z_][A-Za-z0-9_]{0,255}$';
const customPortName = '^[A-Za-z0-9_-]{1,128}$';

export const balancingStrategies = ['round-robin', 'least-connections'] as const;

/** Project extension: where a service runs (see the module comment). */
export const IServicePlacement = strictObject({
  // Cluster ids as a registration (and a cluster token's clusterId claim) can carry them: a placement on any other can never be served.
  clusterIds: Type.Array(ClusterId, { minItems: 1, maxItems: contractLimits.clusters, uniqueItems: true }),
  replicasPerNode: Type.Integer({ minimum: 1, maximum: contractLimits.replicas }),
});
export type IServicePlacement = Static<typeof IServicePlacement>;

/** Modeled after upstream's `IServiceRessources` (docker.ts), which the diff does not show. */
export const IServiceResources = strictObject({
  memorySizeMB: Type.Optional(Type.Integer({ minimum: 1, maximum: 16_777_216 })),
  cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024 })),
});
export type IServiceResources = Static<typeof IServiceResources>;

export const IServiceData = strictObject({
  name: Name,
  description: Type.String({ maxLength: contractLimits.descriptionLength }),
  imageId: Id,
  imageVersion: Name,
  environment: Type.Record(
    Type.String({ pattern: environmentVariableName }),
    Type.String({ maxLength: contractLimits.environmentValueLength }),
    { additionalProperties: false, maxProperties: contractLimits.environmentEntries },
  ),
  secretBundleId: Type.Optional(Id),
  scaleFactor: Type.Integer({ minimum: 0, maximum: contractLimits.replicas }),
  balancingStrategy: literalUnion(balancingStrategies),
  ports: strictObject({
    web: Type.Integer({ minimum: 1, maximum: 65535 }),
    custom: Type.Optional(Type.Record(
      Type.String({ pattern: customPortName }),
      Type.String({ maxLength: contractLimits.nameLength }),
      { additionalProperties: false, maxProperties: contractLimits.customPortEntries },
    )),
  }),
  resources: Type.Optional(IServiceResources),
  domains: Type.Array(strictObject({ name: Name }), { maxItems: contractLimits.domains }),
  deploymentIds: Type.Array(Id, { maxItems: contractLimits.deploymentIds }),
  registryTarget: Type.Optional(IRegistryTarget),
  deployOnPush: Type.Optional(Type.Boolean()),
  /** Fail closed unless Cloudly supplies and Coreflow verifies a digest-pinned rollout. */
  immutableImageRequired: Type.Optional(Type.Boolean()),
  /** Server-managed immutable desired state. Use the promotion/rollback APIs to change it. */
  imageDeployment: Type.Optional(IImmutableImageDeploymentPlan),
  /** Server-managed aggregate of task-derived runtime evidence. */
  imageRolloutStatus: Type.Optional(IImageRolloutStatus),
  /** Project extension: target clusters and replicas per node. */
  placement: Type.Optional(IServicePlacement),
  /** Project extension: progress deadline, stability window, automatic rollback, automatic promotion filter (src/contracts/rolloutPolicy.ts). */
  rolloutPolicy: Type.Optional(IRolloutPolicy),
  /** Project extension: the signatures and attestations a digest needs before promotion (src/contracts/trustPolicy.ts, docs/trust.md); absent = none. */
  trustPolicy: Type.Optional(ITrustPolicy),
  /** Project extension: pipeline stages, approvals, windows and break-glass (src/contracts/promotionPolicy.ts, docs/governance.md); absent = none. */
  promotionPolicy: Type.Optional(IPromotionPolicy),
});
export type IServiceData = Static<typeof IServiceData>;

export const IService = strictObject({
  id: Id,
  data: IServiceData,
});
export type IService = Static<typeof IService>;

/** The `IService['data']` fields only the server may write (docs/errors.md: `server-managed-field`). */
export const serverManagedServiceDataFields = [
  'immutableImageRequired',
  'imageDeployment',
  'imageRolloutStatus',
] as const;

/** Caller-writable service data. Immutable policy and rollout fields are server-managed. */
export const TServiceWritableData = Type.Omit(IServiceData, [...serverManagedServiceDataFields]);
export type TServiceWritableData = Static<typeof TServiceWritableData>;
