import { MongoServerError, type Collection } from 'mongodb';
import type { IService, IServiceData, TServiceWritableData } from '../contracts/index.js';
import type { ServiceRepository } from '../domain/services.js';
import type { AutomationHold, RolloutRecord } from '../domain/rollouts.js';
import { AppError } from '../errors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

export interface ServiceDocument {
  _id: string;
  data: IServiceData;
  /** Set by a manual rollback; automatic promotion stays off until an explicit promotion clears it. */
  automationHold?: AutomationHold;
  createdAt: number;
  updatedAt: number;
}

/** The compare-and-swap filter on a service's rollout generation (0 = no plan yet). */
const atGeneration = (id: string, generation: number): Record<string, unknown> =>
  generation === 0
    ? { _id: id, 'data.imageDeployment': { $exists: false } }
    : { _id: id, 'data.imageDeployment.rolloutGeneration': generation };

export type ApplyRolloutResult = 'applied' | 'already-applied' | 'service-missing';

const DUPLICATE_KEY = 11000;

const toService = (doc: ServiceDocument): IService => ({ id: doc._id, data: doc.data });

function nameTaken (err: unknown, name: string): AppError | undefined {
  if (err instanceof MongoServerError && err.code === DUPLICATE_KEY) {
    return new AppError('service-already-exists', `a service named '${name}' already exists`, { details: { name } });
  }
  return undefined;
}

export class ServiceStore implements ServiceRepository {
  readonly collection: Collection<ServiceDocument>;

  constructor (database: Database) {
    this.collection = database.db.collection<ServiceDocument>(collections.services);
  }

  async insert (service: IService, now: number): Promise<void> {
    try {
      await this.collection.insertOne({ _id: service.id, data: service.data, createdAt: now, updatedAt: now });
    } catch (err) {
      throw nameTaken(err, service.data.name) ?? err;
    }
  }

  async findById (id: string): Promise<IService | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc ? toService(doc) : null;
  }

  async findWithHold (id: string): Promise<{ service: IService, automationHold?: AutomationHold } | null> {
    const doc = await this.collection.findOne({ _id: id });
    if (!doc) return null;
    return { service: toService(doc), ...(doc.automationHold ? { automationHold: doc.automationHold } : {}) };
  }

  /**
   * Writes a rollout's plan onto the service, only if the service is still at
   * the generation the plan was made from (single-document compare-and-swap).
   * Touches only server-managed fields, so a concurrent updateService survives.
   */
  async applyRollout (record: RolloutRecord, now: number): Promise<ApplyRolloutResult> {
    const after = record.serviceAfter.data;
    const set: Record<string, unknown> = {
      'data.immutableImageRequired': true,
      'data.imageDeployment': after.imageDeployment,
      'data.imageRolloutStatus': after.imageRolloutStatus,
      updatedAt: now,
    };
    let update: Record<string, unknown> = { $set: set };
    if (record.hold === 'set') set['automationHold'] = { since: record.createdAt, rolloutId: record.rolloutId, by: record.issuedBy.subject };
    if (record.hold === 'cleared') update = { $set: set, $unset: { automationHold: '' } };
    const result = await this.collection.updateOne(atGeneration(record.serviceId, record.generation - 1), update);
    if (result.matchedCount === 1) return 'applied';
    const current = await this.collection.findOne({ _id: record.serviceId }, { projection: { 'data.imageDeployment.rolloutGeneration': 1 } });
    if (!current) return 'service-missing';
    // The generation only grows, and only through a rollout record: at or past ours means ours was applied.
    return 'already-applied';
  }

  async replaceWritableData (id: string, data: TServiceWritableData, writableFields: readonly string[], now: number): Promise<IService | null> {
    const set: Record<string, unknown> = { updatedAt: now };
    const unset: Record<string, ''> = {};
    const given = data as Record<string, unknown>;
    for (const field of writableFields) {
      if (given[field] === undefined) unset[`data.${field}`] = '';
      else set[`data.${field}`] = given[field];
    }
    try {
      const doc = await this.collection.findOneAndUpdate(
        { _id: id },
        Object.keys(unset).length > 0 ? { $set: set, $unset: unset } : { $set: set },
        { returnDocument: 'after' }
      );
      return doc ? toService(doc) : null;
    } catch (err) {
      throw nameTaken(err, data.name) ?? err;
    }
  }
}
