import type { Static, TSchema } from '@sinclair/typebox';
import {
  clusterContracts, clusterListLimits, releaseTypedRequestContracts, serviceTypedRequestContracts, typedRequestContracts,
} from '../../contracts/index.js';
import { ReportDeploymentSnapshotsInput } from '../../contracts/reports.js';
import { duplicateNodeNamesRefusal } from '../../domain/clusters.js';
import { permissions, type Permission } from '../../domain/principal.js';
import { serverManagedFieldRefusal } from '../../domain/services.js';
import { errors, type AppError } from '../../errors.js';
import type { Operations } from '../../operations/index.js';
import { success, type Actor, type Result } from '../../domain/result.js';

/**
 * The TypedRequest methods (what Cloudly UI and Coreflow speak): each names its permission,
 * its payload and response schemas (the upstream request without `identity`), and the use case
 * it calls. No rules live here: a method translates the payload and projects the result.
 */
export interface TypedRequestMethod<Req extends TSchema = TSchema, Res extends TSchema = TSchema> {
  method: string;
  permission: Permission;
  payload: Req;
  response: Res;
  /** Where the use case's input sits in the request: problems are named from there (default `/request`). */
  inputAt?: string;
  /** Refusals that must answer before schema validation (e.g. `server-managed-field`). */
  precheck?(payload: unknown): AppError | undefined;
  run(payload: Static<Req>, actor: Actor): Promise<Result<Static<Res>>>;
}

const define = <Req extends TSchema, Res extends TSchema>(method: TypedRequestMethod<Req, Res>): TypedRequestMethod => method as unknown as TypedRequestMethod;

/** A result with another value (the same refusal, the same replay flag). */
const project = <T, U>(result: Result<T>, to: (value: T) => U): Result<U> => (result.ok ? success(to(result.value), result.replayed) : result);

const serviceDataOf = (payload: unknown): unknown =>
  payload !== null && typeof payload === 'object' ? (payload as Record<string, unknown>)['serviceData'] : undefined;

/** As over REST: a rollout request without its idempotency key is `idempotency-key-missing`, whatever else it holds. */
const requireIdempotencyKey = (payload: unknown): AppError | undefined => {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
  const key = (payload as Record<string, unknown>)['idempotencyKey'];
  return key === undefined || key === '' ? errors.idempotencyKeyMissing('request.idempotencyKey') : undefined;
};

export function typedRequestMethods (operations: Operations): TypedRequestMethod[] {
  const c = typedRequestContracts;
  const rc = releaseTypedRequestContracts;
  const cc = clusterContracts;
  const { services, clusters, releases } = operations;
  return [
    define({
      method: cc.registerCluster.method,
      permission: permissions.registerClusters,
      payload: cc.registerCluster.payload,
      response: cc.registerCluster.response,
      precheck: (payload) => duplicateNodeNamesRefusal(payload, '/request'),
      run: ({ clusterId, name, nodeNames }) => clusters.registerCluster(clusterId, { name, nodeNames }),
    }),
    define({
      method: cc.getCluster.method,
      permission: permissions.readClusters,
      payload: cc.getCluster.payload,
      response: cc.getCluster.response,
      run: ({ clusterId }) => clusters.readCluster(clusterId),
    }),
    define({
      method: cc.listClusters.method,
      permission: permissions.readClusters,
      payload: cc.listClusters.payload,
      response: cc.listClusters.response,
      run: ({ limit, after }) => clusters.listClusters({ limit: limit ?? clusterListLimits.default, after }),
    }),
    define({
      method: c.getServiceById.method,
      permission: permissions.readServices,
      payload: c.getServiceById.payload,
      response: c.getServiceById.response,
      run: async ({ serviceId }) => project(await services.readService(serviceId), ({ service }) => ({ service })),
    }),
    define({
      method: c.createService.method,
      permission: permissions.createServices,
      payload: c.createService.payload,
      response: c.createService.response,
      precheck: (payload) => serverManagedFieldRefusal(serviceDataOf(payload), '/request/serviceData'),
      inputAt: '/request/serviceData',
      run: ({ serviceData }) => services.createService(serviceData),
    }),
    define({
      method: c.updateService.method,
      permission: permissions.updateServices,
      payload: c.updateService.payload,
      response: c.updateService.response,
      precheck: (payload) => serverManagedFieldRefusal(serviceDataOf(payload), '/request/serviceData'),
      inputAt: '/request/serviceData',
      run: ({ serviceId, serviceData }) => services.updateService(serviceId, serviceData),
    }),
    define({
      method: serviceTypedRequestContracts.listServices.method,
      permission: permissions.readServices,
      payload: serviceTypedRequestContracts.listServices.payload,
      response: serviceTypedRequestContracts.listServices.response,
      run: (query) => services.listServices(query),
    }),
    define({
      method: rc.reportImmutableRegistryPushEvent.method,
      permission: permissions.pushRegistryEvents,
      payload: rc.reportImmutableRegistryPushEvent.payload,
      response: rc.reportImmutableRegistryPushEvent.response,
      inputAt: '/request/event',
      run: ({ event }, actor) => operations.observePushEvent(event, actor),
    }),
    define({
      method: c.promoteServiceImageRelease.method,
      permission: permissions.promote,
      payload: c.promoteServiceImageRelease.payload,
      response: c.promoteServiceImageRelease.response,
      precheck: requireIdempotencyKey,
      run: async (input, actor) => project(await operations.promote(input, actor), ({ service }) => ({ service })),
    }),
    define({
      method: c.rollbackServiceImageRelease.method,
      permission: permissions.rollBack,
      payload: c.rollbackServiceImageRelease.payload,
      response: c.rollbackServiceImageRelease.response,
      precheck: requireIdempotencyKey,
      run: async (input, actor) => project(await operations.rollBack(input, actor), ({ service }) => ({ service })),
    }),
    define({
      method: serviceTypedRequestContracts.abortServiceRollout.method,
      permission: permissions.rollBack,
      payload: serviceTypedRequestContracts.abortServiceRollout.payload,
      response: serviceTypedRequestContracts.abortServiceRollout.response,
      precheck: requireIdempotencyKey,
      run: async (input, actor) => project(await operations.abort(input, actor), ({ service }) => ({ service })),
    }),
    define({
      method: c.reportDeploymentSnapshots.method,
      permission: permissions.reportSnapshots,
      payload: ReportDeploymentSnapshotsInput,
      response: c.reportDeploymentSnapshots.response,
      precheck: operations.reportSnapshot.precheck,
      // Upstream answers `Record<string, never>`: the outcome stays on the server.
      run: async (input, actor) => project(await operations.reportSnapshot(input, actor), () => ({})),
    }),
    define({
      method: c.getServiceImageReleases.method,
      permission: permissions.readReleases,
      payload: c.getServiceImageReleases.payload,
      response: c.getServiceImageReleases.response,
      run: ({ serviceId }) => releases.listReleases(serviceId),
    }),
    define({
      method: rc.getServiceImageReleasesPage.method,
      permission: permissions.readReleases,
      payload: rc.getServiceImageReleasesPage.payload,
      response: rc.getServiceImageReleasesPage.response,
      run: ({ serviceId, ...query }) => releases.listReleasePage(serviceId, query),
    }),
    define({
      method: rc.getServiceImageTagHistory.method,
      permission: permissions.readReleases,
      payload: rc.getServiceImageTagHistory.payload,
      response: rc.getServiceImageTagHistory.response,
      run: ({ serviceId, tag, ...query }) => releases.tagHistory(serviceId, tag, query),
    }),
  ];
}
