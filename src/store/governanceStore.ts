import type { Collection } from 'mongodb';
import type { GovernanceRepository, StoredGovernance } from '../domain/ports/index.js';
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
