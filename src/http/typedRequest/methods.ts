import { Type, type Static, type TSchema } from '@sinclair/typebox';
import {
  clusterContracts, clusterListLimits, Id, releaseTypedRequestContracts, serviceTypedRequestContracts, typedRequestContracts,
} from '../../contracts/index.js';
import { ReportDeploymentSnapshotsInput } from '../../contracts/reports.js';
import { attestationTypedRequestContracts as attestationContracts } from '../../domain/attestation/index.js';
import { duplicateNodeNamesRefusal } from '../../domain/clusters.js';
import { permissions, type Permission } from '../../domain/principal.js';
import { serverManagedFieldRefusal } from '../../domain/services.js';
import { ReleaseVerificationView } from '../../domain/trust/releaseVerification.js';
import { errors, type AppError } from '../../errors.js';
import type { Operations } from '../../operations/index.js';
import { approvePromotionRequest, getGovernance, getPromotionRequests } from './governanceMethods.js';
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

/** One method per function, each given the use cases (it reads the ones it calls when it is built, as the app builds it once). */
type MethodOf = (operations: Operations) => TypedRequestMethod;

const registerCluster: MethodOf = ({ clusters }) => define({
  method: clusterContracts.registerCluster.method,
  permission: permissions.registerClusters,
  payload: clusterContracts.registerCluster.payload,
  response: clusterContracts.registerCluster.response,
  precheck: (payload) => duplicateNodeNamesRefusal(payload, '/request'),
  run: ({ clusterId, name, nodeNames }) => clusters.registerCluster(clusterId, { name, nodeNames }),
});

const getCluster: MethodOf = ({ clusters }) => define({
  method: clusterContracts.getCluster.method,
  permission: permissions.readClusters,
  payload: clusterContracts.getCluster.payload,
  response: clusterContracts.getCluster.response,
  run: ({ clusterId }) => clusters.readCluster(clusterId),
});

const listClusters: MethodOf = ({ clusters }) => define({
  method: clusterContracts.listClusters.method,
  permission: permissions.readClusters,
  payload: clusterContracts.listClusters.payload,
  response: clusterContracts.listClusters.response,
  run: ({ limit, after }) => clusters.listClusters({ limit: limit ?? clusterListLimits.default, after }),
});

const getServiceById: MethodOf = ({ services }) => define({
  method: typedRequestContracts.getServiceById.method,
  permission: permissions.readServices,
  payload: typedRequestContracts.getServiceById.payload,
  response: typedRequestContracts.getServiceById.response,
  run: async ({ serviceId }) => project(await services.readService(serviceId), ({ service }) => ({ service })),
});

const createService: MethodOf = ({ services }) => define({
  method: typedRequestContracts.createService.method,
  permission: permissions.createServices,
  payload: typedRequestContracts.createService.payload,
  response: typedRequestContracts.createService.response,
  precheck: (payload) => serverManagedFieldRefusal(serviceDataOf(payload), '/request/serviceData'),
  inputAt: '/request/serviceData',
  run: ({ serviceData }) => services.createService(serviceData),
});

const updateService: MethodOf = ({ services }) => define({
  method: typedRequestContracts.updateService.method,
  permission: permissions.updateServices,
  payload: typedRequestContracts.updateService.payload,
  response: typedRequestContracts.updateService.response,
  precheck: (payload) => serverManagedFieldRefusal(serviceDataOf(payload), '/request/serviceData'),
  inputAt: '/request/serviceData',
  run: ({ serviceId, serviceData }) => services.updateService(serviceId, serviceData),
});

const listServices: MethodOf = ({ services }) => define({
  method: serviceTypedRequestContracts.listServices.method,
  permission: permissions.readServices,
  payload: serviceTypedRequestContracts.listServices.payload,
  response: serviceTypedRequestContracts.listServices.response,
  run: (query) => services.listServices(query),
});

const reportImmutableRegistryPushEvent: MethodOf = (operations) => define({
  method: releaseTypedRequestContracts.reportImmutableRegistryPushEvent.method,
  permission: permissions.pushRegistryEvents,
  payload: releaseTypedRequestContracts.reportImmutableRegistryPushEvent.payload,
  response: releaseTypedRequestContracts.reportImmutableRegistryPushEvent.response,
  inputAt: '/request/event',
  run: ({ event }, actor) => operations.observePushEvent(event, actor),
});

const promoteServiceImageRelease: MethodOf = (operations) => define({
  method: typedRequestContracts.promoteServiceImageRelease.method,
  permission: permissions.promote,
  payload: typedRequestContracts.promoteServiceImageRelease.payload,
  response: typedRequestContracts.promoteServiceImageRelease.response,
  precheck: requireIdempotencyKey,
  run: async (input, actor) => project(await operations.promote(input, actor), ({ service }) => ({ service })),
});

const rollbackServiceImageRelease: MethodOf = (operations) => define({
  method: typedRequestContracts.rollbackServiceImageRelease.method,
  permission: permissions.rollBack,
  payload: typedRequestContracts.rollbackServiceImageRelease.payload,
  response: typedRequestContracts.rollbackServiceImageRelease.response,
  precheck: requireIdempotencyKey,
  run: async (input, actor) => project(await operations.rollBack(input, actor), ({ service }) => ({ service })),
});

const abortServiceRollout: MethodOf = (operations) => define({
  method: serviceTypedRequestContracts.abortServiceRollout.method,
  permission: permissions.rollBack,
  payload: serviceTypedRequestContracts.abortServiceRollout.payload,
  response: serviceTypedRequestContracts.abortServiceRollout.response,
  precheck: requireIdempotencyKey,
  run: async (input, actor) => project(await operations.abort(input, actor), ({ service }) => ({ service })),
});

const reportDeploymentSnapshots: MethodOf = (operations) => define({
  method: typedRequestContracts.reportDeploymentSnapshots.method,
  permission: permissions.reportSnapshots,
  payload: ReportDeploymentSnapshotsInput,
  response: typedRequestContracts.reportDeploymentSnapshots.response,
  precheck: operations.reportSnapshot.precheck,
  // Upstream answers `Record<string, never>`: the outcome stays on the server.
  run: async (input, actor) => project(await operations.reportSnapshot(input, actor), () => ({})),
});

const getServiceImageReleases: MethodOf = ({ releases }) => define({
  method: typedRequestContracts.getServiceImageReleases.method,
  permission: permissions.readReleases,
  payload: typedRequestContracts.getServiceImageReleases.payload,
  response: typedRequestContracts.getServiceImageReleases.response,
  run: ({ serviceId }) => releases.listReleases(serviceId),
});

const getServiceImageReleasesPage: MethodOf = ({ releases }) => define({
  method: releaseTypedRequestContracts.getServiceImageReleasesPage.method,
  permission: permissions.readReleases,
  payload: releaseTypedRequestContracts.getServiceImageReleasesPage.payload,
  response: releaseTypedRequestContracts.getServiceImageReleasesPage.response,
  run: ({ serviceId, ...query }) => releases.listReleasePage(serviceId, query),
});

const getServiceImageTagHistory: MethodOf = ({ releases }) => define({
  method: releaseTypedRequestContracts.getServiceImageTagHistory.method,
  permission: permissions.readReleases,
  payload: releaseTypedRequestContracts.getServiceImageTagHistory.payload,
  response: releaseTypedRequestContracts.getServiceImageTagHistory.response,
  run: ({ serviceId, tag, ...query }) => releases.tagHistory(serviceId, tag, query),
});

/** This project's: a release's signature verification (docs/trust.md), as REST GET …/image-releases/:releaseId/verification answers it. */
const getImageReleaseVerification: MethodOf = ({ releases }) => define({
  method: 'getImageReleaseVerification',
  permission: permissions.readReleases,
  payload: Type.Object({ serviceId: Id, releaseId: Id }, { additionalProperties: false }),
  response: ReleaseVerificationView,
  run: ({ serviceId, releaseId }) => releases.readVerification(serviceId, releaseId),
});

const getServiceAttestations: MethodOf = ({ attestations }) => define({
  method: attestationContracts.getServiceAttestations.method,
  permission: permissions.readAttestations,
  payload: attestationContracts.getServiceAttestations.payload,
  response: attestationContracts.getServiceAttestations.response,
  run: ({ serviceId, ...query }) => attestations.list(serviceId, query),
});

const getServiceAttestation: MethodOf = ({ attestations }) => define({
  method: attestationContracts.getServiceAttestation.method,
  permission: permissions.readAttestations,
  payload: attestationContracts.getServiceAttestation.payload,
  response: attestationContracts.getServiceAttestation.response,
  run: ({ serviceId, attestationId }) => attestations.get(serviceId, attestationId),
});

const getAttestationKeys: MethodOf = ({ attestations }) => define({
  method: attestationContracts.getAttestationKeys.method,
  permission: permissions.readAttestationKeys,
  payload: attestationContracts.getAttestationKeys.payload,
  response: attestationContracts.getAttestationKeys.response,
  run: async () => success(attestations.keys()),
});

/** Every method, in the order the route lists them. */
const methods: readonly MethodOf[] = [
  registerCluster, getCluster, listClusters,
  getServiceById, createService, updateService, listServices,
  reportImmutableRegistryPushEvent, promoteServiceImageRelease, rollbackServiceImageRelease, abortServiceRollout, reportDeploymentSnapshots,
  getServiceImageReleases, getServiceImageReleasesPage, getServiceImageTagHistory, getImageReleaseVerification,
  getServiceAttestations, getServiceAttestation, getAttestationKeys,
  getGovernance, getPromotionRequests, approvePromotionRequest,
];

export function typedRequestMethods (operations: Operations): TypedRequestMethod[] {
  return methods.map((method) => method(operations));
}
