/**
 * TypedRequest request/response schemas (the `request` and `response` members,
 * without the TypedRequest envelope) of the seven methods this service speaks,
 * after upstream `ts/requests/service.ts` and `ts/requests/deployment.ts` (11.3.0).
 *
 * Visible in the diff: the whole of getServiceImageReleases, promoteServiceImageRelease,
 * rollbackServiceImageRelease; `serviceData: TServiceWritableData` and the responses of
 * createService/updateService; `reporterNodeNames?`, `immutableReport?`, `reportedAt`
 * and the `Record<string, never>` response of reportDeploymentSnapshots.
 * Modeled: getServiceById `{ identity, serviceId }` → `{ service }`; the
 * `identity`, `serviceId`, `deployments` members of reportDeploymentSnapshots.
 *
 * Each method is exported three ways:
 * - `XRequest` / `XResponse`: the upstream shapes (request includes `identity`),
 * - `IRequest_…` / `IReq_…` (upstream's interface name): `{ method, request, payload, response }`
 *   where `payload` is the request without `identity` (what an operation sees once the
 *   dispatcher has authenticated `identity.jwt`),
 * - `typedRequestContracts[method]`: the same object, for registration by method name.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Id, IdempotencyKey, NonNegativeSafeInteger, Name, Timestamp, contractLimits, strictObject } from './common.js';
import { IDeployment } from './deployment.js';
import { IIdentity } from './identity.js';
import { IImageRelease, IImmutableRolloutReportEnvelope } from './immutableImage.js';
import { IService, TServiceWritableData } from './service.js';

/** `{ method, request, payload, response }` for one TypedRequest method. */
export interface TypedRequestContract<
  M extends string,
  Req extends TObject,
  Payload extends TSchema,
  Res extends TSchema,
> {
  method: M;
  /** The upstream request, `identity` included. */
  request: Req;
  /** The upstream request without `identity`. */
  payload: Payload;
  response: Res;
}

const defineContract = <M extends string, Req extends TObject, Res extends TSchema>(
  method: M,
  request: Req,
  response: Res,
) => ({
  method,
  request,
  payload: Type.Omit(request, ['identity']),
  response,
}) satisfies TypedRequestContract<M, Req, TSchema, Res>;

// getServiceById ---------------------------------------------------------------

export const GetServiceByIdRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
});
export type GetServiceByIdRequest = Static<typeof GetServiceByIdRequest>;

export const GetServiceByIdResponse = strictObject({
  service: IService,
});
export type GetServiceByIdResponse = Static<typeof GetServiceByIdResponse>;

// getServiceImageReleases ------------------------------------------------------

export const GetServiceImageReleasesRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
});
export type GetServiceImageReleasesRequest = Static<typeof GetServiceImageReleasesRequest>;

export const GetServiceImageReleasesResponse = strictObject({
  releases: Type.Array(IImageRelease, { maxItems: contractLimits.releasesPerResponse }),
});
export type GetServiceImageReleasesResponse = Static<typeof GetServiceImageReleasesResponse>;

// promoteServiceImageRelease ---------------------------------------------------

export const PromoteServiceImageReleaseRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  releaseId: Id,
  idempotencyKey: IdempotencyKey,
  expectedRolloutGeneration: NonNegativeSafeInteger,
  expectedCurrentRolloutId: Type.Optional(Id),
  /** Explicitly opts the service into fail-closed immutable deployment. */
  enableImmutableImage: Type.Literal(true),
});
export type PromoteServiceImageReleaseRequest = Static<typeof PromoteServiceImageReleaseRequest>;

export const PromoteServiceImageReleaseResponse = strictObject({
  service: IService,
});
export type PromoteServiceImageReleaseResponse = Static<typeof PromoteServiceImageReleaseResponse>;

// rollbackServiceImageRelease --------------------------------------------------

export const RollbackServiceImageReleaseRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  releaseId: Id,
  idempotencyKey: IdempotencyKey,
  expectedCurrentRolloutId: Id,
  expectedRolloutGeneration: NonNegativeSafeInteger,
});
export type RollbackServiceImageReleaseRequest = Static<typeof RollbackServiceImageReleaseRequest>;

export const RollbackServiceImageReleaseResponse = strictObject({
  service: IService,
});
export type RollbackServiceImageReleaseResponse = Static<typeof RollbackServiceImageReleaseResponse>;

// createService / updateService ------------------------------------------------

export const CreateServiceRequest = strictObject({
  identity: IIdentity,
  serviceData: TServiceWritableData,
});
export type CreateServiceRequest = Static<typeof CreateServiceRequest>;

export const CreateServiceResponse = strictObject({
  service: IService,
});
export type CreateServiceResponse = Static<typeof CreateServiceResponse>;

export const UpdateServiceRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  serviceData: TServiceWritableData,
});
export type UpdateServiceRequest = Static<typeof UpdateServiceRequest>;

export const UpdateServiceResponse = strictObject({
  service: IService,
});
export type UpdateServiceResponse = Static<typeof UpdateServiceResponse>;

// reportDeploymentSnapshots (Coreflow → Cloudly) -------------------------------

export const ReportDeploymentSnapshotsRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  deployments: Type.Array(IDeployment, { maxItems: contractLimits.deploymentsPerReport }),
  /**
   * Node set covered by this snapshot; only that set's deployments of the service are replaced.
   * When absent, the snapshot replaces all persisted deployments of the service.
   */
  reporterNodeNames: Type.Optional(Type.Array(Name, { maxItems: contractLimits.nodes })),
  /** Mandatory when the referenced service requires immutable deployment. */
  immutableReport: Type.Optional(IImmutableRolloutReportEnvelope),
  reportedAt: Timestamp,
});
export type ReportDeploymentSnapshotsRequest = Static<typeof ReportDeploymentSnapshotsRequest>;

/** Upstream: `Record<string, never>` — only `{}` validates. */
export const ReportDeploymentSnapshotsResponse = Type.Record(Type.String(), Type.Never(), {
  additionalProperties: false,
});
export type ReportDeploymentSnapshotsResponse = Static<typeof ReportDeploymentSnapshotsResponse>;

// Contracts by method ----------------------------------------------------------

export const IRequest_Any_Cloudly_GetServiceById = defineContract(
  'getServiceById', GetServiceByIdRequest, GetServiceByIdResponse,
);
export const IRequest_Any_Cloudly_GetServiceImageReleases = defineContract(
  'getServiceImageReleases', GetServiceImageReleasesRequest, GetServiceImageReleasesResponse,
);
export const IRequest_Any_Cloudly_PromoteServiceImageRelease = defineContract(
  'promoteServiceImageRelease', PromoteServiceImageReleaseRequest, PromoteServiceImageReleaseResponse,
);
export const IRequest_Any_Cloudly_RollbackServiceImageRelease = defineContract(
  'rollbackServiceImageRelease', RollbackServiceImageReleaseRequest, RollbackServiceImageReleaseResponse,
);
export const IRequest_Any_Cloudly_CreateService = defineContract(
  'createService', CreateServiceRequest, CreateServiceResponse,
);
export const IRequest_Any_Cloudly_UpdateService = defineContract(
  'updateService', UpdateServiceRequest, UpdateServiceResponse,
);
export const IReq_Coreflow_Cloudly_ReportDeploymentSnapshots = defineContract(
  'reportDeploymentSnapshots', ReportDeploymentSnapshotsRequest, ReportDeploymentSnapshotsResponse,
);

/** The static `{ method, request, response }` of a contract, shaped like upstream's interfaces. */
export type TypedRequestShape<C extends { method: string; request: TSchema; response: TSchema }> = {
  method: C['method'];
  request: Static<C['request']>;
  response: Static<C['response']>;
};

export type IRequest_Any_Cloudly_GetServiceById = TypedRequestShape<typeof IRequest_Any_Cloudly_GetServiceById>;
export type IRequest_Any_Cloudly_GetServiceImageReleases = TypedRequestShape<typeof IRequest_Any_Cloudly_GetServiceImageReleases>;
export type IRequest_Any_Cloudly_PromoteServiceImageRelease = TypedRequestShape<typeof IRequest_Any_Cloudly_PromoteServiceImageRelease>;
export type IRequest_Any_Cloudly_RollbackServiceImageRelease = TypedRequestShape<typeof IRequest_Any_Cloudly_RollbackServiceImageRelease>;
export type IRequest_Any_Cloudly_CreateService = TypedRequestShape<typeof IRequest_Any_Cloudly_CreateService>;
export type IRequest_Any_Cloudly_UpdateService = TypedRequestShape<typeof IRequest_Any_Cloudly_UpdateService>;
export type IReq_Coreflow_Cloudly_ReportDeploymentSnapshots = TypedRequestShape<typeof IReq_Coreflow_Cloudly_ReportDeploymentSnapshots>;

/** method → `{ method, request, payload, response }` for the seven methods. */
export const typedRequestContracts = {
  getServiceById: IRequest_Any_Cloudly_GetServiceById,
  getServiceImageReleases: IRequest_Any_Cloudly_GetServiceImageReleases,
  promoteServiceImageRelease: IRequest_Any_Cloudly_PromoteServiceImageRelease,
  rollbackServiceImageRelease: IRequest_Any_Cloudly_RollbackServiceImageRelease,
  createService: IRequest_Any_Cloudly_CreateService,
  updateService: IRequest_Any_Cloudly_UpdateService,
  reportDeploymentSnapshots: IReq_Coreflow_Cloudly_ReportDeploymentSnapshots,
} as const;

export type TTypedRequestMethod = keyof typeof typedRequestContracts;

/** The upstream request (with `identity`) of a method. */
export type TypedRequestRequest<M extends TTypedRequestMethod> = Static<(typeof typedRequestContracts)[M]['request']>;
/** The request without `identity`, as an operation receives it. */
export type TypedRequestPayload<M extends TTypedRequestMethod> = Static<(typeof typedRequestContracts)[M]['payload']>;
export type TypedRequestResponse<M extends TTypedRequestMethod> = Static<(typeof typedRequestContracts)[M]['response']>;
