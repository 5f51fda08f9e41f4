import type { ICluster, TClusterWritableData } from '../contracts/index.js';
import { foreignOwners, isAbandoned, sameNames, toCluster, type ForeignClaim } from '../domain/clusters.js';
import { compareNames } from '../domain/names.js';
import type { Clock, Repositories } from '../domain/ports/index.js';
import { errors, type AppError } from '../errors.js';
import { refusal, success, type Result } from '../domain/result.js';

/** Rounds of read → claim → compare-and-swap one registration may take; each round has a winner. */
const MAX_REGISTRATION_ROUNDS = 32;

export interface ClusterDeps {
  repos: Pick<Repositories, 'clusters'>;
  now: Clock;
}

/**
 * Foreign claims that block a registration: releases the abandoned ones and answers
 * `node-name-taken` for the rest; undefined when every blocking claim was abandoned and the
 * registration should try again.
 */
async function settleForeignClaims ({ repos, now }: ClusterDeps, clusterId: string, taken: ForeignClaim[]): Promise<AppError | undefined> {
  const repo = repos.clusters;
  const owners = await repo.findClustersWithNodes([...new Set(taken.map((t) => t.ownerClusterId))]);
  const committed = new Map(owners.map((owner) => [owner.id, new Set(owner.nodeNames)]));
  const held = taken.filter((t) => !isAbandoned(t, committed, now()));
  if (held.length > 0) return errors.nodeNameTaken(clusterId, held.map(({ nodeName, ownerClusterId }) => ({ nodeName, ownerClusterId })));
  await Promise.all(taken.map((t) => repo.releaseAbandonedClaim(t.nodeName, t.claim)));
  return undefined;
}

/** One round of a registration: the cluster, or a refusal, or undefined to try again. */
async function registrationRound (
  deps: ClusterDeps, clusterId: string, data: TClusterWritableData, nodeNames: string[]
): Promise<ICluster | AppError | undefined> {
  const { repos, now } = deps;
  const repo = repos.clusters;
  const [current, owners] = await Promise.all([repo.findById(clusterId), repo.findNodeOwners(nodeNames)]);
  const taken = foreignOwners(clusterId, nodeNames, owners);
  if (taken.length > 0) return settleForeignClaims(deps, clusterId, taken);
  if (current && current.name === data.name && sameNames(current.nodeNames, nodeNames)) {
    // In effect already — perhaps by this request's first attempt, which a crash stopped before it
    // released the nodes it removed: release them (claims of a registration in flight are newer).
    await repo.removeStaleNodes(clusterId, nodeNames, current.revision);
    return toCluster(current);
  }

  const revision = (current?.revision ?? 0) + 1;
  const claim = await repo.claimNodes(clusterId, nodeNames, revision, now());
  if (claim.refused.length > 0) {
    const refusedOwners = await repo.findNodeOwners(claim.refused);
    const lost = foreignOwners(clusterId, claim.refused, refusedOwners);
    if (lost.length > 0) {
      await repo.releaseNodes(clusterId, claim.inserted);
      return settleForeignClaims(deps, clusterId, lost);
    }
    // Refused by a concurrent claim of this same cluster (already ours), or by a claim released since (free again): claim again.
    if (claim.refused.some((nodeName) => !refusedOwners.has(nodeName))) return undefined;
  }
  const committed = await repo.commit({ id: clusterId, name: data.name, nodeNames, revision, now: now() }, current?.revision ?? null);
  if (!committed) return undefined;
  await repo.removeStaleNodes(clusterId, nodeNames, revision);
  // A concurrent registration of this cluster that was refused releases the claims it inserted,
  // which may be ones this registration counted on.
  if (await repo.countNodes(clusterId, nodeNames) !== nodeNames.length) return undefined;
  return { id: clusterId, name: data.name, nodeNames, nodeCount: nodeNames.length, createdAt: committed.createdAt, updatedAt: committed.updatedAt };
}

/**
 * PUT semantics: afterwards the cluster has exactly `name` and `nodeNames`. A node held by
 * another cluster refuses the whole request (`node-name-taken`) before anything is written;
 * the unique `_id` of the claims is the final guard against a concurrent claim, whose loser
 * undoes the claims it inserted. Repeating a request that is already in effect changes nothing
 * (it releases only the claims of nodes its first attempt removed and a crash left behind).
 *
 * Concurrent registrations of one cluster are ordered by the cluster document's revision
 * (compare-and-swap): each claim carries the revision of the round that made it, and the
 * winner of a revision removes the cluster's other claims of that revision or older, so the
 * last committed node set is what remains.
 */
export async function registerCluster (deps: ClusterDeps, clusterId: string, data: TClusterWritableData): Promise<Result<{ cluster: ICluster }>> {
  const nodeNames = [...new Set(data.nodeNames)].sort(compareNames);
  for (let round = 0; round < MAX_REGISTRATION_ROUNDS; round++) {
    const outcome = await registrationRound(deps, clusterId, data, nodeNames);
    if (outcome instanceof Error) return refusal(outcome);
    if (outcome) return success({ cluster: outcome });
  }
  throw new Error(`registration of cluster '${clusterId}' did not settle in ${MAX_REGISTRATION_ROUNDS} rounds of concurrent registrations`);
}

/** One cluster, or `cluster-not-found`. */
export async function readCluster ({ repos }: ClusterDeps, clusterId: string): Promise<Result<{ cluster: ICluster }>> {
  const record = await repos.clusters.findById(clusterId);
  return record ? success({ cluster: toCluster(record) }) : refusal(errors.clusterNotFound(clusterId));
}

/** A page of the registered clusters (at most `limit`, those after `after`), each with its node count and first node names. */
export async function listClusters ({ repos }: ClusterDeps, opts: { limit: number, after?: string }): Promise<Result<{ clusters: ICluster[] }>> {
  return success({ clusters: (await repos.clusters.list(opts)).map(toCluster) });
}

/** Register, read and list clusters and their nodes (the target scope of every rollout is computed from them), bound to their dependencies. */
export function clusterOperations (deps: ClusterDeps) {
  return {
    registerCluster: (clusterId: string, data: TClusterWritableData) => registerCluster(deps, clusterId, data),
    readCluster: (clusterId: string) => readCluster(deps, clusterId),
    listClusters: (opts: { limit: number, after?: string }) => listClusters(deps, opts),
  };
}

export type ClusterOperations = ReturnType<typeof clusterOperations>;
