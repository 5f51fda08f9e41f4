import type { Collection } from 'mongodb';
import type { AttestationRecord } from '../domain/attestation/issuance.js';
import type { DomainEvent } from '../domain/events.js';
import type { AttestationDues, AttestationInsert, AttestationLog, DueAttestations } from '../domain/ports/attestations.js';
import { isDuplicateKeyError } from './driverErrors.js';
import { collections } from './indexPlan.js';
import type { Database } from './mongo.js';
import { outboxOf, type ServiceDocument } from './serviceDocument.js';

/** One attestation: `_id` = its id (one per service, rollout and kind), `sequence` unique per service (the chain). */
export interface AttestationDocument extends Omit<AttestationRecord, 'id'> {
  _id: string;
}

const toRecord = ({ _id, ...rest }: AttestationDocument): AttestationRecord => ({ id: _id, ...rest });

/**
 * The attestations issued (`attestations`) and the ones owed (`attestationsDue` on the service
 * document, pushed by the write that decides a success or a drift). Two unique keys make issuing
 * exactly once across processes: the `_id` (a second insert of a rollout's attestation of a kind is
 * the same attestation) and (serviceId, sequence) (two attestations never claim one place of the chain).
 */
export class AttestationStore implements AttestationLog, AttestationDues {
  readonly collection: Collection<AttestationDocument>;
  private readonly services: Collection<ServiceDocument>;

  constructor (database: Database) {
    this.collection = database.db.collection(collections.attestations);
    this.services = database.db.collection(collections.services);
  }

  async insert (record: AttestationRecord): Promise<AttestationInsert> {
    const { id, ...rest } = record;
    try {
      await this.collection.insertOne({ _id: id, ...rest });
      return 'inserted';
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    return (await this.collection.findOne({ _id: id }, { projection: { _id: 1 } })) ? 'exists' : 'sequence-taken';
  }

  async head (serviceId: string): Promise<AttestationRecord | null> {
    const [doc] = await this.collection.find({ serviceId }).sort({ serviceId: 1, sequence: -1 }).limit(1).toArray();
    return doc ? toRecord(doc) : null;
  }

  async find (serviceId: string, id: string): Promise<AttestationRecord | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc && doc.serviceId === serviceId ? toRecord(doc) : null;
  }

  async list (serviceId: string, query: { limit: number, afterSequence: number, rolloutId?: string }): Promise<AttestationRecord[]> {
    const filter = { serviceId, ...(query.rolloutId === undefined ? {} : { rolloutId: query.rolloutId }), sequence: { $gt: query.afterSequence } };
    const docs = await this.collection.find(filter).sort({ sequence: 1 }).limit(query.limit).toArray();
    return docs.map(toRecord);
  }

  async pendingAttachments (limit: number, now: number): Promise<AttestationRecord[]> {
    const due = { attach: 'pending' as const, $or: [{ attachAfter: { $exists: false } }, { attachAfter: { $lte: now } }] };
    return (await this.collection.find(due).limit(limit).toArray()).map(toRecord);
  }

  async attachFailed (id: string, retryAt: number): Promise<void> {
    await this.collection.updateOne({ _id: id, attach: 'pending' }, { $inc: { attachFailures: 1 }, $set: { attachAfter: retryAt } });
  }

  async markAttached (id: string): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $set: { attach: 'done' }, $unset: { attachAfter: '' } });
  }

  async servicesWithDues (limit: number, after?: string): Promise<string[]> {
    const filter = after === undefined ? { 'attestationsDue.0': { $exists: true } } : { 'attestationsDue.0': { $exists: true }, _id: { $gt: after } };
    const docs = await this.services.find(filter, { projection: { _id: 1 } }).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map((d) => d._id);
  }

  async findDues (serviceId: string): Promise<DueAttestations | null> {
    const projection = { 'data.name': 1, 'data.rolloutPolicy': 1, 'data.trustPolicy': 1, attestationsDue: 1 };
    const doc = await this.services.findOne({ _id: serviceId }, { projection });
    if (!doc) return null;
    // The trust policy belongs to the trust chain's service contract (data.trustPolicy); read as stored.
    const trustPolicy = (doc.data as unknown as Record<string, unknown>)['trustPolicy'];
    return {
      serviceId,
      name: doc.data.name,
      ...(doc.data.rolloutPolicy === undefined ? {} : { rolloutPolicy: doc.data.rolloutPolicy }),
      ...(trustPolicy === undefined || trustPolicy === null ? {} : { trustPolicy }),
      dues: doc.attestationsDue ?? [],
    };
  }

  async completeDue (serviceId: string, key: string, event: DomainEvent | undefined): Promise<boolean> {
    const result = await this.services.updateOne(
      { _id: serviceId, 'attestationsDue.key': key },
      { $pull: { attestationsDue: { key } }, ...(event === undefined ? {} : { $push: outboxOf([event]) }) }
    );
    return result.modifiedCount === 1;
  }
}
