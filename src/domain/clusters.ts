import type {
  ICluster, IImmutableImageTargetScope, IServicePlacement, TClusterWritableData,
} from '../contracts/index.js';
import { AppError, validationFailed, type Problem } from '../errors.js';

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
}

/** What a node claim did: the nodes it created, and those whose `_id` another document holds. */
export interface NodeClaimResult {
  inserted: string[];
  refused: string[];
}

/**
 * What cluster registration needs from persistence (implemented in src/store).
 * Nodes live in their own collection with `_id: nodeName`, so the unique `_id`
 * keeps a node name in at most one cluster across any number of processes.
 */
export interface ClusterRepository {
  /** The cluster with its node names (sorted), or null when it is not registered. */
  findById(clusterId: string): Promise<ClusterRecord | null>;
  /** The registered clusters among `clusterIds`, each with its node names (sorted). */
  findClustersWithNodes(clusterIds: readonly string[]): Promise<ClusterNodes[]>;
  /** Clusters sorted by id, starting after `after`. */
  list(opts: { limit: number, after?: string }): Promise<ClusterRecord[]>;
  /** nodeName → its claim, for the given names that are claimed. */
  findNodeOwners(nodeNames: readonly string[]): Promise<Map<string, NodeClaim>>;
  /** Deletes this exact claim (same cluster and creation time), if it is still there. */
  releaseAbandonedClaim(nodeName: string, claim: NodeClaim): Promise<void>;
  /**
   * Claims every node for the cluster (one atomic upsert per node, keyed by `_id`
   * and `clusterId`), raising each claim's revision to at least `revision`. A node
   * whose `_id` is held by a document of another cluster is `refused` (duplicate key).
   */
  claimNodes(clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult>;
  /** Deletes these claims of the cluster (undoing a refused registration's inserts). */
  releaseNodes(clusterId: string, nodeNames: readonly string[]): Promise<void>;
  /**
   * Writes the cluster document at `revision` if it is still at `expectedRevision`
   * (null: if it does not exist yet). Resolves to its timestamps, or null when a
   * concurrent registration got there first.
   */
  commit(
    cluster: { id: string, name?: string, nodeNames: readonly string[], revision: number, now: number },
    expectedRevision: number | null
  ): Promise<{ createdAt: number, updatedAt: number } | null>;
  /** Deletes the cluster's claims outside `keep` whose revision is at most `revision`. */
  removeStaleNodes(clusterId: string, keep: readonly string[], revision: number): Promise<void>;
  /** How many of these nodes the cluster holds. */
  countNodes(clusterId: string, nodeNames: readonly string[]): Promise<number>;
}

export interface ClusterDeps {
  clusters: ClusterRepository;
  now: () => number;
}

/** Rounds of read → claim → compare-and-swap one registration may take; each round has a winner. */
const MAX_REGISTRATION_ROUNDS = 32;
/**
 * A claim its cluster's committed registration does not name, and older than this, was left by a
 * registration that crashed (or gave up) between claiming and committing: it is released, so a
 * crash blocks a node name for at most this long. A live registration commits within milliseconds.
 */
export const ABANDONED_CLAIM_AFTER_MS = 60_000;
/** At most this many taken nodes are listed in a `node-name-taken` answer. */
const MAX_REPORTED = 20;

/** Code-unit order: deterministic and the same as MongoDB's binary order for ASCII strings (names, keys, ids). */
export const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const sameNames = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((name, i) => name === b[i]);

function nodeNameTaken (clusterId: string, taken: Array<{ nodeName: string, ownerClusterId: string }>): AppError {
  const [first] = taken;
  if (!first) throw new Error('nodeNameTaken needs at least one node');
  const more = taken.length > 1 ? ` (+${taken.length - 1} more)` : '';
  return new AppError('node-name-taken', `node '${first.nodeName}' is registered to cluster '${first.ownerClusterId}'${more}`, {
    details: { clusterId, nodeName: first.nodeName, ownerClusterId: first.ownerClusterId, takenNodes: taken.slice(0, MAX_REPORTED) },
  });
}

interface ForeignClaim { nodeName: string, ownerClusterId: string, claim: NodeClaim }

const foreignOwners = (clusterId: string, nodeNames: readonly string[], owners: Map<string, NodeClaim>): ForeignClaim[] =>
  nodeNames.flatMap((nodeName) => {
    const claim = owners.get(nodeName);
    return claim !== undefined && claim.clusterId !== clusterId ? [{ nodeName, ownerClusterId: claim.clusterId, claim }] : [];
  });

/**
 * A duplicate in `nodeNames` is refused naming both positions and the name
 * (the schema's `uniqueItems` would only say "not unique"). Runs before schema
 * validation; input that is not an object with a string array is left to it.
 */
export function rejectDuplicateNodeNames (data: unknown, fieldPath: string): void {
  if (data === null || typeof data !== 'object') return;
  const nodeNames = (data as Record<string, unknown>)['nodeNames'];
  if (!Array.isArray(nodeNames)) return;
  const firstIndex = new Map<unknown, number>();
  const problems: Problem[] = [];
  nodeNames.forEach((name, index) => {
    const seen = firstIndex.get(name);
    if (seen === undefined) firstIndex.set(name, index);
    else if (typeof name === 'string' && problems.length < MAX_REPORTED) {
      problems.push({ field: `${fieldPath}/nodeNames/${index}`, message: `duplicate node name '${name.slice(0, 253)}' (also at ${fieldPath}/nodeNames/${seen})` });
    }
  });
  if (problems.length > 0) throw validationFailed(problems);
}

const toCluster = (record: ClusterRecord): ICluster => ({
  id: record.id,
  ...(record.name === undefined ? {} : { name: record.name }),
  nodeNames: record.nodeNames,
  createdAt: record.createdAt,
  updatedAt: record.updatedAt,
});

export function clusterOperations (deps: ClusterDeps) {
  const repo = deps.clusters;

  /**
   * Foreign claims that block a registration: releases the abandoned ones (see
   * ABANDONED_CLAIM_AFTER_MS) and throws `node-name-taken` for the rest. Resolves when every
   * blocking claim was abandoned, and the registration should try again.
   */
  async function settleForeignClaims (clusterId: string, taken: ForeignClaim[]): Promise<void> {
    const owners = await repo.findClustersWithNodes([...new Set(taken.map((t) => t.ownerClusterId))]);
    const committed = new Map(owners.map((owner) => [owner.id, new Set(owner.nodeNames)]));
    const cutoff = deps.now() - ABANDONED_CLAIM_AFTER_MS;
    const abandoned = (t: ForeignClaim): boolean => t.claim.createdAt <= cutoff && !(committed.get(t.ownerClusterId)?.has(t.nodeName) ?? false);
    const held = taken.filter((t) => !abandoned(t));
    if (held.length > 0) throw nodeNameTaken(clusterId, held.map(({ nodeName, ownerClusterId }) => ({ nodeName, ownerClusterId })));
    await Promise.all(taken.map((t) => repo.releaseAbandonedClaim(t.nodeName, t.claim)));
  }

  return {
    /**
     * PUT semantics: afterwards the cluster has exactly `name` and `nodeNames`.
     * A node held by another cluster refuses the whole request (`node-name-taken`)
     * before anything is written; the unique `_id` of the claims is the final guard
     * against a concurrent claim, whose loser undoes the claims it inserted.
     * Repeating a request that is already in effect writes nothing.
     *
     * Concurrent registrations of one cluster are ordered by the cluster document's
     * revision (compare-and-swap): each claim carries the revision of the round that
     * made it, and the winner of a revision removes the cluster's other claims of
     * that revision or older, so the last committed node set is what remains.
     */
    async registerCluster (clusterId: string, data: TClusterWritableData): Promise<ICluster> {
      const nodeNames = [...new Set(data.nodeNames)].sort(compareNames);
      for (let round = 0; round < MAX_REGISTRATION_ROUNDS; round++) {
        const [current, owners] = await Promise.all([repo.findById(clusterId), repo.findNodeOwners(nodeNames)]);
        const taken = foreignOwners(clusterId, nodeNames, owners);
        if (taken.length > 0) {
          await settleForeignClaims(clusterId, taken);
          continue;
        }
        if (current && current.name === data.name && sameNames(current.nodeNames, nodeNames)) return toCluster(current);

        const revision = (current?.revision ?? 0) + 1;
        const now = deps.now();
        const claim = await repo.claimNodes(clusterId, nodeNames, revision, now);
        if (claim.refused.length > 0) {
          const refusedOwners = await repo.findNodeOwners(claim.refused);
          const lost = foreignOwners(clusterId, claim.refused, refusedOwners);
          if (lost.length > 0) {
            await repo.releaseNodes(clusterId, claim.inserted);
            await settleForeignClaims(clusterId, lost);
            continue;
          }
          // Refused by a concurrent claim of this same cluster (already ours), or by a
          // claim released since (free again): claim again.
          if (claim.refused.some((nodeName) => !refusedOwners.has(nodeName))) continue;
        }
        const committed = await repo.commit({ id: clusterId, ...(data.name === undefined ? {} : { name: data.name }), nodeNames, revision, now }, current?.revision ?? null);
        if (!committed) continue;
        await repo.removeStaleNodes(clusterId, nodeNames, revision);
        // A concurrent registration of this cluster that was refused releases the
        // claims it inserted, which may be ones this registration counted on.
        if (await repo.countNodes(clusterId, nodeNames) !== nodeNames.length) continue;
        return {
          id: clusterId,
          ...(data.name === undefined ? {} : { name: data.name }),
          nodeNames,
          createdAt: committed.createdAt,
          updatedAt: committed.updatedAt,
        };
      }
      throw new Error(`registration of cluster '${clusterId}' did not settle in ${MAX_REGISTRATION_ROUNDS} rounds of concurrent registrations`);
    },

    async getCluster (clusterId: string): Promise<ICluster> {
      const record = await repo.findById(clusterId);
      if (!record) throw new AppError('cluster-not-found', `cluster '${clusterId}' is not registered`, { details: { clusterId } });
      return toCluster(record);
    },

    async listClusters (opts: { limit: number, after?: string }): Promise<ICluster[]> {
      return (await repo.list(opts)).map(toCluster);
    },
  };
}

/**
 * The rollout target scope of a service: its placement's clusters (in placement
 * order) that are registered and have nodes, all their node names (deduplicated,
 * sorted), and `requiredReplicaCount = nodes × replicasPerNode`.
 *
 * Never throws: without a placement, or when no placed cluster is registered with
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
