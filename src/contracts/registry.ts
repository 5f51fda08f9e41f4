/**
 * Upstream `ts/data/registry.ts` (11.3.0): registry targets and push events.
 *
 * Visible in the 11.1.1 → 11.3.0 diff: `TRegistryProtocol`, `IRegistryTarget.protocol`,
 * `.registryHost`, `.imageId?`; all of `IRegistryPushEvent` except the line between
 * `repository` and `digest` (modeled as `tag: string`, as in `IImmutableRegistryPushEvent`);
 * all of `IImmutableRegistryPushEvent`.
 * Modeled (not visible; the diff hides four lines of `IRegistryTarget`):
 * `repository`, `tag?`, `imageUrl?`, `serviceId?`.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  Id,
  Name,
  Reference,
  RegistryHost,
  Repository,
  Tag,
  Timestamp,
  strictObject,
} from './common.js';
import { TOciManifestMediaType, TSha256Digest } from './immutableImage.js';

export const TRegistryProtocol = Type.Literal('oci');
export type TRegistryProtocol = Static<typeof TRegistryProtocol>;

export const IRegistryTarget = strictObject({
  protocol: TRegistryProtocol,
  registryHost: RegistryHost,
  /** modeled */
  repository: Repository,
  /** modeled */
  tag: Type.Optional(Tag),
  /** modeled */
  imageUrl: Type.Optional(Reference),
  /** modeled */
  serviceId: Type.Optional(Id),
  imageId: Type.Optional(Id),
});
export type IRegistryTarget = Static<typeof IRegistryTarget>;

/** Legacy (tag-based) push event; 11.3.0 adds `eventId?`, `releaseId?`, `observedAt?`. */
export const IRegistryPushEvent = strictObject({
  eventId: Type.Optional(Id),
  releaseId: Type.Optional(Id),
  protocol: TRegistryProtocol,
  registryHost: RegistryHost,
  repository: Repository,
  tag: Tag,
  /** Legacy events carry whatever digest string the registry sent; not necessarily canonical. */
  digest: Reference,
  imageUrl: Reference,
  pushedAt: Timestamp,
  observedAt: Type.Optional(Timestamp),
  serviceId: Type.Optional(Id),
  imageId: Type.Optional(Id),
  actorUserId: Type.Optional(Id),
  manifestMediaType: Type.Optional(Name),
});
export type IRegistryPushEvent = Static<typeof IRegistryPushEvent>;

/** Fully verified registry observation used by immutable release processing. */
export const IImmutableRegistryPushEvent = strictObject({
  deploymentPolicy: Type.Literal('immutable-digest'),
  eventId: Id,
  releaseId: Id,
  protocol: TRegistryProtocol,
  registryHost: RegistryHost,
  repository: Repository,
  tag: Tag,
  registryRootDigest: TSha256Digest,
  digestPinnedImageReference: Reference,
  imageUrl: Reference,
  observedAt: Timestamp,
  serviceId: Id,
  imageId: Id,
  manifestMediaType: TOciManifestMediaType,
  actorUserId: Type.Optional(Id),
});
export type IImmutableRegistryPushEvent = Static<typeof IImmutableRegistryPushEvent>;
