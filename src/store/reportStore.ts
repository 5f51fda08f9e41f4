import { BSON, type AnyBulkWriteOperation, type Collection } from 'mongodb';
import type { ReportRepository } from '../domain/ports/index.js';
import type { ReportedDeployment } from '../contracts/reports.js';
import { rolloutRecordId, UNBACKED_CLAIM_AFTER_MS, type ClaimRefusal, type ReportHead, type ReportRecord } from '../domain/reports.js';
import { coalesced } from './coalesce.js';
import { duplicateKeyRefusals, isRefusedBeforeSending, refusedWrites } from './driverErrors.js';
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
  /**
   * `<_id>@<version>`, under the unique index `{ _id, fence }`: the compare-and-swap of a report replaces
   * the record `{ _id, fence }` — an equality on exactly a unique index's fields, which every
   * MongoDB-compatible server (the local development database included) serves from the index
   * (`{ _id, version }` would scan the whole collection there), and which names the shard key `_id`
   * (docs/operations.md "Sharding": a sharded upsert must name it). (Records written before fences
   * existed are fenced by the start-up migrations: ./migrations.ts.)
   */
  fence: string;
  deploymentsJson: string;
}

/** A node or session of a rollout, held by the first reporter that claimed it: `_id` = `<rolloutId>/<kind>/<name>`. */
export interface ClaimDocument {
  _id: string;
  rolloutId: string;
  reporterId: string;
  createdAt: number;
}

const claimId = (rolloutId: string, kind: 'node' | 'session', name: string): string => `${rolloutId}/${kind}/${name}`;

const fenceOf = (id: string, version: number): string => `${id}@${version}`;

/** The compare-and-swap filter of a record at a version: `_id` (the shard key) and its fence, the fields of reports_id_fence_unique. */
const fencedAt = (id: string, version: number) => ({ _id: id, fence: fenceOf(id, version) });

const toRecord = ({ _id, deploymentsJson, fence: _fence, ...rest }: ReportDocument): ReportRecord =>
  ({ id: _id, ...rest, deployments: JSON.parse(deploymentsJson) as ReportedDeployment[] });

/** What the report path reads of a record: everything but the deployments. */
const withoutDeployments = { deploymentsJson: 0 } as const;

/** The largest record this store writes: the database's 16 MiB document limit, less room for what a write adds around it. */
const RECORD_BYTES_LIMIT = 16 * 1024 * 1024 - 64 * 1024;

/** A record to write, and the version it must replace (0: none yet). */
interface RecordWrite { document: ReportDocument, expectedVersion: number }

/** Estimated bytes of records one coalesced bulk write carries at most (a larger single record goes alone). */
const WRITE_BATCH_BYTES = 8 * 1024 * 1024;

/** A claim held by another reporter, as read. */
interface HeldClaim extends ClaimRefusal { id: string, createdAt: number }

/** Rounds of "look, claim" a report may take against reporters that win a claim and give it back. */
const CLAIM_ATTEMPTS = 20;

/** Record heads kept per process (`knownHead`): at most this many, holding at most this many replica verdicts in all. */
const HEADS_KEPT = 4096;
const HEAD_REPLICAS_KEPT = 65_536;

const headOf = ({ deployments: _none, ...head }: ReportRecord): ReportHead => head;

/** A stored record's exact BSON size: the document with an empty deployments text, plus that text's UTF-8 bytes. */
export const storedBytes = (document: { deploymentsJson: string }): number =>
  BSON.calculateObjectSize({ ...document, deploymentsJson: '' }) + Buffer.byteLength(document.deploymentsJson, 'utf8');

/**
 * Snapshot reports, one document per (rollout or service, reporter), each written whole with
 * compare-and-swap on its version: the fence of the report path (a refused or superseded report
 * writes nothing, two in flight never interleave). Reads are by `_id` (one record, or `$in` over
 * the reporters a status names), so they use the primary index on every MongoDB-compatible server.
 */
export class ReportStore implements ReportRepository {
  readonly claims: Collection<ClaimDocument>;
  private readonly buckets: Collection<{ _id: string, rolloutId: string }>;
  /** The head of each rollout record as this process last wrote or read it (oldest first), and their replicas in all. */
  readonly #heads = new Map<string, ReportHead>();
  #headReplicas = 0;

  constructor (database: Database, readonly collection: Collection<ReportDocument> = database.db.collection(collections.reports)) {
    this.claims = database.db.collection(collections.reportClaims);
    this.buckets = database.db.collection(collections.statusBuckets);
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
    const { _id, deploymentsJson: _text, fence: _fence, ...rest } = doc;
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

  /**
   * The records of a rollout's reporters: the reporters that claimed its target nodes (claims by `_id`
   * `$in`), then their records (by `_id` `$in`) — both served by the unique `_id` index on every server,
   * where `{ rolloutId }` scans every record on the local development database (test/integration/http/reportIndexes.test.ts).
   */
  async findRolloutRecords (rolloutId: string, targetNodeNames: readonly string[]): Promise<ReportRecord[]> {
    if (targetNodeNames.length === 0) return [];
    const nodeClaims = targetNodeNames.map((n) => claimId(rolloutId, 'node', n));
    const claims = await this.claims.find({ _id: { $in: nodeClaims } }, { projection: { reporterId: 1 } }).toArray();
    const ids = [...new Set(claims.map((c) => rolloutRecordId(rolloutId, c.reporterId)))].sort();
    return (await this.findRecords(ids)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async listServiceRecords (serviceId: string): Promise<ReportRecord[]> {
    return (await this.collection.find({ serviceId, rolloutId: { $exists: false } }).sort({ _id: 1 }).toArray()).map(toRecord);
  }

  async writeRecord (record: ReportRecord, expectedVersion: number): Promise<boolean> {
    // Until the write is known to have happened (or not), this process knows nothing of the record.
    this.#forget(record.id);
    const written = await this.#writes({ document: this.#documentOf(record), expectedVersion });
    if (written) this.#remember(headOf(record));
    return written;
  }

  /** The record as stored (its deployments as one JSON text, made once per deployments array). */
  #documentOf (record: ReportRecord): ReportDocument {
    const { id, deployments, ...head } = record;
    let json = this.#deploymentsJson.get(deployments);
    if (json === undefined) {
      json = JSON.stringify(deployments);
      this.#deploymentsJson.set(deployments, json);
    }
    return { _id: id, ...head, fence: fenceOf(id, record.version), deploymentsJson: json };
  }

  /** The JSON text of each deployments array this process writes (the size check and the write share it). */
  readonly #deploymentsJson = new WeakMap<readonly ReportedDeployment[], string>();

  /**
   * Whether the stored record would pass the limit: its exact BSON size, counted as the document
   * with an empty deployments text plus that text's UTF-8 bytes (a BSON string is its bytes plus a
   * fixed 5), so the deployments — most of a record — are measured by one native byte count
   * instead of BSON's character walk.
   */
  oversized (record: ReportRecord): number | undefined {
    return storedBytes(this.#documentOf(record)) > RECORD_BYTES_LIMIT ? RECORD_BYTES_LIMIT : undefined;
  }

  /**
   * The records written in one turn of the event loop go in one unordered bulk write
   * (src/store/coalesce.ts), each with its own compare-and-swap: a first record is inserted (the
   * unique `_id` refuses a second), a later one replaces the record by `_id` and fence with `upsert`, so
   * that a fence that no longer matches becomes an insert of an `_id` that exists — refused by the
   * unique index as the write of that operation alone: a duplicate key is "a concurrent report
   * won", any other refusal is that report's error, the rest are written.
   */
  readonly #writes = coalesced<RecordWrite, boolean>((calls) => this.#bulkWrite(calls), {
    weigh: ({ document }) => document.deploymentsJson.length + document.replicas.length * 256, maxWeight: WRITE_BATCH_BYTES,
  });

  async #bulkWrite (calls: readonly RecordWrite[]): Promise<Array<boolean | Error>> {
    const operations: Array<AnyBulkWriteOperation<ReportDocument>> = calls.map(({ document, expectedVersion }) => (expectedVersion === 0
      ? { insertOne: { document } }
      : { replaceOne: { filter: fencedAt(document._id, expectedVersion), replacement: document, upsert: true } }));
    try {
      await this.collection.bulkWrite(operations, { ordered: false });
      return calls.map(() => true);
    } catch (err) {
      const refused = refusedWrites(err);
      if (refused) {
        return calls.map((_, i) => {
          const refusal = refused.get(i);
          return refusal === undefined ? true : refusal === 'duplicate-key' ? false : refusal;
        });
      }
      // Refused by the driver before anything was sent (a document it will not send, say): each write
      // alone, so that only the one at fault fails. Anything else (the database away) may have written
      // some of them: every caller gets the error, and its agent's retry completes what was begun.
      if (calls.length > 1 && isRefusedBeforeSending(err)) {
        return Promise.all(calls.map(async (call) => {
          const [alone] = await this.#bulkWrite([call]).catch((e: unknown) => [e instanceof Error ? e : new Error(String(e))]);
          return alone ?? new Error('no outcome');
        }));
      }
      throw err;
    }
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
   * Another reporter's claims are found first (by `_id` `$in`), so a refused report inserts
   * nothing. The claims the reporter does not hold yet are then inserted in one ordered write,
   * sorted by id: two reporters after the same ids meet at the first one they share, and only one
   * of them gets past it (unique `_id`). A claim a concurrent reporter won in between stops the
   * insert; the claims this call inserted are given back (a refused report holds nothing) and,
   * when the winner gave its own back too (it lost elsewhere), the claim is tried again: success
   * is answered only while every claim is held. Every query names `_id` alone, so the unique `_id`
   * index serves it on every MongoDB-compatible server (a filter on `_id` and `reporterId` would
   * scan all claims on the local development database).
   */
  async claim (rolloutId: string, reporterId: string, claims: ReadonlyArray<{ kind: 'node' | 'session', name: string }>, now: number): Promise<ClaimRefusal[]> {
    if (claims.length === 0) return [];
    const wanted = claims.map((c) => ({ ...c, id: claimId(rolloutId, c.kind, c.name) })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const ids = wanted.map((c) => c.id);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const { others, mine } = await this.holders(ids, wanted, reporterId);
      if (others.length > 0) {
        // Claims their owner's record does not back and that are old: left by a report that was
        // refused or superseded after claiming, or killed before its record. Released, then looked at again.
        if (await this.releaseUnbacked(rolloutId, others, now)) continue;
        return others.map(({ kind, name, owner }) => ({ kind, name, owner }));
      }
      const missing = ids.filter((id) => !mine.has(id));
      if (missing.length === 0) return [];
      try {
        await this.claims.insertMany(missing.map((_id) => ({ _id, rolloutId, reporterId, createdAt: now })), { ordered: true });
        return [];
      } catch (err) {
        const refusals = duplicateKeyRefusals(err);
        if (!refusals) throw err;
        // Ordered: the claims before the first refused one were inserted, none after it.
        const inserted = missing.slice(0, Math.min(...refusals.refused));
        if (inserted.length > 0) await this.claims.deleteMany({ _id: { $in: inserted } });
      }
      // The winner may have given its claim back already, or be this reporter's own concurrent report: look again, after a short random pause.
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 5 * (attempt + 1))));
    }
    throw new Error(`the claims of reporter '${reporterId}' on rollout '${rolloutId}' kept being contended`);
  }

  /** The claims among `ids` that reporters other than `reporterId` hold, and those it holds itself. */
  private async holders (
    ids: string[], claims: ReadonlyArray<{ kind: 'node' | 'session', name: string }>, reporterId: string
  ): Promise<{ others: HeldClaim[], mine: Set<string> }> {
    const held = await this.claims.find({ _id: { $in: ids } }, { projection: { _id: 1, reporterId: 1, createdAt: 1 } }).toArray();
    const byId = new Map(held.map((h) => [h._id, h]));
    const others = claims.flatMap((c, i) => {
      const claim = byId.get(ids[i] ?? '');
      return claim !== undefined && claim.reporterId !== reporterId
        ? [{ kind: c.kind, name: c.name, owner: claim.reporterId, id: claim._id, createdAt: claim.createdAt }]
        : [];
    });
    return { others, mine: new Set(held.filter((h) => h.reporterId === reporterId).map((h) => h._id)) };
  }

  /**
   * Releases the claims among `held` that are older than UNBACKED_CLAIM_AFTER_MS and that their
   * owner's record of the rollout does not back (its nodes, the nodes it left out since, its
   * session and the sessions it retired): a claim is written before the record, so a report
   * refused or superseded after claiming, or killed in between, leaves claims no accepted report
   * made — without this, the node would be lost to every other reporter for the whole rollout.
   * A young claim may belong to a report still in flight: it stands. True when any was released.
   */
  private async releaseUnbacked (rolloutId: string, held: readonly HeldClaim[], now: number): Promise<boolean> {
    const old = held.filter((c) => c.createdAt <= now - UNBACKED_CLAIM_AFTER_MS);
    if (old.length === 0) return false;
    const owners = [...new Set(old.map((c) => c.owner))];
    const records = await this.collection.find(
      { _id: { $in: owners.map((owner) => rolloutRecordId(rolloutId, owner)) } },
      { projection: { reporterId: 1, nodeNames: 1, earlierNodes: 1, 'position.sessionId': 1, retiredSessions: 1 } }
    ).toArray();
    const backing = new Map(records.map((r) => [r.reporterId, r]));
    const unbacked = old.filter((c) => {
      const record = backing.get(c.owner);
      if (!record) return true;
      return c.kind === 'node'
        ? !record.nodeNames.includes(c.name) && !(record.earlierNodes ?? []).includes(c.name)
        : record.position.sessionId !== c.name && !record.retiredSessions.includes(c.name);
    });
    // Each only as it was read (its owner and time): a claim taken anew meanwhile stays. (A filter
    // beyond `_id` scans the claims on the local development database: this path is rare.)
    const removed = await Promise.all(unbacked.map(async (c) =>
      (await this.claims.deleteOne({ _id: c.id, reporterId: c.owner, createdAt: c.createdAt })).deletedCount));
    return removed.some((n) => n > 0);
  }

  async removeRollout (rolloutId: string): Promise<void> {
    for (const [id, head] of this.#heads) if (head.rolloutId === rolloutId) this.#forget(id);
    await Promise.all([this.collection.deleteMany({ rolloutId }), this.claims.deleteMany({ rolloutId }), this.buckets.deleteMany({ rolloutId })]);
  }
}
