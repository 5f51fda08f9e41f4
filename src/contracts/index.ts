/**
 * The upstream `@serve.zone/interfaces` 11.3.0 contracts this service implements,
 * as TypeBox schemas (one schema, one type: `export const X` + `export type X`) and
 * the six upstream helpers. Published as `cloudly-release-control-plane/contracts`.
 *
 * Source of truth: ../shared/upstream/immutableimage.ts (complete) and the
 * 11.1.1 → 11.3.0 diff (partial for the other modules). Fields the diff does not
 * show were modeled; each module's header lists them:
 * - registry.ts:   IRegistryTarget.repository, .tag?, .imageUrl?, .serviceId?;
 *                  IRegistryPushEvent.tag (one hidden line)
 * - image.ts:      IImage.data.name, .description, versions[].storagePath?
 * - deployment.ts: IDeployment.id, .serviceId, .nodeName?, .nodeId?, .containerId?,
 *                  .usedImageId?, .deploymentLog, .status, .deployedAt?
 * - service.ts:    IService.id and data.name, .description, .imageId, .environment,
 *                  .secretBundleId?, .scaleFactor, .balancingStrategy, .ports,
 *                  .resources?, .domains; plus this project's extension data.placement?
 * - identity.ts:   all of IIdentity (not in the diff)
 * - requests.ts:   getServiceById; identity/serviceId/deployments of reportDeploymentSnapshots
 */
export * from './common.js';
export * from './literals.js';
export * from './immutableImage.js';
export * from './registry.js';
export * from './image.js';
export * from './deployment.js';
export * from './rolloutPolicy.js';
export * from './promotionPolicy.js';
export * from './trustPolicy.js';
export * from './service.js';
export * from './identity.js';
export * from './requests.js';
export * from './releases.js';
export * from './clusters.js';
export * from './services.js';
export * from './helpers.js';
