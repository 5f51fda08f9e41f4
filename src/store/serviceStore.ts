import { type Collection } from 'mongodb';
import type { IImageRolloutStatus, IService, IServiceData, TServiceWritableData } from '../contracts/index.js';
import type {
  ApplyRolloutResult, InsertServiceResult, ReplaceServiceResult, ServiceRepository, ServiceRolloutState, ServiceWithHold, StatusSnapshot, StatusWrite,
} from '../domain/ports.js';
import type { AutomationHold, RolloutRecord } from '../domain/rollouts.js';
import { pick } from '../domain/objects.js';
import { replicaCountKeys, STATUS_EVENTS_KEPT, statusEventOf, type RolloutEvidence, type StatusEvent } from '../domain/rolloutStatus.js';
import { writableServiceDataFields, type ServiceSummary } from '../domain/services.js';
import { isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

export interface ServiceDocument {
  _id: string;
  data: IServiceData;
  /** Set by a manual rollback; automatic promotion stays off until an explicit promotion clears it. */
  automationHold?: AutomationHold;
  /** +1 on every change of data.imageRolloutStatus: the compare-and-swap token of status updates. */
  statusRevision?: number;
  /** The last status changes, oldest first (what the SSE stream replays). */
  statusEvents?: StatusEvent[];
  /** Per-replica detail of each reporter's latest accepted report for the current rollout. */
  rolloutEvidence?: RolloutEvidence;
  createdAt: number;
  updatedAt: number;
}

/** The compare-and-swap filter on a service's rollout generation (0 = no plan yet). */
const atGeneration = (id: string, generation: number): Record<string, unknown> =>
  generation === 0
    ? { _id: id, 'data.imageDeployment': { $exists: false } }
    : { _id: id, 'data.imageDeployment.rolloutGeneration': generation };

/** Compare-and-swap on the status revision (absent until the first change). */
const atStatusRevision = (revision: number): Record<string, unknown> =>
  revision === 0 ? { statusRevision: { $exists: false } } : { statusRevision: revision };

/** Appends the status event of `revision` to the bounded change log. */
const pushStatusEvent = (status: IImageRolloutStatus, revision: number, now: number) =>
  ({ $push: { statusEvents: { $each: [statusEventOf(status, revision, now)], $slice: -STATUS_EVENTS_KEPT } } });

/**
 * Reads fetch only the fields their caller uses: the status history (`statusEvents`, up to
 * STATUS_EVENTS_KEPT entries, only the SSE stream reads it) and the per-replica evidence can be
 * larger than the rest of the document, and every report, promotion and listing reads a service.
 */
const serviceOnly = { data: 1 } as const;
const serviceWithHold = { data: 1, automationHold: 1 } as const;
const withoutHistory = { statusEvents: 0 } as const;

const toService = (doc: ServiceDocument): IService => ({ id: doc._id, data: doc.data });

/** The service that holds the name (a lost id can be found again from the `service-already-exists` answer). */
async function nameTaken (collection: Collection<ServiceDocument>, name: string): Promise<{ kind: 'name-taken', serviceId?: string }> {
  const holder = await collection.findOne({ 'data.name': name }, { projection: { _id: 1 } });
  return { kind: 'name-taken', serviceId: holder?._id };
}

/** What a service listing shows of each service: never the reporters list or the environment. */
const summaryProjection = {
  'data.name': 1,
  'data.imageDeployment.rolloutId': 1,
  'data.imageDeployment.rolloutGeneration': 1,
  'data.imageDeployment.mode': 1,
  'data.imageDeployment.releaseId': 1,
  'data.imageDeployment.requestedDigest': 1,
  'data.imageRolloutStatus.rolloutId': 1,
  'data.imageRolloutStatus.status': 1,
  'data.imageRolloutStatus.requiredReplicaCount': 1,
  'data.imageRolloutStatus.observedReplicaCount': 1,
  'data.imageRolloutStatus.healthyReplicaCount': 1,
  'data.imageRolloutStatus.verifiedReplicaCount': 1,
  'data.imageRolloutStatus.failedReplicaCount': 1,
  'data.imageRolloutStatus.mismatchReason': 1,
  'data.imageRolloutStatus.updatedAt': 1,
  automationHold: 1,
} as const;

const toSummary = (doc: ServiceDocument): ServiceSummary => {
  const plan = doc.data.imageDeployment;
  const status = doc.data.imageRolloutStatus;
  return {
    id: doc._id,
    name: doc.data.name,
    rollout: plan ? { ...rolloutSummaryOf(plan), ...(status?.rolloutId === plan.rolloutId ? statusSummaryOf(status) : {}) } : undefined,
    automationHold: doc.automationHold,
  };
};

const rolloutSummaryOf = (plan: NonNullable<IServiceData['imageDeployment']>) =>
  pick(plan, ['rolloutId', 'rolloutGeneration', 'mode', 'releaseId', 'requestedDigest']);

const statusSummaryOf = (status: IImageRolloutStatus) => pick(status, ['status', ...replicaCountKeys, 'updatedAt']);

export class ServiceStore implements ServiceRepository {
  constructor (database: Database, readonly collection: Collection<ServiceDocument> = database.db.collection(collections.services)) {}

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
    const doc = await this.collection.findOne({ _id: id }, { projection: serviceOnly });
    return doc ? toService(doc) : null;
  }

  /** Services sorted by name (the unique name index), after `afterName`; `name`: only that one. */
  async list (query: { name?: string, afterName?: string, limit: number }): Promise<ServiceSummary[]> {
    const filter = query.name !== undefined
      ? { 'data.name': query.name }
      : query.afterName !== undefined ? { 'data.name': { $gt: query.afterName } } : {};
    const docs = await this.collection.find(filter, { projection: summaryProjection }).sort({ 'data.name': 1 }).limit(query.limit).toArray();
    return docs.map(toSummary);
  }

  async exists (id: string): Promise<boolean> {
    return (await this.collection.findOne({ _id: id }, { projection: { _id: 1 } })) !== null;
  }

  async findWithHold (id: string): Promise<ServiceWithHold | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: serviceWithHold });
    return doc ? { service: toService(doc), automationHold: doc.automationHold } : null;
  }

  async findRolloutState (id: string): Promise<ServiceRolloutState | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: withoutHistory });
    if (!doc) return null;
    return { service: toService(doc), statusRevision: doc.statusRevision ?? 0, rolloutEvidence: doc.rolloutEvidence, automationHold: doc.automationHold };
  }

  /**
   * Stores a new rollout status if nobody changed it since `revision` and the
   * rollout is still current (single-document compare-and-swap). False: retry.
   */
  async compareAndSetStatus ({ serviceId: id, rolloutId, revision, status, evidence, event, now }: StatusWrite): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: id, 'data.imageDeployment.rolloutId': rolloutId, ...atStatusRevision(revision) },
      {
        $set: { 'data.imageRolloutStatus': status, rolloutEvidence: evidence, statusRevision: revision + 1, updatedAt: now },
        ...(event ? pushStatusEvent(status, revision + 1, now) : {}),
      }
    );
    return result.matchedCount === 1;
  }

  /** The status events after `revision`, oldest first (SSE). */
  async statusEventsAfter (id: string, revision: number): Promise<StatusSnapshot | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { statusRevision: 1, statusEvents: 1 } });
    if (!doc) return null;
    return { revision: doc.statusRevision ?? 0, events: (doc.statusEvents ?? []).filter((e) => e.revision > revision) };
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
      rolloutEvidence: { rolloutId: record.rolloutId, reporters: [] } satisfies RolloutEvidence,
      updatedAt: now,
    };
    if (record.hold === 'set') set['automationHold'] = { since: record.createdAt, rolloutId: record.rolloutId, by: record.issuedBy.subject };
    const status = after.imageRolloutStatus;
    // Compare-and-swap on the generation (the plan) and on the status revision (so that the
    // status event gets the next revision number even while reports of the old rollout land).
    for (let attempt = 0; attempt < 50; attempt++) {
      const projection = { statusRevision: 1, 'data.imageDeployment.rolloutGeneration': 1 };
      const current = await this.collection.findOne({ _id: record.serviceId }, { projection });
      if (!current) return 'service-missing';
      if ((current.data?.imageDeployment?.rolloutGeneration ?? 0) >= record.generation) return 'already-applied';
      const revision = current.statusRevision ?? 0;
      const result = await this.collection.updateOne(
        { ...atGeneration(record.serviceId, record.generation - 1), ...atStatusRevision(revision) },
        {
          $set: { ...set, statusRevision: revision + 1 },
          ...(status ? pushStatusEvent(status, revision + 1, now) : {}),
          ...(record.hold === 'cleared' ? { $unset: { automationHold: '' } } : {}),
        }
      );
      if (result.matchedCount === 1) return 'applied';
    }
    throw new Error(`could not apply rollout ${record.rolloutId}: the status kept changing`);
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
      return doc ? { kind: 'replaced', service: toService(doc) } : { kind: 'missing' };
    } catch (err) {
      if (isDuplicateKeyError(err)) return nameTaken(this.collection, data.name);
      throw err;
    }
  }
}
