import { MongoServerError, type Collection } from 'mongodb';
import type { IService, IServiceData, TServiceWritableData } from '../contracts/index.js';
import type { ServiceRepository } from '../domain/services.js';
import { AppError } from '../errors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

export interface ServiceDocument {
  _id: string;
  data: IServiceData;
  createdAt: number;
  updatedAt: number;
}

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
