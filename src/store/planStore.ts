import { type Collection } from 'mongodb';
import type { ApplyRolloutResult, ServicePlans, ServiceWithHold } from '../domain/ports/index.js';
import { rolloutApplication } from '../domain/rolloutApplication.js';
import type { RolloutRecord } from '../domain/rollouts.js';
import type { Database } from './mongo.js';
import {
  LIFECYCLE, applicationUpdate, atGeneration, atStatusRevision, keepOneVerifiedPerDigest, replacementHead, serviceWithHold, type ServiceDocument,
} from './serviceDocument.js';
import { collections } from './indexPlan.js';

/** What issuing a rollout reads of its service and the compare-and-swap that writes its plan (src/domain/rolloutApplication.ts says what). */
export class ServicePlanStore implements ServicePlans {
  readonly collection: Collection<ServiceDocument>;

  constructor (database: Database) {
    this.collection = database.db.collection(collections.services);
  }

  /** The service for planning a rollout: its data (without the status, which a new plan resets) and its hold. */
  async findWithHold (id: string): Promise<ServiceWithHold | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: serviceWithHold });
    if (!doc) return null;
    const { imageRolloutStatus: _status, ...data } = doc.data;
    return { service: { id: doc._id, data }, automationHold: doc.automationHold, verifiedReleases: doc.verifiedReleases ?? [] };
  }

  /**
   * Writes a rollout's plan onto the service (src/domain/rolloutApplication.ts says what it changes),
   * only if the service is still at the generation the plan was made from, at the status revision and
   * at the status summary state read here (single-document compare-and-swap): the replacement then
   * decides the replaced rollout's undecided milestones from exactly its last state. Touches only
   * server-managed fields, so a concurrent updateService survives.
   */
  async applyRollout (record: RolloutRecord, now: number): Promise<ApplyRolloutResult> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const doc = await this.collection.findOne({ _id: record.serviceId }, { projection: replacementHead });
      if (!doc) return { kind: 'service-missing' };
      const generation = doc.data?.imageDeployment?.rolloutGeneration ?? 0;
      if (generation >= record.generation) return { kind: 'already-applied', ended: doc.endedRollout };
      const summary = doc.rolloutStatus;
      const plan = doc.data?.imageDeployment;
      const head = { generation, plan, summary: summary?.rolloutId === plan?.rolloutId ? summary : undefined, statusRevision: doc.statusRevision ?? 0 };
      const application = rolloutApplication(record, head, now);
      const result = await this.collection.updateOne(
        {
          ...atGeneration(record.serviceId, record.generation - 1),
          ...atStatusRevision(head.statusRevision),
          // The summary state read: no report and no milestone written since (every milestone write moves `changes`).
          'rolloutStatus.seq': summary?.seq ?? null,
          [`${LIFECYCLE}.changes`]: summary?.lifecycle?.changes ?? null,
        },
        applicationUpdate(application, now)
      );
      if (result.matchedCount === 1) {
        if (application.verified) await keepOneVerifiedPerDigest(this.collection, record.serviceId, application.verified);
        return { kind: 'applied', application };
      }
    }
    throw new Error(`could not apply rollout ${record.rolloutId}: the status kept changing`);
  }
}
