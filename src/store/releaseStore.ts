import { type Collection, type Filter } from 'mongodb';
import { contractLimits, type IImageRelease } from '../contracts/index.js';
import type { RecordObservationResult, ReleaseObservation, ReleaseRepository } from '../domain/ports/index.js';
import type { KeysetPosition, ReleaseIdentity } from '../domain/releases.js';
import type { ReleaseVerification } from '../domain/trust/releaseVerification.js';
import { keysetBefore } from './keyset.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

/**
 * One document per release: `_id` = releaseId, `data` = `IImageRelease['data']`.
 * Unique on (data.serviceId, data.registryHost, data.repository, data.registryRootDigest).
 * `observedTags` is stored in arrival order (`$addToSet`) and returned sorted, so
 * every reader sees the same document whatever order the events came in.
 * Promotion owns `acceptedAt`, `lastPromotedAt`, `promotionCount`; this store never
 * writes them and hands them through. `verification` (outside `data`) is the signature verification
 * a promotion relied on (docs/trust.md), written when its rollout is finished.
 */
export interface ReleaseDocument {
  _id: string;
  data: IImageRelease['data'];
  /** Outside `data` (the upstream release has no such member): the newest signature verification a rollout of it relied on. */
  verification?: ReleaseVerification;
}

/** The order of a service's releases: newest observation first. */
export const newestFirst = { 'data.lastObservedAt': -1, _id: -1 } as const;

/** The filter of a page of a service's releases (after a cursor, if any); sorted by `newestFirst`. */
export const releasePageFilter = (serviceId: string, after?: KeysetPosition): Filter<ReleaseDocument> =>
  ({ 'data.serviceId': serviceId, ...(after ? keysetBefore('data.lastObservedAt', after) : {}) });

function toRelease (doc: ReleaseDocument): IImageRelease {
  const d = doc.data;
  return {
    id: doc._id,
    data: {
      serviceId: d.serviceId,
      imageId: d.imageId,
      registryHost: d.registryHost,
      repository: d.repository,
      registryRootDigest: d.registryRootDigest,
      digestPinnedImageReference: d.digestPinnedImageReference,
      manifestMediaType: d.manifestMediaType,
      // The newest tags within the contract's limit: a push adds its tag, then trims (withTagsBounded), so between the two one more may be stored.
      observedTags: d.observedTags.slice(-contractLimits.observedTags).sort(),
      firstObservedAt: d.firstObservedAt,
      lastObservedAt: d.lastObservedAt,
      observationCount: d.observationCount,
      acceptedAt: d.acceptedAt,
      lastPromotedAt: d.lastPromotedAt,
      promotionCount: d.promotionCount,
    },
  };
}

type ReleaseTuple = Pick<ReleaseIdentity, 'serviceId' | 'registryHost' | 'repository' | 'registryRootDigest'>;

const tupleFilter = (identity: ReleaseTuple): Filter<ReleaseDocument> => ({
  'data.serviceId': identity.serviceId,
  'data.registryHost': identity.registryHost,
  'data.repository': identity.repository,
  'data.registryRootDigest': identity.registryRootDigest,
});

export class ReleaseStore implements ReleaseRepository {
  constructor (database: Database, readonly collection: Collection<ReleaseDocument> = database.db.collection(collections.releases)) {}

  async findById (releaseId: string): Promise<IImageRelease | null> {
    const doc = await this.collection.findOne({ _id: releaseId });
    return doc ? toRelease(doc) : null;
  }

  /** When each release was first observed, by id (`$in` on `_id`). */
  async firstObservedAt (releaseIds: readonly string[]): Promise<Map<string, number>> {
    if (releaseIds.length === 0) return new Map();
    const docs = await this.collection.find({ _id: { $in: [...new Set(releaseIds)] } }, { projection: { 'data.firstObservedAt': 1 } }).toArray();
    return new Map(docs.map((d) => [d._id, d.data.firstObservedAt]));
  }

  async findByTuple (tuple: ReleaseTuple): Promise<IImageRelease | null> {
    // Equality on exactly the identity index's fields (releases_identity_unique).
    const doc = await this.collection.findOne(tupleFilter(tuple));
    return doc ? toRelease(doc) : null;
  }

  async findByIdOrTuple (identity: ReleaseIdentity): Promise<IImageRelease[]> {
    // Two lookups, each an equality on exactly a unique index's fields (`_id`; the identity tuple): an
    // `$or` of them would scan every release of every service on the local development database.
    const [byId, byTuple] = await Promise.all([
      this.collection.findOne({ _id: identity.releaseId }),
      this.collection.findOne(tupleFilter(identity)),
    ]);
    const docs = byTuple && byTuple._id !== byId?._id ? [byId, byTuple] : [byId];
    return docs.flatMap((doc) => (doc ? [toRelease(doc)] : []));
  }

  /**
   * The filter names the whole identity (id, tuple, imageId, media type), so the
   * update only ever touches the release the event names; when another release
   * holds the id or the tuple, the implied insert hits `_id` or the unique tuple
   * index. A duplicate key can also be a concurrent first observation of this very
   * release, so it is retried once: then the document exists and either matches
   * (update) or does not (a real conflict).
   */
  async recordObservation (observation: ReleaseObservation): Promise<RecordObservationResult> {
    const { identity, tag, observedAt, observationCount } = observation;
    const filter: Filter<ReleaseDocument> = {
      _id: identity.releaseId,
      ...tupleFilter(identity),
      'data.imageId': identity.imageId,
      'data.manifestMediaType': identity.manifestMediaType,
    };
    const update = {
      $setOnInsert: { 'data.digestPinnedImageReference': identity.digestPinnedImageReference },
      $addToSet: { 'data.observedTags': tag },
      $min: { 'data.firstObservedAt': observedAt },
      $max: { 'data.lastObservedAt': observedAt, 'data.observationCount': observationCount },
    };
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        const doc = await this.collection.findOneAndUpdate(filter, update, { upsert: true, returnDocument: 'after' });
        if (doc) return { outcome: 'recorded', release: toRelease(await this.withTagsBounded(doc, tag)) };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
    }
    return { outcome: 'identity-conflict' };
  }

  /**
   * A release keeps the OBSERVED_TAGS_KEPT tags it was pushed under most recently (the contract's
   * limit), in the order of their latest push: a tag pushed again moves to the end (`$addToSet`
   * leaves it where it was first added), and past the limit the front goes. By `_id`, so the local
   * development database uses its index.
   */
  private async withTagsBounded (doc: ReleaseDocument, pushed: string): Promise<ReleaseDocument> {
    const tags = doc.data.observedTags ?? [];
    if (tags.at(-1) !== pushed && tags.includes(pushed)) {
      await this.collection.updateOne({ _id: doc._id }, { $pull: { 'data.observedTags': pushed } });
      await this.collection.updateOne({ _id: doc._id }, { $push: { 'data.observedTags': { $each: [pushed], $slice: -contractLimits.observedTags } } });
      return { ...doc, data: { ...doc.data, observedTags: [...tags.filter((t) => t !== pushed), pushed] } };
    }
    if (tags.length <= contractLimits.observedTags) return doc;
    await this.collection.updateOne({ _id: doc._id }, { $push: { 'data.observedTags': { $each: [], $slice: -contractLimits.observedTags } } });
    return doc;
  }

  /**
   * For promotion (the lifecycle's `releases.recordPromotion`): acceptedAt = min(acceptedAt, at),
   * lastPromotedAt = max(…, at), promotionCount = max(…, count) — idempotent, never lowers anything.
   */
  async recordPromotion (releaseId: string, at: number, promotionCount: number): Promise<void> {
    await this.collection.updateOne({ _id: releaseId }, {
      $min: { 'data.acceptedAt': at },
      $max: { 'data.lastPromotedAt': at, 'data.promotionCount': promotionCount },
    });
  }

  async findVerification (releaseId: string): Promise<ReleaseVerification | null> {
    const doc = await this.collection.findOne({ _id: releaseId }, { projection: { verification: 1 } });
    return doc?.verification ?? null;
  }

  async findVerifications (releaseIds: readonly string[]): Promise<Map<string, ReleaseVerification>> {
    if (releaseIds.length === 0) return new Map();
    const filter = { _id: { $in: [...new Set(releaseIds)] }, verification: { $exists: true } };
    const docs = await this.collection.find(filter, { projection: { verification: 1 } }).toArray();
    return new Map(docs.flatMap((d) => (d.verification ? [[d._id, d.verification] as const] : [])));
  }

  async recordVerification (releaseId: string, verification: ReleaseVerification): Promise<void> {
    await this.collection.updateOne(
      { _id: releaseId, $or: [{ verification: { $exists: false } }, { 'verification.verifiedAt': { $lt: verification.verifiedAt } }] },
      { $set: { verification } }
    );
  }

  async listByService (serviceId: string, page: { limit: number, after?: KeysetPosition }): Promise<IImageRelease[]> {
    const docs = await this.collection.find(releasePageFilter(serviceId, page.after)).sort(newestFirst).limit(page.limit).toArray();
    return docs.map(toRelease);
  }
}
