import { type Collection } from 'mongodb';
import type { ClaimInput, ClaimResult, IdempotencyRepository, StoredOutcome } from '../domain/ports/index.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

export interface IdempotencyDocument {
  _id: string;
  serviceId: string;
  key: string;
  operation: string;
  fingerprint: string;
  state: 'in-progress' | 'completed';
  /** Who works on it now, and until when; a crashed owner's lease runs out and another takes over. */
  leaseOwner: string;
  leaseUntil: number;
  createdAt: number;
  /** Kept at least 24 h; a TTL index removes it afterwards where the database supports TTL. */
  expiresAt: Date;
  completedAt?: number;
  outcome?: StoredOutcome;
}

/**
 * Idempotency records (IETF Idempotency-Key draft, Stripe's practice). A key
 * is claimed by inserting its record (the unique _id decides between
 * concurrent duplicates); a finished request stores its outcome; an abandoned
 * one is taken over by compare-and-swap on its lease.
 */
/** Fresh claims one call makes (see `claim`). */
const FRESH_CLAIMS = 3;

export class IdempotencyStore implements IdempotencyRepository {
  constructor (database: Database, readonly collection: Collection<IdempotencyDocument> = database.db.collection(collections.idempotency)) {}

  /**
   * A fresh claim inserts the key's record; a key someone holds is looked at. A record that vanished
   * between the two (removed, or a read from a member that has not caught up yet), or an expired one
   * removed, starts a fresh claim — at most FRESH_CLAIMS of them: a database that keeps saying both
   * "taken" and "absent" gets `in-progress` (the client retries), not a request that spins against it.
   */
  async claim (input: ClaimInput): Promise<ClaimResult> {
    for (let attempt = 0; attempt < FRESH_CLAIMS; attempt++) {
      const result = await this.claimOnce(input);
      if (result !== 'again') return result;
    }
    return { kind: 'in-progress', retryAfterMs: 500 };
  }

  private async claimOnce (input: ClaimInput): Promise<ClaimResult | 'again'> {
    const { recordId, owner, now, leaseMs } = input;
    try {
      await this.collection.insertOne({
        _id: recordId,
        serviceId: input.serviceId,
        key: input.key,
        operation: input.operation,
        fingerprint: input.fingerprint,
        state: 'in-progress',
        leaseOwner: owner,
        leaseUntil: now + leaseMs,
        createdAt: now,
        expiresAt: new Date(now + input.retentionMs),
      });
      return { kind: 'claimed', createdAt: now };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    // Someone holds the key. A few rounds settle races between takers-over.
    for (let round = 0; round < 3; round++) {
      const existing = await this.collection.findOne({ _id: recordId });
      if (!existing) return 'again';
      // Expired (48 h) but not swept yet (TTL runs every minute, the local development database has
      // none): a new request. Removed only as it is (its creation time), then claimed afresh.
      if (existing.expiresAt.getTime() <= now) {
        await this.collection.deleteOne({ _id: recordId, createdAt: existing.createdAt });
        return 'again';
      }
      if (existing.fingerprint !== input.fingerprint) return { kind: 'reused', operation: existing.operation };
      if (existing.state === 'completed' && existing.outcome) return { kind: 'replay', outcome: existing.outcome };
      if (existing.leaseUntil > now) return { kind: 'in-progress', retryAfterMs: Math.min(existing.leaseUntil - now, 1000) };
      const taken = await this.collection.updateOne(
        { _id: recordId, state: 'in-progress', leaseOwner: existing.leaseOwner, leaseUntil: existing.leaseUntil },
        { $set: { leaseOwner: owner, leaseUntil: now + leaseMs } }
      );
      if (taken.modifiedCount === 1) return { kind: 'taken-over', createdAt: existing.createdAt };
    }
    return { kind: 'in-progress', retryAfterMs: 500 };
  }

  async find (recordId: string, now: number): Promise<{ state: 'in-progress' | 'completed', createdAt: number } | null> {
    const found = await this.collection.findOne({ _id: recordId }, { projection: { state: 1, createdAt: 1, expiresAt: 1 } });
    return found && found.expiresAt.getTime() > now ? { state: found.state, createdAt: found.createdAt } : null;
  }

  /** Stores the outcome. Idempotent: completing twice with the same outcome is harmless. */
  async complete (recordId: string, outcome: StoredOutcome, now: number): Promise<void> {
    await this.collection.updateOne(
      { _id: recordId, state: 'in-progress' },
      { $set: { state: 'completed', outcome, completedAt: now } }
    );
  }

  /** Gives the key back after a transient failure so that the client's retry need not wait for the lease. */
  async release (recordId: string, owner: string): Promise<void> {
    await this.collection.updateOne({ _id: recordId, state: 'in-progress', leaseOwner: owner }, { $set: { leaseUntil: 0 } });
  }

  /**
   * Removes records past their retention. MongoDB's TTL index (`idempotency_expiry`) does this
   * too; the local development database has no TTL, so every process sweeps now and then.
   */
  async sweepExpired (now: number): Promise<number> {
    const result = await this.collection.deleteMany({ expiresAt: { $lt: new Date(now) } });
    return result.deletedCount;
  }
}
