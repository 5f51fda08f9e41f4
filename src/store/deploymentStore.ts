import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { ReportedDeployment } from '../contracts/reports.js';
import type { DeploymentRepository, DeploymentSnapshot } from '../domain/ports.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

export interface DeploymentDocument {
  /** `<serviceId>/<deployment id>`: one service's ids never collide with another's. */
  _id: string;
  serviceId: string;
  /** The reporting cluster: a snapshot only ever replaces its own cluster's deployments. */
  clusterId: string;
  nodeName?: string;
  deployment: ReportedDeployment;
  reportedAt: number;
  reportedBy: string;
}

/** Coreflow's deployment snapshots, one document per deployment (task). */
export class DeploymentStore implements DeploymentRepository {
  constructor (database: Database, readonly collection: Collection<DeploymentDocument> = database.db.collection(collections.deployments)) {}

  /**
   * Replaces the reporting cluster's deployments of the service — all of them,
   * or only those on `nodeScope` — with the snapshot. Upserts first, then
   * removes what the snapshot no longer has: a crash in between leaves extra
   * stale entries (healed by the next snapshot) rather than missing ones.
   */
  async replaceSnapshot ({ serviceId, clusterId, deployments, nodeScope, reportedAt, reportedBy }: DeploymentSnapshot): Promise<void> {
    const idOf = (deploymentId: string): string => `${serviceId}/${deploymentId}`;
    if (deployments.length > 0) {
      const ops: AnyBulkWriteOperation<DeploymentDocument>[] = deployments.map((deployment) => ({
        replaceOne: {
          filter: { _id: idOf(deployment.id) },
          replacement: {
            serviceId,
            clusterId,
            nodeName: deployment.nodeName,
            deployment,
            reportedAt,
            reportedBy,
          },
          upsert: true,
        },
      }));
      await this.collection.bulkWrite(ops, { ordered: false });
    }
    const keep = deployments.map((d) => idOf(d.id));
    await this.collection.deleteMany({
      serviceId,
      clusterId,
      ...(nodeScope === undefined ? {} : { nodeName: { $in: nodeScope } }),
      _id: { $nin: keep },
    });
  }
}
