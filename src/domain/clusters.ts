import type {
  ICluster, IImmutableImageTargetScope, IServicePlacement,
} from '../contracts/index.js';
import { errors, type AppError, type Problem } from '../errors.js';
import { compareNames } from './names.js';

/** A cluster as stored: the API shape plus the revision its registrations compare-and-swap on. */
export type ClusterRecord = ICluster & { revision: number };

/** A registered cluster and its node names: what target scopes are computed from. */
export interface ClusterNodes {
  id: string;
  nodeNames: string[];
}

/** Who holds a node name, since when. */
export interface NodeClaim {
  clusterId: string;
  createdAt: number;
  /** The highest registration revision of the cluster that claimed it (committed once the cluster's revision reached it). */
  revision: number;
}

/** What a node claim did: the nodes it created, and those whose `_id` another document holds. */
export interface NodeClaimResult {
  inserted: string[];
  refused: string[];
}

/** A node name another cluster holds, with its claim. */
export interface ForeignClaim { nodeName: string, ownerClusterId: string, claim: NodeClaim }

/**
 * A claim its cluster's committed registration does not name, and older than this, was left by a
 * registration that crashed (or gave up) between claiming and committing: it is released, so a
 * crash blocks a node name for at most this long. A live registration commits within milliseconds.
 */
export const ABANDONED_CLAIM_AFTER_MS = 60_000;
/** At most this many problems are listed in a refusal. */
const MAX_REPORTED = 20;

export const sameNames = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((name, i) => name === b[i]);

export const foreignOwners = (clusterId: string, nodeNames: readonly string[], owners: Map<string, NodeClaim>): ForeignClaim[] =>
  nodeNames.flatMap((nodeName) => {
    const claim = owners.get(nodeName);
    return claim !== undefined && claim.clusterId !== clusterId ? [{ nodeName, ownerClusterId: claim.clusterId, claim }] : [];
  });

/** A foreign claim is abandoned when old and not in its owner's committed node set. */
export const isAbandoned = (t: ForeignClaim, committed: Map<string, Set<string>>, now: number): boolean =>
  t.claim.createdAt <= now - ABANDONED_CLAIM_AFTER_MS && !(committed.get(t.ownerClusterId)?.has(t.nodeName) ?? false);

/**
 * A duplicate in `nodeNames` is refused naming both positions and the name (the schema's
 * `uniqueItems` would only say "not unique"). Adapters ask this before schema validation;
 * input that is not an object with a string array is left to the schema.
 */
export function duplicateNodeNamesRefusal (data: unknown, fieldPath: string): AppError | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const nodeNames = (data as Record<string, unknown>)['nodeNames'];
  if (!Array.isArray(nodeNames)) return undefined;
  const firstIndex = new Map<unknown, number>();
  const problems: Problem[] = [];
  nodeNames.forEach((name, index) => {
    const seen = firstIndex.get(name);
    if (seen === undefined) firstIndex.set(name, index);
    else if (typeof name === 'string' && problems.length < MAX_REPORTED) {
      const message = `duplicate node name '${name.slice(0, 253)}' (also at ${fieldPath}/nodeNames/${seen})`;
      problems.push({ field: `${fieldPath}/nodeNames/${index}`, message });
    }
  });
  return problems.length > 0 ? errors.validationFailed(problems) : undefined;
}

export const toCluster = (record: ClusterRecord): ICluster => ({
  id: record.id,
  name: record.name,
  nodeNames: record.nodeNames,
  nodeCount: record.nodeCount,
  createdAt: record.createdAt,
  updatedAt: record.updatedAt,
});

/**
 * The rollout target scope of a service: its placement's clusters (in placement
 * order) that are registered and have nodes, all their node names (deduplicated,
 * sorted), and `requiredReplicaCount = nodes × replicasPerNode`.
 *
 * Never refuses: without a placement, or when no placed cluster is registered with
 * nodes, the scope is empty and the upstream plan validator reports it
 * ("immutable rollout target scope must contain clusters and nodes") as
 * `invalid-deployment-plan` — one place for that rule and its message.
 */
export function computeTargetScope (
  placement: IServicePlacement | undefined,
  clusters: ReadonlyArray<{ id: string, nodeNames: readonly string[] }>
): IImmutableImageTargetScope {
  const replicasPerNode = placement?.replicasPerNode ?? 1;
  const byId = new Map(clusters.map((cluster) => [cluster.id, cluster]));
  const targetClusterIds: string[] = [];
  const nodeNames = new Set<string>();
  for (const clusterId of placement?.clusterIds ?? []) {
    const cluster = byId.get(clusterId);
    if (!cluster || cluster.nodeNames.length === 0 || targetClusterIds.includes(clusterId)) continue;
    targetClusterIds.push(clusterId);
    for (const nodeName of cluster.nodeNames) nodeNames.add(nodeName);
  }
  const targetNodeNames = [...nodeNames].sort(compareNames);
  return {
    targetClusterIds,
    targetNodeNames,
    replicasPerNode,
    requiredReplicaCount: targetNodeNames.length * replicasPerNode,
  };
}

/**
 * Why a service's placement gives no target scope — or, for a promotion, not the whole one — said
 * so that the operator knows what to do: no placement at all, placed clusters that are not
 * registered (named), or registered ones without nodes (named). A promotion is refused while any
 * placed cluster is not registered (its `succeeded` would not cover a cluster the placement names);
 * a rollback (an abort, an automatic rollback) goes to the registered ones: an emergency is not held
 * up by a placement to fix. `problems` stay the upstream validator's messages.
 */
export function placementRefusal (
  serviceId: string,
  placement: IServicePlacement | undefined,
  clusters: ReadonlyArray<{ id: string, nodeNames: readonly string[] }>,
  kind: 'promotion' | 'rollback'
): AppError | undefined {
  const upstream = ['immutable rollout target scope must contain clusters and nodes'];
  const registered = new Set(clusters.map((c) => c.id));
  const listed = (ids: readonly string[]): string =>
    ids.slice(0, 10).map((id) => `'${id}'`).join(', ') + (ids.length > 10 ? ` (+${ids.length - 10} more)` : '');
  const unregistered = [...new Set(placement?.clusterIds ?? [])].filter((id) => !registered.has(id));
  const scoped = computeTargetScope(placement, clusters).targetClusterIds.length > 0;
  if (scoped && (kind === 'rollback' || unregistered.length === 0)) return undefined;
  if (!placement) {
    return errors.invalidDeploymentPlan(upstream, {
      kind: 'no-placement',
      detail: `service '${serviceId}' has no placement: set data.placement.clusterIds (PUT /v1/services/${serviceId}) to the clusters to deploy to`,
    });
  }
  if (unregistered.length > 0) {
    const which = unregistered.length === 1 ? 'a cluster that is' : 'clusters that are';
    // With a scope (a promotion that would leave them out) the upstream validator has nothing to say: say it here.
    return errors.invalidDeploymentPlan(scoped ? [`placement names ${which} not registered`] : upstream, {
      kind: 'unregistered-clusters',
      detail: `the placement of service '${serviceId}' names ${which} not registered: ${listed(unregistered)}` +
        ' (register each with PUT /v1/clusters/:clusterId and its node names, or remove it from the placement)',
      clusterIds: unregistered,
    });
  }
  return errors.invalidDeploymentPlan(upstream, {
    kind: 'clusters-without-nodes',
    detail: `the clusters of the placement of service '${serviceId}' have no registered nodes: ${listed(placement.clusterIds)}`,
    clusterIds: placement.clusterIds,
  });
}
