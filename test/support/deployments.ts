import type { Db } from 'mongodb';
import type { ReportedDeployment } from '../../src/contracts/reports.js';
import type { Caller } from './fixtures.js';

/**
 * "The stored deployments" of a service, read in ONE place.
 *
 * Tests assert what the product promises about persisted deployments (a cluster never replaces
 * another cluster's, a refused report changes nothing, two reports in flight never interleave)
 * through this function only, which reads them the way a user does: `GET /v1/services/:serviceId/deployments`
 * (what each reporter's latest accepted report stated, for the current rollout).
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

const order = (a: StoredDeployment, b: StoredDeployment): number =>
  a.clusterId.localeCompare(b.clusterId) || a.nodeName.localeCompare(b.nodeName) || a.deploymentId.localeCompare(b.deploymentId);

interface StoredDeploymentsAnswer {
  deployments: Array<{ clusterId: string, reporterId: string, deployment: ReportedDeployment }>;
}

/**
 * `storedDeployments(serviceId)`: the service's stored deployments as `GET /v1/services/:serviceId/deployments`
 * answers them, normalised (no server receipt times) and sorted by cluster, node and deployment id, so two
 * reads compare with `toEqual` and a JSON.stringify of the list is a byte-for-byte fingerprint.
 */
export function storedDeploymentsOf (source: DeploymentSource): (serviceId: string) => Promise<StoredDeployment[]> {
  return async (serviceId) => {
    if (!source.caller || !source.token) throw new Error('storedDeployments reads through the API: give it a caller and a token');
    const res = await source.caller.inject({
      method: 'GET', url: `/v1/services/${serviceId}/deployments`, headers: { authorization: `Bearer ${source.token}` },
    });
    if (res.statusCode !== 200) throw new Error(`GET /v1/services/${serviceId}/deployments answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    const answer = res.json() as StoredDeploymentsAnswer;
    return answer.deployments.map((d): StoredDeployment => ({
      clusterId: d.clusterId,
      nodeName: d.deployment.nodeName ?? '',
      deploymentId: d.deployment.id,
      reportedBy: d.reporterId,
      deployment: d.deployment,
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

/** JSON with object keys sorted at every level: equal for equal content whatever the key order (an API answer follows its schema's order). */
export const canonical = (value: unknown): string => JSON.stringify(value, (_key, v: unknown) =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v);

/**
 * A service record of the earlier per-reporter kind (`service:<serviceId>:<reporterId>`), as records
 * were written before they were kept per cluster: what the migration tests put in `reports` directly.
 */
export function earlierServiceRecord (serviceId: string, reporterId: string, deployments: ReadonlyArray<Record<string, unknown>>, version = 3) {
  return {
    _id: `service:${serviceId}:${reporterId}` as never,
    serviceId,
    reporterId,
    clusterId: reporterId.split('/')[0]!,
    version,
    position: { reportedAt: 500, receivedAt: 500 },
    retiredSessions: [],
    nodeNames: [],
    replicas: [],
    deploymentsJson: JSON.stringify(deployments),
  };
}
