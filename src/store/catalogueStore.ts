import { type Collection } from 'mongodb';
import type { IService, ServiceSummary, TServiceWritableData } from '../contracts/index.js';
import type { DeploymentScope, InsertServiceResult, ReplaceServiceResult, ServiceCatalogue, ServiceWithHold } from '../domain/ports/index.js';
import { writableServiceDataFields } from '../domain/services.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import {
  ServiceViews, nameTaken, serviceWithStatus, summaryProjection, toSummary, type ServiceDocument,
} from './serviceDocument.js';
import { collections } from './indexPlan.js';

/** The service catalogue: create, read, list and change services as the API shows them (src/domain/ports/services.ts). */
export class ServiceCatalogueStore implements ServiceCatalogue {
  readonly collection: Collection<ServiceDocument>;
  private readonly views: ServiceViews;

  constructor (database: Database) {
    this.collection = database.db.collection(collections.services);
    this.views = new ServiceViews(database);
  }

  async insert (service: IService, now: number): Promise<InsertServiceResult> {
    try {
      await this.collection.insertOne({ _id: service.id, data: service.data, createdAt: now, updatedAt: now });
      return { kind: 'inserted' };
    } catch (err) {
      if (isDuplicateKeyError(err)) return nameTaken(this.collection, service.data.name);
      throw err;
    }
  }

  async findById (id: string): Promise<IService | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: serviceWithStatus });
    return doc ? await this.views.toService(doc) : null;
  }

  /** Services sorted by name (the unique name index), after `afterName`; `name`: only that one. */
  async list (query: { name?: string, afterName?: string, limit: number }): Promise<ServiceSummary[]> {
    // A name filter and a cursor together: the one service of that name, if it comes after the cursor.
    const filter = query.name !== undefined
      ? (query.afterName !== undefined && query.name <= query.afterName ? { _id: { $in: [] as string[] } } : { 'data.name': query.name })
      : query.afterName !== undefined ? { 'data.name': { $gt: query.afterName } } : {};
    const docs = await this.collection.find(filter, { projection: summaryProjection }).sort({ 'data.name': 1 }).limit(query.limit).toArray();
    return docs.map(toSummary);
  }

  async withPipelinePromotion (limit: number, after?: string) {
    // Equality on the flag (services_pipeline_promotion), then by _id within it.
    const filter = { 'data.promotionPolicy.pipeline.automaticPromotion.enabled': true, ...(after === undefined ? {} : { _id: { $gt: after } }) };
    const projection = { 'data.registryTarget': 1, 'data.promotionPolicy': 1 } as const;
    const docs = await this.collection.find(filter, { projection }).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map((doc) => ({ id: doc._id, data: { registryTarget: doc.data.registryTarget, promotionPolicy: doc.data.promotionPolicy } }));
  }

  async exists (id: string): Promise<boolean> {
    return (await this.collection.findOne({ _id: id }, { projection: { _id: 1 } })) !== null;
  }

  async findServiceView (id: string): Promise<ServiceWithHold | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { ...serviceWithStatus, automationHold: 1, verifiedReleases: 1 } });
    return doc ? { service: await this.views.toService(doc), automationHold: doc.automationHold, verifiedReleases: doc.verifiedReleases ?? [] } : null;
  }

  async findDeploymentScope (id: string): Promise<DeploymentScope | null> {
    const doc = await this.collection.findOne({ _id: id }, {
      projection: {
        'data.immutableImageRequired': 1,
        'data.imageDeployment.rolloutId': 1,
        'rolloutStatus.rolloutId': 1,
        'rolloutStatus.buckets': 1,
      },
    });
    if (!doc) return null;
    const immutableImageRequired = doc.data?.immutableImageRequired === true;
    const rolloutId = doc.data?.imageDeployment?.rolloutId;
    if (rolloutId === undefined) return { immutableImageRequired, reporterIds: [] };
    const summary = doc.rolloutStatus;
    const reporterIds = summary?.rolloutId === rolloutId ? await this.views.reportersOf(rolloutId, summary) : [];
    return { immutableImageRequired, rolloutId, reporterIds };
  }

  async replaceWritableData (id: string, data: TServiceWritableData, now: number): Promise<ReplaceServiceResult> {
    const set: Record<string, unknown> = { updatedAt: now };
    const unset: Record<string, ''> = {};
    const given = data as Record<string, unknown>;
    for (const field of writableServiceDataFields) {
      if (given[field] === undefined) unset[`data.${field}`] = '';
      else set[`data.${field}`] = given[field];
    }
    try {
      const doc = await this.collection.findOneAndUpdate(
        { _id: id },
        Object.keys(unset).length > 0 ? { $set: set, $unset: unset } : { $set: set },
        { returnDocument: 'after' }
      );
      return doc ? { kind: 'replaced', service: await this.views.toService(doc) } : { kind: 'missing' };
    } catch (err) {
      if (isDuplicateKeyError(err)) return nameTaken(this.collection, data.name);
      throw err;
    }
  }
}
