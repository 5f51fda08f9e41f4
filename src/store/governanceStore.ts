import type { Collection } from 'mongodb';
import type { BreakGlassGrant } from '../domain/governance/breakGlass.js';
import type { BreakGlassGrants, GovernanceRepository, StoredGovernance } from '../domain/ports/index.js';
import { collections } from './indexPlan.js';
import type { Database } from './mongo.js';

interface GovernanceDocument extends StoredGovernance {
  _id: 'global';
}

/** The global governance policy: one document, read by every promotion (by `_id`), written by an admin. */
export class GovernanceStore implements GovernanceRepository {
  constructor (database: Database, readonly collection: Collection<GovernanceDocument> = database.db.collection(collections.governance)) {}

  async readGlobal (): Promise<StoredGovernance | null> {
    const doc = await this.collection.findOne({ _id: 'global' });
    if (!doc) return null;
    const { _id, ...stored } = doc;
    return stored;
  }

  async writeGlobal (stored: StoredGovernance): Promise<void> {
    await this.collection.replaceOne({ _id: 'global' }, stored, { upsert: true });
  }
}

interface GrantDocument extends Omit<BreakGlassGrant, 'grantId'> {
  _id: string;
  /** The rollout reference (Idempotency-Key record) that used it up. */
  usedRef?: string;
}

/** Break-glass grants, by `_id`: approving and using one are single-document compare-and-swaps. */
export class BreakGlassStore implements BreakGlassGrants {
  constructor (database: Database, readonly collection: Collection<GrantDocument> = database.db.collection(collections.breakGlassGrants)) {}

  async create ({ grantId, ...grant }: BreakGlassGrant): Promise<void> {
    await this.collection.insertOne({ _id: grantId, ...grant });
  }

  async find (serviceId: string, grantId: string): Promise<BreakGlassGrant | null> {
    const doc = await this.collection.findOne({ _id: grantId });
    if (!doc || doc.serviceId !== serviceId) return null;
    const { _id, usedRef: _ref, ...grant } = doc;
    return { grantId: _id, ...grant };
  }

  async approve (grantId: string, approval: NonNullable<BreakGlassGrant['approval']>): Promise<boolean> {
    const result = await this.collection.updateOne({ _id: grantId, approval: { $exists: false } }, { $set: { approval } });
    return result.modifiedCount === 1;
  }

  async use (grantId: string, used: NonNullable<BreakGlassGrant['used']>, ref: string): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: grantId, $or: [{ used: { $exists: false } }, { usedRef: ref }] },
      { $set: { used, usedRef: ref } },
    );
    return result.matchedCount === 1;
  }

  async release (grantId: string, ref: string): Promise<void> {
    await this.collection.updateOne({ _id: grantId, usedRef: ref }, { $unset: { used: '', usedRef: '' } });
  }
}
