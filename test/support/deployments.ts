import type { Db } from 'mongodb';
import type { ReportedDeployment } from '../../src/contracts/reports.js';
import type { Caller } from './fixtures.js';

/**
 * "The stored deployments" of a service, read in ONE place.
 *
 * Tests assert what the product promises about persisted deployments (a cluster never replaces
 * another cluster's, a refused report changes nothing, two reports in flight never interleave)
 * through this function only. Today it reads the `deployments` collection, one document per task
 * (`_id: '<serviceId>/<deploymentId>'`, fields serviceId, clusterId, nodeName?, deployment,
 * reportedAt, reportedBy). When the storage changes (e.g. per-reporter records, read back through
 * `GET /v1/services/:serviceId/deployments`), only this file is adapted: the source already carries
 * what an API read needs (a caller and a token) beside the database handle.
 */

export interface StoredDeployment {
  /** The cluster whose report stated this deployment. */
  clusterId: string;
  /** The node the deployment runs on ('' when the report did not name one). */
  nodeName: string;
  /** The deployment's (task's) own id, unique within its cluster, not across clusters. */
  deploymentId: string;
  /** The authenticated reporter (`<clusterId>/<token subject>`), where the storage keeps it. */
  reportedBy?: string;
  /** The deployment as the report stated it. */
  deployment: ReportedDeployment;
}

export interface DeploymentSource {
  /** The test's own driver handle on the database the server under test uses. */
  db(): Promise<Db>;
  /** How to reach the server (for a future API read). */
  caller?: Caller;
  /** A token that may read services (for a future API read). */
  token?: string;
}

interface DeploymentDocument {
  _id: string;
  serviceId: string;
  clusterId: string;
  nodeName?: string;
  deployment: ReportedDeployment;
  reportedAt: number;
  reportedBy?: string;
}

const order = (a: StoredDeployment, b: StoredDeployment): number =>
  a.clusterId.localeCompare(b.clusterId) || a.nodeName.localeCompare(b.nodeName) || a.deploymentId.localeCompare(b.deploymentId);

/**
 * `storedDeployments(serviceId)`: the service's stored deployments, normalised (no storage ids, no
 * server receipt times) and sorted by cluster, node and deployment id, so two reads compare with
 * `toEqual` and a JSON.stringify of the list is a byte-for-byte fingerprint.
 */
export function storedDeploymentsOf (source: DeploymentSource): (serviceId: string) => Promise<StoredDeployment[]> {
  return async (serviceId) => {
    const db = await source.db();
    const documents = await db.collection<DeploymentDocument>('deployments').find({ serviceId }).toArray();
    return documents.map((doc): StoredDeployment => ({
      clusterId: doc.clusterId,
      nodeName: doc.nodeName ?? doc.deployment.nodeName ?? '',
      deploymentId: doc.deployment.id,
      ...(doc.reportedBy === undefined ? {} : { reportedBy: doc.reportedBy }),
      deployment: doc.deployment,
    })).sort(order);
  };
}

/**
 * What `storedDeployments` must return after `clusterId`'s report of `deployments` was accepted
 * (and nothing else was stored for those nodes): the expectation side of the same normal form.
 * `reportedBy` is left out; compare with `withoutReporter` when the reporter is not the point.
 */
export function expectedDeployments (clusterId: string, deployments: ReadonlyArray<Record<string, unknown>>): StoredDeployment[] {
  return deployments.map((d): StoredDeployment => ({
    clusterId,
    nodeName: typeof d['nodeName'] === 'string' ? d['nodeName'] : '',
    deploymentId: String(d['id']),
    deployment: d as unknown as ReportedDeployment,
  })).sort(order);
}

/** The list without `reportedBy` (for comparisons with `expectedDeployments`). */
export const withoutReporter = (list: StoredDeployment[]): StoredDeployment[] =>
  list.map(({ reportedBy: _reportedBy, ...rest }) => rest);
