/**
 * This project's own request/response schemas around image releases (not upstream):
 * ingestion of `IImmutableRegistryPushEvent`, the paged release listing and the tag
 * ledger. The upstream `getServiceImageReleases` contract stays in ./requests.ts.
 *
 * Each TypedRequest method is exported as `{ method, request, payload, response }`
 * (see `releaseTypedRequestContracts`), like the upstream contracts in ./requests.ts.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Id, Reference, Timestamp, strictObject } from './common.js';
import { IIdentity } from './identity.js';
import { IImageRelease, TSha256Digest } from './immutableImage.js';
import { IImmutableRegistryPushEvent } from './registry.js';
import { IReleaseSignatureVerdict } from './trustPolicy.js';

/** OCI distribution-spec tag grammar. */
export const ociTagPattern = '^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$';
export const OciTag = Type.String({ pattern: ociTagPattern, description: 'an OCI tag' });
export type OciTag = Static<typeof OciTag>;

export const releasePageLimits = {
  /** REST `limit`: 1–500, default 50. */
  maxPageSize: 500,
  defaultPageSize: 50,
  /** Upstream `getServiceImageReleases` has no paging: it answers at most this many, newest first. */
  upstreamListingCap: 1000,
} as const;

/** Opaque keyset cursor: base64url of the last item's sort key. */
export const PageCursor = Type.String({
  minLength: 1,
  maxLength: 512,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'opaque cursor from the previous page\'s nextCursor',
});
export type PageCursor = Static<typeof PageCursor>;

export const PageSize = Type.Integer({ minimum: 1, maximum: releasePageLimits.maxPageSize });
export type PageSize = Static<typeof PageSize>;

// reportImmutableRegistryPushEvent ---------------------------------------------

export const ReportImmutableRegistryPushEventRequest = strictObject({
  identity: IIdentity,
  event: IImmutableRegistryPushEvent,
});
export type ReportImmutableRegistryPushEventRequest = Static<typeof ReportImmutableRegistryPushEventRequest>;

/** What automatic promotion (deployOnPush) did with this event. */
export const AutomaticPromotionOutcome = strictObject({
  outcome: Type.Union([Type.Literal('promoted'), Type.Literal('queued'), Type.Literal('skipped'), Type.Literal('conflict')]),
  /**
   * skipped: not-enabled | on-hold | already-current | older-than-current | newer-release-waiting | tag-filtered: …;
   * queued: the current rollout is in progress, the push promotes once it settles (unless a newer one arrives first);
   * conflict: a concurrent rollout took the generation.
   */
  reason: Type.Optional(Type.String()),
  rolloutId: Type.Optional(Id),
  rolloutGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  /** true when this event had already been handled (a redelivery): nothing new happened. */
  replayed: Type.Optional(Type.Boolean()),
});
export type AutomaticPromotionOutcome = Static<typeof AutomaticPromotionOutcome>;

export const ReportImmutableRegistryPushEventResponse = strictObject({
  release: IImageRelease,
  /** true when this eventId was already recorded (with the same content): nothing changed. */
  duplicate: Type.Boolean(),
  autoPromotion: Type.Optional(AutomaticPromotionOutcome),
});
export type ReportImmutableRegistryPushEventResponse = Static<typeof ReportImmutableRegistryPushEventResponse>;

// getServiceImageReleasesPage (REST GET /v1/services/:serviceId/image-releases) -

export const ImageReleasePageQuery = strictObject({
  limit: Type.Optional(PageSize),
  cursor: Type.Optional(PageCursor),
});
export type ImageReleasePageQuery = Static<typeof ImageReleasePageQuery>;

export const GetServiceImageReleasesPageRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  limit: Type.Optional(PageSize),
  cursor: Type.Optional(PageCursor),
});
export type GetServiceImageReleasesPageRequest = Static<typeof GetServiceImageReleasesPageRequest>;

export const ImageReleasePage = strictObject({
  releases: Type.Array(IImageRelease, { maxItems: releasePageLimits.maxPageSize }),
  /** Present when more releases follow; pass it back as `cursor`. */
  nextCursor: Type.Optional(PageCursor),
  /** Project extension (docs/trust.md): by release id, the signature verdict of each release on the page a trust policy verified. */
  verifications: Type.Optional(Type.Record(Type.String(), IReleaseSignatureVerdict)),
  /**
   * Project extension: by release id, when a rollout of that release last succeeded (every target replica verified),
   * for each release on the page that was ever part of a succeeded rollout; a release missing here never verified.
   */
  lastSucceededAt: Type.Optional(Type.Record(Type.String(), Type.Integer({ minimum: 0 }))),
});
export type ImageReleasePage = Static<typeof ImageReleasePage>;

// getServiceImageTagHistory (REST GET /v1/services/:serviceId/tags/:tag/history) -

export const ImageTagHistoryQuery = strictObject({
  /** Milliseconds since the epoch: answer only the entry that was current then. */
  at: Type.Optional(Timestamp),
  limit: Type.Optional(PageSize),
  cursor: Type.Optional(PageCursor),
});
export type ImageTagHistoryQuery = Static<typeof ImageTagHistoryQuery>;

export const GetServiceImageTagHistoryRequest = strictObject({
  identity: IIdentity,
  serviceId: Id,
  tag: OciTag,
  at: Type.Optional(Timestamp),
  limit: Type.Optional(PageSize),
  cursor: Type.Optional(PageCursor),
});
export type GetServiceImageTagHistoryRequest = Static<typeof GetServiceImageTagHistoryRequest>;

/** One accepted push event of a tag: the tag pointed to this digest from `observedAt` on. */
export const ImageTagHistoryEntry = strictObject({
  eventId: Id,
  releaseId: Id,
  registryRootDigest: TSha256Digest,
  digestPinnedImageReference: Reference,
  observedAt: Timestamp,
  actorUserId: Type.Optional(Id),
});
export type ImageTagHistoryEntry = Static<typeof ImageTagHistoryEntry>;

export const ImageTagHistory = strictObject({
  tag: OciTag,
  /** Newest first. */
  entries: Type.Array(ImageTagHistoryEntry, { maxItems: releasePageLimits.maxPageSize }),
  nextCursor: Type.Optional(PageCursor),
});
export type ImageTagHistory = Static<typeof ImageTagHistory>;

// Contracts by method ----------------------------------------------------------

const releaseContract = <M extends string, Req extends TObject, Res extends TSchema>(method: M, request: Req, response: Res) => ({
  method,
  request,
  payload: Type.Omit(request, ['identity']),
  response,
});

export const IRequest_Any_Cloudly_ReportImmutableRegistryPushEvent = releaseContract(
  'reportImmutableRegistryPushEvent', ReportImmutableRegistryPushEventRequest, ReportImmutableRegistryPushEventResponse,
);
export const IRequest_Any_Cloudly_GetServiceImageReleasesPage = releaseContract(
  'getServiceImageReleasesPage', GetServiceImageReleasesPageRequest, ImageReleasePage,
);
export const IRequest_Any_Cloudly_GetServiceImageTagHistory = releaseContract(
  'getServiceImageTagHistory', GetServiceImageTagHistoryRequest, ImageTagHistory,
);

/** method → `{ method, request, payload, response }` for this project's release methods. */
export const releaseTypedRequestContracts = {
  reportImmutableRegistryPushEvent: IRequest_Any_Cloudly_ReportImmutableRegistryPushEvent,
  getServiceImageReleasesPage: IRequest_Any_Cloudly_GetServiceImageReleasesPage,
  getServiceImageTagHistory: IRequest_Any_Cloudly_GetServiceImageTagHistory,
} as const;
