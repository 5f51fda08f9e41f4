/**
 * This project's own service methods (not upstream):
 * - `listServices` over TypedRequest and `GET /v1/services` over REST — find services again by
 *   name, in cursor pages, with each service's current rollout in brief (never the reporters list);
 * - `abortServiceRollout` over TypedRequest and `POST /v1/services/:serviceId/rollout/abort` over
 *   REST — roll the current rollout back to the last verified release (Idempotency-Key and
 *   compare-and-swap as `rollbackServiceImageRelease`).
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Id, IdempotencyKey, Name, NonNegativeSafeInteger, strictObject } from './common.js';
import { IIdentity } from './identity.js';
import { TImmutableImageMismatchReason, TImmutableImageRolloutMode, TImmutableImageRolloutStatus, TSha256Digest } from './immutableImage.js';
import { IService } from './service.js';

export const servicePageLimits = { maxPageSize: 200, defaultPageSize: 50 } as const;

/** One row of the service listing: who it is and where its current rollout stands. */
export const ServiceSummary = Type.Object({
  id: Id,
  name: Name,
  rollout: Type.Optional(Type.Object({
    rolloutId: Id,
    rolloutGeneration: Type.Integer(),
    mode: TImmutableImageRolloutMode,
    releaseId: Id,
    requestedDigest: TSha256Digest,
    status: Type.Optional(TImmutableImageRolloutStatus),
    requiredReplicaCount: Type.Optional(Type.Integer()),
    observedReplicaCount: Type.Optional(Type.Integer()),
    healthyReplicaCount: Type.Optional(Type.Integer()),
    verifiedReplicaCount: Type.Optional(Type.Integer()),
    failedReplicaCount: Type.Optional(Type.Integer()),
    mismatchReason: Type.Optional(TImmutableImageMismatchReason),
    updatedAt: Type.Optional(Type.Integer()),
  })),
  automationHold: Type.Optional(Type.Object({ since: Type.Integer(), rolloutId: Type.String(), by: Type.String() }, {
    description: 'set by a manual rollback: automatic promotion is off until the next explicit promotion',
  })),
});
export type ServiceSummary = Static<typeof ServiceSummary>;

const listFields = {
  name: Type.Optional(Name),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: servicePageLimits.maxPageSize, description: 'page size (default 50)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'nextCursor of the previous page' })),
};

export const ServiceListQuery = strictObject(listFields);
export type ServiceListQuery = Static<typeof ServiceListQuery>;

export const ListServicesRequest = strictObject({ identity: IIdentity, ...listFields });
export type ListServicesRequest = Static<typeof ListServicesRequest>;

export const ServicePage = Type.Object({
  services: Type.Array(ServiceSummary, { maxItems: servicePageLimits.maxPageSize }),
  nextCursor: Type.Optional(Type.String()),
});
export type ServicePage = Static<typeof ServicePage>;

const serviceContract = <M extends string, Req extends TObject, Res extends TSchema>(method: M, request: Req, response: Res) => ({
  method,
  request,
  payload: Type.Omit(request, ['identity']),
  response,
});

export const IRequest_Any_Cloudly_ListServices = serviceContract('listServices', ListServicesRequest, ServicePage);

export const AbortServiceRolloutRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  idempotencyKey: IdempotencyKey,
  expectedCurrentRolloutId: Id,
  expectedRolloutGeneration: NonNegativeSafeInteger,
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'why (kept in the rollout history)' })),
});
export type AbortServiceRolloutRequest = Static<typeof AbortServiceRolloutRequest>;

export const AbortServiceRolloutResponse = strictObject({ service: IService });
export type AbortServiceRolloutResponse = Static<typeof AbortServiceRolloutResponse>;

export const IRequest_Any_Cloudly_AbortServiceRollout = serviceContract('abortServiceRollout', AbortServiceRolloutRequest, AbortServiceRolloutResponse);

/** method → `{ method, request, payload, response }` of this project's service methods. */
export const serviceTypedRequestContracts = {
  listServices: IRequest_Any_Cloudly_ListServices,
  abortServiceRollout: IRequest_Any_Cloudly_AbortServiceRollout,
} as const;
