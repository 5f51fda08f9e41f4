import type { ClusterNodes, ClusterRecord, NodeClaim, NodeClaimResult } from '../clusters.js';

/**
 * Nodes live in their own collection with `_id: nodeName`, so the unique `_id` keeps a node
 * name in at most one cluster across any number of processes.
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
  /** nodeName → its claim, for the given names that are registered: claimed at a revision their cluster committed. */
  findRegisteredNodeOwners(nodeNames: readonly string[]): Promise<Map<string, NodeClaim>>;
  /** Deletes this exact claim (same cluster and creation time), if it is still there. */
  releaseAbandonedClaim(nodeName: string, claim: NodeClaim): Promise<void>;
  /**
   * Claims every node for the cluster (one atomic upsert per node, keyed by `_id` and
   * `clusterId`), raising each claim's revision to at least `revision`. A node whose `_id`
   * is held by a document of another cluster is `refused` (duplicate key).
   */
  claimNodes(clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult>;
  /** Deletes these claims of the cluster (undoing a refused registration's inserts). */
  releaseNodes(clusterId: string, nodeNames: readonly string[]): Promise<void>;
  /**
   * Writes the cluster document at `revision` if it is still at `expectedRevision` (null: if it
   * does not exist yet). Resolves to its timestamps, or null when a concurrent registration got there first.
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
