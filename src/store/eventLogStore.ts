import type { Collection } from 'mongodb';
import { eventId, type DomainEvent, type LoggedEvent } from '../domain/events.js';
import type { EventLog } from '../domain/ports/eventLog.js';
import { isDuplicateKeyError } from './driverErrors.js';
import { collections } from './indexPlan.js';
import type { Database } from './mongo.js';
import type { ServiceDocument } from './serviceDocument.js';

/** One event of the log: `_id` = `<serviceId>:<seq>`, so a service's events are read by `_id` alone (`$in`). */
export interface EventDocument {
  _id: string;
  serviceId: string;
  seq: number;
  key: string;
  type: LoggedEvent['type'];
  time: number;
  data: Record<string, unknown>;
}

/** Rounds one relay takes against concurrent relays and appends before it leaves the rest to the next. */
const MAX_ROUNDS = 32;

const toLogged = (doc: EventDocument): LoggedEvent =>
  ({ id: doc._id, serviceId: doc.serviceId, seq: doc.seq, key: doc.key, type: doc.type, time: doc.time, data: doc.data });

/**
 * The relay from the service document's outbox into the `events` collection, and the log's reads.
 *
 * Exactly once and in order, without transactions, whichever processes relay at the same time: an
 * outbox entry's place in the log is CLAIMED in the service document (`outbox.<i>.seq`, together with
 * `eventSeq`, by compare-and-swap on both — only unclaimed entries at the front, in order), then the
 * event is inserted under `<serviceId>:<seq>` (a second insert of a claimed entry is a duplicate key:
 * the same event), then the entry leaves the outbox. A crash after the claim leaves the entry with its
 * seq: the next relay inserts it there. The log has no gap a reader must skip: a seq is claimed only
 * for an event, and a reader that finds seq n missing waits for its relay instead of skipping it.
 */
export class EventLogStore implements EventLog {
  readonly events: Collection<EventDocument>;
  private readonly services: Collection<ServiceDocument>;
  /** Relays in flight in this process, per service: a second caller waits for it, then relays once more. */
  readonly #running = new Map<string, Promise<number>>();

  constructor (database: Database) {
    this.events = database.db.collection(collections.events);
    this.services = database.db.collection(collections.services);
  }

  async relay (serviceId: string): Promise<number> {
    const running = this.#running.get(serviceId);
    if (running) await running.catch(() => undefined);
    const mine = this.#relay(serviceId).finally(() => { if (this.#running.get(serviceId) === mine) this.#running.delete(serviceId); });
    this.#running.set(serviceId, mine);
    return await mine;
  }

  async #relay (serviceId: string): Promise<number> {
    let appended = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const doc = await this.services.findOne({ _id: serviceId }, { projection: { outbox: 1, eventSeq: 1, 'data.name': 1 } });
      const outbox = doc?.outbox ?? [];
      if (!doc || outbox.length === 0) return appended;
      const claimed = await this.#claim(serviceId, outbox, doc.eventSeq ?? 0);
      if (!claimed) continue;
      await this.#insert(serviceId, claimed, doc.data?.name);
      await this.services.updateOne({ _id: serviceId }, { $pull: { outbox: { key: { $in: claimed.map((e) => e.key) } } } });
      appended += claimed.length;
    }
    return appended;
  }

  /**
   * The outbox entries with their seqs: those claimed already, and the unclaimed ones after them,
   * claimed now (compare-and-swap on `eventSeq` and on each entry still unclaimed). undefined: another
   * relay or append moved the outbox meanwhile (read it again).
   */
  async #claim (serviceId: string, outbox: DomainEvent[], eventSeq: number): Promise<Array<DomainEvent & { seq: number }> | undefined> {
    const unclaimedFrom = outbox.findIndex((e) => e.seq === undefined);
    if (unclaimedFrom === -1) return outbox as Array<DomainEvent & { seq: number }>;
    if (outbox.slice(unclaimedFrom).some((e) => e.seq !== undefined)) throw new Error(`service ${serviceId}: outbox claims out of order`);
    const filter: Record<string, unknown> = { _id: serviceId, eventSeq: eventSeq === 0 ? null : eventSeq };
    const set: Record<string, unknown> = { eventSeq: eventSeq + outbox.length - unclaimedFrom };
    outbox.forEach((entry, i) => {
      if (i < unclaimedFrom) return;
      filter[`outbox.${i}.key`] = entry.key;
      filter[`outbox.${i}.seq`] = { $exists: false };
      set[`outbox.${i}.seq`] = eventSeq + 1 + i - unclaimedFrom;
    });
    const result = await this.services.updateOne(filter, { $set: set });
    if (result.matchedCount !== 1) return undefined;
    return outbox.map((entry, i) => (i < unclaimedFrom ? entry : { ...entry, seq: eventSeq + 1 + i - unclaimedFrom })) as Array<DomainEvent & { seq: number }>;
  }

  /** Inserts claimed events (each under its seq: a repeated insert is the same event, a duplicate key). */
  async #insert (serviceId: string, claimed: ReadonlyArray<DomainEvent & { seq: number }>, serviceName: string | undefined): Promise<void> {
    const docs = claimed.map((e): EventDocument => ({
      _id: eventId(serviceId, e.seq),
      serviceId,
      seq: e.seq,
      key: e.key,
      type: e.type,
      time: e.time,
      data: { serviceId, ...(serviceName === undefined ? {} : { serviceName }), ...e.data },
    }));
    try {
      await this.events.insertMany(docs, { ordered: false });
    } catch (err) {
      if (!isDuplicateKeyError(err) && !allDuplicates(err)) throw err;
    }
  }

  async pendingRelays (limit: number, after?: string): Promise<string[]> {
    const filter = after === undefined ? { 'outbox.0': { $exists: true } } : { 'outbox.0': { $exists: true }, _id: { $gt: after } };
    const docs = await this.services.find(filter, { projection: { _id: 1 } }).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map((d) => d._id);
  }

  /** Appends the event to the outbox unless an event of its key waits there already (a retry of the same change). */
  async record (serviceId: string, event: DomainEvent): Promise<void> {
    await this.services.updateOne({ _id: serviceId, 'outbox.key': { $ne: event.key } }, { $push: { outbox: event } });
  }

  async eventsAfter (serviceId: string, seq: number, limit: number): Promise<LoggedEvent[]> {
    const ids = Array.from({ length: limit }, (_, i) => eventId(serviceId, seq + 1 + i));
    const docs = await this.events.find({ _id: { $in: ids } }).toArray();
    const bySeq = new Map(docs.map((d) => [d.seq, d]));
    const found: LoggedEvent[] = [];
    for (let next = seq + 1; bySeq.has(next); next++) found.push(toLogged(bySeq.get(next) as EventDocument));
    return found;
  }

  async head (serviceId: string): Promise<number | null> {
    const doc = await this.services.findOne({ _id: serviceId }, { projection: { eventSeq: 1 } });
    return doc ? doc.eventSeq ?? 0 : null;
  }

  async sweepExpired (before: number): Promise<number> {
    return (await this.events.deleteMany({ time: { $lt: before } })).deletedCount;
  }
}

/** An unordered insertMany whose every failure is a duplicate key (the events were in the log already). */
function allDuplicates (err: unknown): boolean {
  const writeErrors = (err as { writeErrors?: unknown })?.writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors === undefined ? [] : [writeErrors];
  return list.length > 0 && list.every((e) => (e as { code?: number }).code === 11000);
}
