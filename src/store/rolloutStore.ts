import { type Collection } from 'mongodb';
import type { InsertRolloutResult, RolloutRepository } from '../domain/ports/index.js';
import type { MetricsRollout } from '../domain/deliveryMetrics.js';
import type { RolloutEnd, RolloutRecord } from '../domain/rollouts.js';
import type { StageRollout } from '../domain/governance/pipelines.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

export interface RolloutDocument extends Omit<RolloutRecord, 'rolloutId'> {
  _id: string;
}

const toRecord = ({ _id, ...rest }: RolloutDocument): RolloutRecord => ({ rolloutId: _id, ...rest });

/** Outcomes one page of a windowed listOutcomes reads (the pages stop at the window's start). */
const OUTCOMES_PAGE = 128;

/**
 * The rollout history, and the commit point of every promotion and rollback:
 * the unique index on (serviceId, generation) lets exactly one rollout claim a
 * generation, across any number of processes; the unique index on
 * (serviceId, idempotencyRecordId) gives each idempotent request at most one rollout.
 */
export class RolloutStore implements RolloutRepository {
  constructor (database: Database, readonly collection: Collection<RolloutDocument> = database.db.collection(collections.rollouts)) {}

  async insert (record: RolloutRecord): Promise<InsertRolloutResult> {
    const { rolloutId, ...rest } = record;
    try {
      await this.collection.insertOne({ _id: rolloutId, ...rest });
      return { kind: 'inserted' };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    const mine = await this.findByIdempotencyRecord(record.serviceId, record.idempotencyRecordId);
    if (mine) return { kind: 'exists-for-record', record: mine };
    return { kind: 'generation-taken' };
  }

  async findByIdempotencyRecord (serviceId: string, idempotencyRecordId: string): Promise<RolloutRecord | null> {
    // Equality on exactly the fields of rollouts_service_idempotency_record_unique, led by the shard key (serviceId).
    const doc = await this.collection.findOne({ serviceId, idempotencyRecordId });
    return doc ? toRecord(doc) : null;
  }

  async findPending (serviceId: string, currentGeneration: number): Promise<RolloutRecord[]> {
    // Equality on exactly the fields of the unique (serviceId, generation) index, twice: `{ serviceId, state }`
    // would scan every rollout of every service on the local development database, on every promotion.
    const docs = await Promise.all([currentGeneration, currentGeneration + 1].map(async (generation) =>
      await this.collection.findOne({ serviceId, generation })));
    return docs.flatMap((doc) => (doc && doc.state === 'pending' ? [toRecord(doc)] : []));
  }

  async markApplied (rolloutId: string): Promise<void> {
    // By `_id` alone (applied is final, setting it twice is harmless): `{ _id, state }` would scan every
    // rollout on the local development database.
    await this.collection.updateOne({ _id: rolloutId }, { $set: { state: 'applied' } });
  }

  /** Promotions (manual or automatic) of a release: the release's promotionCount. */
  async lastSucceeded (serviceId: string, releaseIds: readonly string[]): Promise<Map<string, number>> {
    if (releaseIds.length === 0) return new Map();
    // A service's rollouts are few (its history) and the filter leads with serviceId: the (serviceId, generation) index serves it.
    const docs = await this.collection
      .find({ serviceId, releaseId: { $in: [...releaseIds] }, succeededAt: { $exists: true } }, { projection: { _id: 0, releaseId: 1, succeededAt: 1 } })
      .toArray();
    const newest = new Map<string, number>();
    for (const doc of docs) {
      const at = doc.succeededAt;
      if (typeof at === 'number' && at > (newest.get(doc.releaseId) ?? -Infinity)) newest.set(doc.releaseId, at);
    }
    return newest;
  }

  async countPromotions (releaseId: string): Promise<number> {
    return this.collection.countDocuments({ releaseId, mode: { $in: ['promotion', 'automatic'] } });
  }

  /** History page, newest generation first; `beforeGeneration` is the keyset cursor. */
  async list (serviceId: string, limit: number, beforeGeneration?: number): Promise<RolloutRecord[]> {
    const filter = beforeGeneration === undefined ? { serviceId } : { serviceId, generation: { $lt: beforeGeneration } };
    const docs = await this.collection.find(filter, { projection: { serviceAfter: 0 } }).sort({ generation: -1 }).limit(limit).toArray();
    return docs.map((doc) => toRecord({ ...doc, serviceAfter: undefined as never }));
  }

  /**
   * The newest `limit` rollouts' outcomes, newest first; with `since`, only back to the newest rollout
   * created before it (that one may have succeeded after `since`; an older one cannot, since a rollout
   * is decided only while it is the service's current one). The pages stop there: a window's metrics
   * read the window's rollouts, not the service's whole history.
   */
  async listOutcomes (serviceId: string, limit: number, since?: number): Promise<MetricsRollout[]> {
    // Outcomes and times only: a rollout's plan and the service after it (~40 bytes per target node each) are most of it.
    const projection = { generation: 1, mode: 1, releaseId: 1, createdAt: 1, succeededAt: 1, failure: 1, ended: 1 } as const;
    const outcomes: MetricsRollout[] = [];
    // Keyset pages on (serviceId, generation), each a bounded read of the index, until the window's start.
    for (let before: number | undefined; ;) {
      const size = Math.min(since === undefined ? limit : OUTCOMES_PAGE, limit - outcomes.length);
      if (size <= 0) return outcomes; // (limit 0 would mean none on the server)
      const filter = before === undefined ? { serviceId } : { serviceId, generation: { $lt: before } };
      const page = await this.collection.find(filter, { projection }).sort({ generation: -1 }).limit(size).toArray();
      for (const { _id, ...rest } of page) {
        outcomes.push({ rolloutId: _id, ...rest } as MetricsRollout);
        if (since !== undefined && rest.createdAt < since) return outcomes;
      }
      if (page.length < size || outcomes.length >= limit) return outcomes;
      before = page[page.length - 1]?.generation;
    }
  }

  async findByGeneration (serviceId: string, generation: number): Promise<RolloutRecord | null> {
    // Equality on exactly the fields of the unique (serviceId, generation) index: served by it on every server.
    const doc = await this.collection.findOne({ serviceId, generation }, { projection: { serviceAfter: 0 } });
    return doc ? toRecord({ ...doc, serviceAfter: undefined as never }) : null;
  }

  /** Copies the milestones the record does not hold yet (each is decided once, in the service document: every copy is the same). */
  async recordMilestones (rolloutId: string, milestones: Pick<RolloutRecord, 'succeededAt' | 'failure' | 'deadline'>): Promise<void> {
    const given = Object.entries(milestones).filter(([, value]) => value !== undefined);
    if (given.length === 0) return;
    const held = await this.collection.findOne({ _id: rolloutId }, { projection: { succeededAt: 1, failure: 1, deadline: 1 } });
    if (!held) return;
    const set = Object.fromEntries(given.filter(([field]) => (held as Record<string, unknown>)[field] === undefined));
    if (Object.keys(set).length > 0) await this.collection.updateOne({ _id: rolloutId }, { $set: set });
  }

  async recordRevocation (rolloutId: string, at: number): Promise<void> {
    await this.collection.updateOne({ _id: rolloutId, revokedAt: { $exists: false } }, { $set: { revokedAt: at } });
  }

  async stageRollouts (serviceId: string, digest: string | undefined, limit: number): Promise<StageRollout[]> {
    // Only what pipelines read. Of one digest: equality on serviceId and the digest (rollouts_service_digest);
    // the newest of any digest: serviceId, newest generation first (rollouts_service_generation_unique).
    const projection = { 'plan.requestedDigest': 1, createdAt: 1, succeededAt: 1, failure: 1, revokedAt: 1, ended: 1 } as const;
    const query = digest === undefined
      ? this.collection.find({ serviceId }, { projection }).sort({ generation: -1 })
      : this.collection.find({ serviceId, 'plan.requestedDigest': digest }, { projection }).sort({ createdAt: -1 });
    const docs = await query.limit(limit).toArray();
    return docs.map((doc) => ({
      rolloutId: doc._id,
      digest: doc.plan.requestedDigest,
      issuedAt: doc.createdAt,
      ...(doc.succeededAt === undefined ? {} : { succeededAt: doc.succeededAt }),
      ...(doc.failure === undefined ? {} : { failure: { at: doc.failure.at, reason: doc.failure.reason } }),
      ...(doc.revokedAt === undefined ? {} : { revokedAt: doc.revokedAt }),
      ...(doc.ended === undefined ? {} : { ended: { at: doc.ended.at, kind: doc.ended.by } }),
    }));
  }

  async markEnded (rolloutId: string, end: RolloutEnd): Promise<boolean> {
    const result = await this.collection.updateOne({ _id: rolloutId, ended: { $exists: false } }, { $set: { ended: end } });
    return result.modifiedCount === 1;
  }
}
