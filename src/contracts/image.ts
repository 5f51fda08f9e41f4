/**
 * Upstream `ts/data/image.ts` (11.3.0).
 *
 * Visible in the diff: `id`, `data.versions[]` entries (`versionString`, `digest?`,
 * 11.3.0's `releaseId?` and `manifestMediaType?`, `registryRepository?`, `registryTag?`,
 * `source?`, `size`, `createdAt`) and `data.lastPushEvent?` (11.3.0: legacy or immutable
 * push event).
 * Modeled (hidden by the diff): `data.name`, `data.description`, and the one hidden
 * version line between `source?` and `size`, modeled as `storagePath?`.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  Id,
  Name,
  NonNegativeSafeInteger,
  Reference,
  Repository,
  Tag,
  Timestamp,
  contractLimits,
  strictObject,
} from './common.js';
import { literalUnion } from './literals.js';
import { IImmutableRegistryPushEvent, IRegistryPushEvent } from './registry.js';

export const IImageVersion = strictObject({
  versionString: Name,
  digest: Type.Optional(Reference),
  releaseId: Type.Optional(Id),
  manifestMediaType: Type.Optional(Name),
  registryRepository: Type.Optional(Repository),
  registryTag: Type.Optional(Tag),
  source: Type.Optional(literalUnion(['upload', 'registry'])),
  /** modeled */
  storagePath: Type.Optional(Reference),
  size: NonNegativeSafeInteger,
  createdAt: Timestamp,
});
export type IImageVersion = Static<typeof IImageVersion>;

export const IImage = strictObject({
  id: Id,
  data: strictObject({
    /** modeled */
    name: Name,
    /** modeled */
    description: Type.String({ maxLength: contractLimits.descriptionLength }),
    versions: Type.Array(IImageVersion, { maxItems: contractLimits.imageVersions }),
    /** Both branches reject each other's properties, so exactly one can match. */
    lastPushEvent: Type.Optional(Type.Union([IRegistryPushEvent, IImmutableRegistryPushEvent])),
  }),
});
export type IImage = Static<typeof IImage>;
