import { type Collection, type Filter } from 'mongodb';
import type { AutomaticPromotionOutcome, IImmutableRegistryPushEvent, ImageTagHistoryEntry } from '../contracts/index.js';
import type { PushEventRepository, StoredPushEvent } from '../domain/ports/index.js';
import { pick } from '../domain/objects.js';
import type { KeysetPosition, ReleaseIdentity } from '../domain/releases.js';
import { keysetBefore } from './keyset.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

/**
 * Every accepted push event, kept for good: `_id` = eventId (the dedup record),
 * the event's other fields flat (the tag ledger queries them), the content
 * fingerprint, when and by whom it was recorded.
 */
export interface PushEventDocument extends Omit<IImmutableRegistryPushEvent, 'eventId'> {
  _id: string;
  fingerprint: string;
  recordedAt: number;
  reportedBy: string;
  automation?: AutomaticPromotionOutcome;
}

const toStored = (doc: PushEventDocument): StoredPushEvent => {
  const { _id, fingerprint, recordedAt, reportedBy, automation, ...rest } = doc;
  return { event: { eventId: _id, ...rest }, fingerprint, recordedAt, reportedBy, ...(automation ? { automation } : {}) };
};

const toDocument = (record: StoredPushEvent): PushEventDocument => {
  const { eventId, ...rest } = record.event;
  return { _id: eventId, ...rest, fingerprint: record.fingerprint, recordedAt: record.recordedAt, reportedBy: record.reportedBy };
};

const ledgerProjection = {
  _id: 1, releaseId: 1, registryRootDigest: 1, digestPinnedImageReference: 1, observedAt: 1, actorUserId: 1,
} as const;

type LedgerRow = Pick<PushEventDocument, '_id' | 'releaseId' | 'registryRootDigest' | 'digestPinnedImageReference' | 'observedAt' | 'actorUserId'>;

const toLedgerEntry = (row: LedgerRow): ImageTagHistoryEntry =>
  ({ eventId: row._id, ...pick(row, ['releaseId', 'registryRootDigest', 'digestPinnedImageReference', 'observedAt', 'actorUserId']) });

export class PushEventStore implements PushEventRepository {
  constructor (database: Database, readonly collection: Collection<PushEventDocument> = database.db.collection(collections.pushEvents)) {}

  async findById (eventId: string): Promise<StoredPushEvent | null> {
    const doc = await this.collection.findOne({ _id: eventId });
    return doc ? toStored(doc) : null;
  }

  async insert (record: StoredPushEvent): Promise<boolean> {
    try {
      await this.collection.insertOne(toDocument(record));
      return true;
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
  }

  async recordAutomation (eventId: string, outcome: AutomaticPromotionOutcome): Promise<void> {
    await this.collection.updateOne({ _id: eventId }, { $set: { automation: outcome } });
  }

  async remove (eventId: string, fingerprint: string): Promise<void> {
    await this.collection.deleteOne({ _id: eventId, fingerprint });
  }

  /** Served by `pushEvents_release` ({ releaseId: 1 }); the other fields keep a refused event of the same id out. */
  async countForRelease (identity: ReleaseIdentity): Promise<number> {
    return this.collection.countDocuments({
      releaseId: identity.releaseId,
      serviceId: identity.serviceId,
      registryHost: identity.registryHost,
      repository: identity.repository,
      registryRootDigest: identity.registryRootDigest,
      imageId: identity.imageId,
      manifestMediaType: identity.manifestMediaType,
    });
  }

  async tagHistory (serviceId: string, tag: string, query: { at?: number, limit: number, after?: KeysetPosition }): Promise<ImageTagHistoryEntry[]> {
    const { at, after } = query;
    const filter: Filter<PushEventDocument> = {
      serviceId,
      tag,
      // `at` and a cursor never come together (assertTagHistoryQuery); were they to, `at` bounds.
      ...(after ? keysetBefore('observedAt', after) : {}),
      ...(at !== undefined ? { observedAt: { $lte: at } } : {}),
    };
    const rows = await this.collection
      .find(filter, { projection: ledgerProjection })
      .sort({ observedAt: -1, _id: -1 })
      .limit(query.limit)
      .toArray();
    return rows.map((row) => toLedgerEntry(row as LedgerRow));
  }
}
