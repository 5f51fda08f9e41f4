import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { ReportRepository } from '../domain/ports.js';
import type { ReportedDeployment } from '../contracts/reports.js';
import type { ClaimRefusal, ReportHead, ReportRecord } from '../domain/reports.js';
import { duplicateKeyRefusals, isDuplicateKeyError } from './driverErrors.js';
import { collections } from './indexPlan.js';
import type { Database } from './mongo.js';

/**
 * One reporter's latest accepted report: `_id` = record id (`rollout:<rolloutId>:<reporterId>` or
 * `service:<serviceId>:<reporterId>`). The deployments it stated are kept as one JSON text: the
 * store only ever hands them back whole (never queries into them), and one string costs the
 * database a fraction of what the same deployments cost as nested documents on every write.
 */
export interface ReportDocument extends Omit<ReportRecord, 'id' | 'deployments'> {
  _id: string;
  deploymentsJson?: string;
  /** The deployments as nested documents: how records were written before `deploymentsJson` (read, never written). */
  deployments?: ReportedDeployment[];
}

/** A node or session of a rollout, held by the first reporter that claimed it: `_id` = `<rolloutId>/<kind>/<name>`. */
export interface ClaimDocument {
  _id: string;
  rolloutId: string;
  reporterId: string;
  createdAt: number;
}

const claimId = (rolloutId: string, kind: 'node' | 'session', name: string): string => `${rolloutId}/${kind}/${name}`;

const toRecord = ({ _id, deploymentsJson, deployments, ...rest }: ReportDocument): ReportRecord =>
  ({ id: _id, ...rest, deployments: deploymentsJson === undefined ? deployments ?? [] : JSON.parse(deploymentsJson) as ReportedDeployment[] });

/** What the report path reads of a record: everything but the deployments (either form). */
const withoutDeployments = { deployments: 0, deploymentsJson: 0 } as const;

/** Rounds of "look, claim" a report may take against reporters that win a claim and give it back. */
const CLAIM_ATTEMPTS = 20;

/** Record heads kept per process (`knownHead`): at most this many, holding at most this many replica verdicts in all. */
const HEADS_KEPT = 4096;
const HEAD_REPLICAS_KEPT = 65_536;

const headOf = ({ deployments: _none, ...head }: ReportRecord): ReportHead => head;

/**
 * Snapshot reports, one document per (rollout or service, reporter), each written whole with
 * compare-and-swap on its version: the fence of the report path (a refused or superseded report
 * writes nothing, two in flight never interleave). Reads are by `_id` (one record, or `$in` over
 * the reporters a status names), so they use the primary index on every MongoDB-compatible server.
 */
export class ReportStore implements ReportRepository {
  readonly claims: Collection<ClaimDocument>;
  /** The head of each rollout record as this process last wrote or read it (oldest first), and their replicas in all. */
  readonly #heads = new Map<string, ReportHead>();
  #headReplicas = 0;

  constructor (database: Database, readonly collection: Collection<ReportDocument> = database.db.collection(collections.reports)) {
    this.claims = database.db.collection(collections.reportClaims);
  }

  async findRecord (id: string): Promise<ReportRecord | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc ? toRecord(doc) : null;
  }

  async findHead (id: string): Promise<ReportHead | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: withoutDeployments });
    if (!doc) {
      this.#forget(id);
      return null;
    }
    const { _id, deployments: _none, deploymentsJson: _text, ...rest } = doc;
    const head = { id: _id, ...rest };
    this.#remember(head);
    return head;
  }

  knownHead (id: string): ReportHead | undefined {
    return this.#heads.get(id);
  }

  async findRecords (ids: readonly string[]): Promise<ReportRecord[]> {
    if (ids.length === 0) return [];
    return (await this.collection.find({ _id: { $in: [...ids] } }).toArray()).map(toRecord);
  }

  async listServiceRecords (serviceId: string): Promise<ReportRecord[]> {
    return (await this.collection.find({ serviceId, rolloutId: { $exists: false } }).sort({ _id: 1 }).toArray()).map(toRecord);
  }

  async writeRecord (record: ReportRecord, expectedVersion: number): Promise<boolean> {
    // Until the write is known to have happened (or not), this process knows nothing of the record.
    this.#forget(record.id);
    const written = await this.#write(record, expectedVersion);
    if (written) this.#remember(headOf(record));
    return written;
  }

  async #write (record: ReportRecord, expectedVersion: number): Promise<boolean> {
    const { id, deployments, ...head } = record;
    const rest = { ...head, deploymentsJson: JSON.stringify(deployments) };
    if (expectedVersion === 0) {
      try {
        await this.collection.insertOne({ _id: id, ...rest });
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    }
    const result = await this.collection.replaceOne({ _id: id, version: expectedVersion }, rest);
    return result.matchedCount === 1;
  }

  #remember (head: ReportHead): void {
    if (head.rolloutId === undefined) return;
    this.#forget(head.id);
    if (head.replicas.length > HEAD_REPLICAS_KEPT / 16) return;
    this.#heads.set(head.id, Object.freeze(head));
    this.#headReplicas += head.replicas.length;
    for (const [oldest, kept] of this.#heads) {
      if (this.#heads.size <= HEADS_KEPT && this.#headReplicas <= HEAD_REPLICAS_KEPT) break;
      this.#heads.delete(oldest);
      this.#headReplicas -= kept.replicas.length;
    }
  }

  #forget (id: string): void {
    const kept = this.#heads.get(id);
    if (!kept) return;
    this.#heads.delete(id);
    this.#headReplicas -= kept.replicas.length;
  }

  /**
   * Another reporter's claims are found first, so a refused report inserts nothing. The claims
   * are then inserted in one ordered write, sorted by id: two reporters after the same ids meet
   * at the first one they share, and only one of them gets past it. A claim a concurrent reporter
   * won in between refuses the insert (unique `_id`); the claims this call inserted are given
   * back (a refused report holds nothing) and, when the winner gave its own back too (it lost
   * elsewhere), the claim is tried again: success is answered only while every claim is held.
   */
  async claim (rolloutId: string, reporterId: string, claims: ReadonlyArray<{ kind: 'node' | 'session', name: string }>, now: number): Promise<ClaimRefusal[]> {
    if (claims.length === 0) return [];
    const wanted = claims.map((c) => ({ ...c, id: claimId(rolloutId, c.kind, c.name) })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const ids = wanted.map((c) => c.id);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const held = await this.othersClaims(ids, wanted, reporterId);
      if (held.length > 0) return held;
      // Filter on `_id` and `reporterId`: another reporter's claim does not match, so the upsert
      // tries to insert its `_id` and the unique `_id` refuses it (E11000).
      const operations: Array<AnyBulkWriteOperation<ClaimDocument>> = ids.map((_id) => ({
        updateOne: { filter: { _id, reporterId }, update: { $setOnInsert: { rolloutId, createdAt: now } }, upsert: true },
      }));
      try {
        await this.claims.bulkWrite(operations, { ordered: true });
        return [];
      } catch (err) {
        const refusals = duplicateKeyRefusals(err);
        if (!refusals) throw err;
        const inserted = Object.keys(refusals.upsertedIds).flatMap((index) => ids[Number(index)] ?? []);
        if (inserted.length > 0) await this.claims.deleteMany({ _id: { $in: inserted }, reporterId, createdAt: now });
      }
      // The winner may have given its claim back already: look again, after a short random pause.
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 5 * (attempt + 1))));
    }
    throw new Error(`the claims of reporter '${reporterId}' on rollout '${rolloutId}' kept being contended`);
  }

  /** The claims among `ids` that reporters other than `reporterId` hold. */
  private async othersClaims (ids: string[], claims: ReadonlyArray<{ kind: 'node' | 'session', name: string }>, reporterId: string): Promise<ClaimRefusal[]> {
    const holders = await this.claims.find({ _id: { $in: ids } }, { projection: { _id: 1, reporterId: 1 } }).toArray();
    const ownerOf = new Map(holders.map((h) => [h._id, h.reporterId]));
    return claims.flatMap((c, i) => {
      const owner = ownerOf.get(ids[i] ?? '');
      return owner !== undefined && owner !== reporterId ? [{ kind: c.kind, name: c.name, owner }] : [];
    });
  }

  async removeRollout (rolloutId: string): Promise<void> {
    for (const [id, head] of this.#heads) if (head.rolloutId === rolloutId) this.#forget(id);
    await Promise.all([this.collection.deleteMany({ rolloutId }), this.claims.deleteMany({ rolloutId })]);
  }
}
