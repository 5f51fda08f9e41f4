import type { Collection } from 'mongodb';
import type {
  DeadLetter, DeliveryAttempt, RetrySchedule, ServiceHead, SubscriptionPatch, WebhookCursor, WebhookRepository,
} from '../domain/ports/webhooks.js';
import type { Subscription, WebhookHealth } from '../domain/webhooks.js';
import { eventId } from '../domain/events.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { EventDocument } from './eventLogStore.js';
import { collections } from './indexPlan.js';
import type { Database } from './mongo.js';
import type { ServiceDocument } from './serviceDocument.js';

/** A subscription with its delivery lease (which process delivers it, until when). */
export interface SubscriptionDocument extends Omit<Subscription, 'id'> {
  _id: string;
  leaseOwner?: string | null;
  leaseUntil?: number;
}

/** A cursor: `_id` = `<subscriptionId>|<serviceId>`. */
export interface CursorDocument extends WebhookCursor {
  _id: string;
  subscriptionId: string;
}

export interface DeliveryDocument extends DeliveryAttempt {
  _id?: unknown;
}

/** A dead letter: `_id` = `<subscriptionId>|<eventId>`. */
export interface DeadLetterDocument extends DeadLetter {
  _id: string;
}

/** Seqs probed per read when a cursor looks past a gap the retention left. */
const GAP_PROBE = 1000;

const cursorId = (subscriptionId: string, serviceId: string): string => `${subscriptionId}|${serviceId}`;
const letterId = (subscriptionId: string, eventId: string): string => `${subscriptionId}|${eventId}`;

const toSubscription = ({ _id, leaseOwner: _owner, leaseUntil: _until, ...rest }: SubscriptionDocument): Subscription => ({ id: _id, ...rest });
const toCursor = ({ _id, subscriptionId: _sub, ...rest }: CursorDocument): WebhookCursor => rest;
const toLetter = ({ _id, ...rest }: DeadLetterDocument): DeadLetter => rest;
const toAttempt = ({ _id, ...rest }: DeliveryDocument): DeliveryAttempt => rest;

/**
 * Subscriptions, their delivery leases and per-service cursors, the delivery log and the dead letters
 * (docs/webhooks.md). Every write that decides something is a compare-and-swap on one document: the
 * lease (free, expired or the owner's), the cursor (on the seq it moves from).
 */
export class WebhookStore implements WebhookRepository {
  private readonly subscriptions: Collection<SubscriptionDocument>;
  private readonly cursorDocs: Collection<CursorDocument>;
  private readonly deliveryDocs: Collection<DeliveryDocument>;
  private readonly letters: Collection<DeadLetterDocument>;
  private readonly services: Collection<ServiceDocument>;
  private readonly events: Collection<EventDocument>;

  constructor (database: Database) {
    this.subscriptions = database.db.collection(collections.webhookSubscriptions);
    this.cursorDocs = database.db.collection(collections.webhookCursors);
    this.deliveryDocs = database.db.collection(collections.webhookDeliveries);
    this.letters = database.db.collection(collections.webhookDeadLetters);
    this.services = database.db.collection(collections.services);
    this.events = database.db.collection(collections.events);
  }

  async createSubscription ({ id, ...rest }: Subscription, cursors: ReadonlyArray<{ serviceId: string, seq: number }>): Promise<void> {
    // The cursors first: a subscription is never delivered without its starting points.
    if (cursors.length > 0) {
      const docs = cursors.map((c): CursorDocument =>
        ({ _id: cursorId(id, c.serviceId), subscriptionId: id, serviceId: c.serviceId, seq: c.seq, attempts: 0 }));
      await this.cursorDocs.insertMany(docs, { ordered: false });
    }
    await this.subscriptions.insertOne({ _id: id, ...rest, leaseOwner: null, leaseUntil: 0 });
  }

  async getSubscription (id: string): Promise<Subscription | null> {
    const doc = await this.subscriptions.findOne({ _id: id });
    return doc ? toSubscription(doc) : null;
  }

  async listSubscriptions (): Promise<Subscription[]> {
    return (await this.subscriptions.find({}).sort({ _id: 1 }).limit(10_000).toArray()).map(toSubscription);
  }

  async updateSubscription (id: string, patch: SubscriptionPatch & { updatedAt: number }): Promise<Subscription | null> {
    const set: Record<string, unknown> = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    // Resuming a subscription the receiver ended (410), or a failing one, starts it healthy again.
    if (patch.enabled === true) set['health'] = 'healthy';
    const update = patch.enabled === true ? { $set: set, $unset: { lastError: '' as const } } : { $set: set };
    const doc = await this.subscriptions.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
    return doc ? toSubscription(doc) : null;
  }

  async deleteSubscription (id: string): Promise<boolean> {
    const deleted = (await this.subscriptions.deleteOne({ _id: id })).deletedCount === 1;
    await this.cursorDocs.deleteMany({ subscriptionId: id });
    await this.letters.deleteMany({ subscriptionId: id });
    await this.deliveryDocs.deleteMany({ subscriptionId: id });
    return deleted;
  }

  async setSecrets (id: string, secrets: Subscription['secrets'], updatedAt: number): Promise<Subscription | null> {
    const doc = await this.subscriptions.findOneAndUpdate({ _id: id }, { $set: { secrets, updatedAt } }, { returnDocument: 'after' });
    return doc ? toSubscription(doc) : null;
  }

  async setHealth (id: string, health: WebhookHealth, lastError: string | undefined, disable: boolean): Promise<void> {
    const set: Record<string, unknown> = { health, ...(disable ? { enabled: false } : {}) };
    const update = lastError === undefined ? { $set: set, $unset: { lastError: '' as const } } : { $set: { ...set, lastError } };
    await this.subscriptions.updateOne({ _id: id }, update);
  }

  async claimLease (id: string, owner: string, now: number, until: number): Promise<boolean> {
    const result = await this.subscriptions.updateOne(
      { _id: id, enabled: true, $or: [{ leaseOwner: owner }, { leaseOwner: null }, { leaseUntil: { $lt: now } }] },
      { $set: { leaseOwner: owner, leaseUntil: until } });
    return result.matchedCount === 1;
  }

  async releaseLease (id: string, owner: string): Promise<void> {
    await this.subscriptions.updateOne({ _id: id, leaseOwner: owner }, { $set: { leaseOwner: null, leaseUntil: 0 } });
  }

  async serviceHeads (): Promise<ServiceHead[]> {
    const docs = await this.services.find({}, { projection: { _id: 1, 'data.name': 1, eventSeq: 1 } }).sort({ _id: 1 }).toArray();
    return docs.map((d) => ({ serviceId: d._id, name: d.data?.name, head: d.eventSeq ?? 0 }));
  }

  async cursors (subscriptionId: string): Promise<WebhookCursor[]> {
    return (await this.cursorDocs.find({ subscriptionId }).toArray()).map(toCursor);
  }

  async resetCursors (subscriptionId: string, cursors: ReadonlyArray<{ serviceId: string, seq: number }>): Promise<void> {
    if (cursors.length === 0) return;
    await this.cursorDocs.bulkWrite(cursors.map((c) => ({
      replaceOne: {
        filter: { _id: cursorId(subscriptionId, c.serviceId) },
        replacement: { subscriptionId, serviceId: c.serviceId, seq: c.seq, attempts: 0 },
        upsert: true,
      },
    })), { ordered: false });
  }

  async advanceCursor (subscriptionId: string, serviceId: string, fromSeq: number, toSeq: number): Promise<boolean> {
    const _id = cursorId(subscriptionId, serviceId);
    const cleared = { firstAttemptAt: '' as const, nextAttemptAt: '' as const, gapSince: '' as const };
    const update = { $set: { seq: toSeq, attempts: 0, subscriptionId, serviceId }, $unset: cleared };
    if (fromSeq === 0) {
      // No cursor yet (a service created after the subscription) or one at 0.
      try {
        const result = await this.cursorDocs.updateOne({ _id, seq: 0 }, update, { upsert: true });
        return result.matchedCount === 1 || result.upsertedCount === 1;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    }
    return (await this.cursorDocs.updateOne({ _id, seq: fromSeq }, update)).matchedCount === 1;
  }

  async recordRetry (subscriptionId: string, serviceId: string, seq: number, retry: RetrySchedule): Promise<void> {
    await this.cursorDocs.updateOne({ _id: cursorId(subscriptionId, serviceId), seq },
      { $set: { ...retry, subscriptionId, serviceId, seq } }, { upsert: seq === 0 });
  }

  async nextLoggedSeq (serviceId: string, seq: number, head: number): Promise<number | null> {
    // By _id only (`<serviceId>:<seq>`, `$in`), a chunk of seqs at a time: the log has no other index per service.
    for (let from = seq + 1; from <= head; from += GAP_PROBE) {
      const ids = Array.from({ length: Math.min(GAP_PROBE, head - from + 1) }, (_, i) => eventId(serviceId, from + i));
      const docs = await this.events.find({ _id: { $in: ids } }, { projection: { seq: 1 } }).toArray();
      if (docs.length > 0) return Math.min(...docs.map((d) => d.seq));
    }
    return null;
  }

  async markGap (subscriptionId: string, serviceId: string, seq: number, since: number | undefined): Promise<void> {
    const update = since === undefined ? { $unset: { gapSince: '' as const } } : { $set: { gapSince: since, subscriptionId, serviceId, seq, attempts: 0 } };
    await this.cursorDocs.updateOne({ _id: cursorId(subscriptionId, serviceId), seq }, update, { upsert: seq === 0 && since !== undefined });
  }

  async recordAttempt (attempt: DeliveryAttempt): Promise<void> {
    await this.deliveryDocs.insertOne({ ...attempt });
  }

  async recordAttempts (attempts: readonly DeliveryAttempt[]): Promise<void> {
    if (attempts.length > 0) await this.deliveryDocs.insertMany(attempts.map((a) => ({ ...a })), { ordered: false });
  }

  async deliveries (subscriptionId: string, limit: number): Promise<DeliveryAttempt[]> {
    return (await this.deliveryDocs.find({ subscriptionId }).sort({ at: -1 }).limit(limit).toArray()).map(toAttempt);
  }

  async sweepDeliveries (before: number): Promise<number> {
    return (await this.deliveryDocs.deleteMany({ at: { $lt: before } })).deletedCount;
  }

  async addDeadLetter (letter: DeadLetter): Promise<void> {
    // Kept once per event: a second process giving up on it too (after a lost lease) rewrites the same letter.
    await this.letters.replaceOne({ _id: letterId(letter.subscriptionId, letter.eventId) }, letter, { upsert: true });
  }

  async deadLetters (subscriptionId: string, limit: number): Promise<DeadLetter[]> {
    return (await this.letters.find({ subscriptionId }).sort({ deadAt: 1 }).limit(limit).toArray()).map(toLetter);
  }

  async queueRedelivery (subscriptionId: string, eventId?: string): Promise<number> {
    const filter = eventId === undefined
      ? { subscriptionId, state: 'dead' as const }
      : { _id: letterId(subscriptionId, eventId), state: { $in: ['dead' as const, 'redelivered' as const] } };
    return (await this.letters.updateMany(filter, { $set: { state: 'queued' } })).modifiedCount;
  }

  async queuedDeadLetters (subscriptionId: string, limit: number): Promise<DeadLetter[]> {
    return (await this.letters.find({ subscriptionId, state: 'queued' }).sort({ deadAt: 1 }).limit(limit).toArray()).map(toLetter);
  }

  async settleDeadLetter (subscriptionId: string, eventId: string, delivered: boolean, at: number, lastError?: string): Promise<void> {
    const set = delivered
      ? { state: 'redelivered' as const, redeliveredAt: at }
      : { state: 'dead' as const, ...(lastError === undefined ? {} : { lastError }) };
    await this.letters.updateOne({ _id: letterId(subscriptionId, eventId), state: 'queued' }, { $set: set, $inc: { attempts: delivered ? 0 : 1 } });
  }
}
