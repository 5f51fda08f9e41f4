import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { ClusterNodes, ClusterRecord, NodeClaim, NodeClaimResult } from '../domain/clusters.js';
import type { ClusterRepository } from '../domain/ports/index.js';
import { LISTED_NODE_NAMES } from '../contracts/index.js';
import { coalesced } from './coalesce.js';
import { duplicateKeyRefusals, isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

/** Clusters whose committed revision a process remembers (`findRegisteredNodeOwners`). */
const COMMITTED_KEPT = 16_384;

/**
 * Node names one operation on `nodes` lists at most. The local development database holds a collection's
 * lock for the whole of an operation (every report waits behind it, as it reads its nodes' claims), and
 * `updateMany` there tests its whole filter again per matched claim, so its cost grows with the square of
 * the list: `{ clusterId, _id: { $in } }` with 4,096 names 0.76–1.37 s, with 256 names 7–21 ms (launcher of
 * 2026-12-06, memory backend, beside 32,768 other claims, idle machine). Reads are cheaper since that
 * launcher answers a long `_id` `$in` by its own lookup (4,096 names 60–230 ms, 256 names 5–19 ms; the
 * library alone took 630–900 ms for 4,096) and `countDocuments` from an index (4,096 names 23–69 ms; a scan
 * of 820–910 ms before): the owner reads are chunked too, which keeps each operation short for the
 * requests waiting behind it. Filters that lead with `clusterId` and list names for a read or a delete —
 * and a cluster's read by `{ clusterId }` — grow with the list alone and go in one operation.
 */
export const NODES_PER_OPERATION = 256;

/**
 * Chunks of one call (an owner read of 4,096 names, a registration's claims) in flight at once. Under
 * load each operation waits its turn behind the other requests' — 100–400 ms an operation with 50
 * reports/s and two 4,096-node registrations through 2 processes on 2 busy cores — so sixteen chunks
 * one after the other took 2.3–4.3 s for an owner read and 3.3–5.1 s for the claims; four at a time
 * 0.5–1.9 s and 1.3–2.6 s. Each operation holds the collection no longer; four of them queued at once
 * keep a report's wait behind them short (sixteen at once were no faster on that machine).
 */
const CHUNKS_AT_ONCE = 4;

export interface ClusterDocument {
  _id: string;
  name?: string;
  /** Raised by every registration that changes the cluster (compare-and-swap). */
  revision: number;
  /**
   * The node set of the committed registration (sorted). A node belongs to the cluster when it
   * is in this list *and* the cluster holds its claim, so claims of a registration that is still
   * running, or crashed before committing, are never read as nodes. Absent in documents written
   * before the list was stored: then every claim counts.
   */
  nodeNames?: string[];
  createdAt: number;
  updatedAt: number;
}

/** One node's claim: `_id` is the node name, so a node belongs to at most one cluster. */
export interface NodeDocument {
  _id: string;
  clusterId: string;
  /** The highest registration revision that claimed this node. */
  revision: number;
  createdAt: number;
}

export class ClusterStore implements ClusterRepository {
  readonly clusters: Collection<ClusterDocument>;
  readonly nodes: Collection<NodeDocument>;

  constructor (database: Database) {
    this.clusters = database.db.collection<ClusterDocument>(collections.clusters);
    this.nodes = database.db.collection<NodeDocument>(collections.nodes);
  }

  async findById (clusterId: string): Promise<ClusterRecord | null> {
    const [doc, claimed] = await Promise.all([
      this.clusters.findOne({ _id: clusterId }),
      this.claimsOf(clusterId),
    ]);
    return doc ? toRecord(doc, committedNodes(doc, claimed.map((claim) => claim._id))) : null;
  }

  /** The cluster's claims sorted by name (one read of the `{ clusterId, _id }` index: at most 4,096 committed, and those of a registration in flight). */
  private async claimsOf (clusterId: string): Promise<Array<Pick<NodeDocument, '_id' | 'revision'>>> {
    return this.nodes.find({ clusterId }, { projection: { _id: 1, revision: 1 } }).sort({ clusterId: 1, _id: 1 }).toArray();
  }

  /**
   * A page of clusters, each with its node count and its first `LISTED_NODE_NAMES` node names: one read
   * of the cluster documents (the committed lists cut to a few more names than are shown, and their
   * lengths), one read by `_id` `$in` of those names' claims (a name listed is one the cluster holds).
   * Clusters written before the committed list was stored are counted from their claims.
   */
  async list ({ limit, after }: { limit: number, after?: string }): Promise<ClusterRecord[]> {
    const listed = { $isArray: '$nodeNames' };
    const docs = await this.clusters.aggregate<ListedCluster>([
      { $match: after === undefined ? {} : { _id: { $gt: after } } },
      { $sort: { _id: 1 } },
      { $limit: limit },
      {
        $project: {
          name: 1,
          revision: 1,
          createdAt: 1,
          updatedAt: 1,
          listed,
          nodeCount: { $cond: [listed, { $size: '$nodeNames' }, 0] },
          // A few more than shown: a committed name whose claim a concurrent registration just released is skipped.
          nodeNames: { $cond: [listed, { $slice: ['$nodeNames', LISTED_NODE_NAMES * 2] }, []] },
        },
      },
    ]).toArray();
    const claims = await this.findNodeOwners(docs.flatMap((doc) => doc.nodeNames));
    const unlisted = await this.nodeNamesOf(docs.filter((doc) => !doc.listed).map((doc) => doc._id));
    return docs.map((doc) => {
      const { listed: hasList, nodeCount, nodeNames, ...rest } = doc;
      if (!hasList) {
        const all = unlisted.get(doc._id) ?? [];
        return toRecord(rest, all.slice(0, LISTED_NODE_NAMES), all.length);
      }
      const held = nodeNames.filter((name) => claims.get(name)?.clusterId === doc._id);
      return toRecord(rest, held.slice(0, LISTED_NODE_NAMES), nodeCount);
    });
  }

  /**
   * The registered clusters among `clusterIds`, in the order asked, each with its
   * node names sorted; ids that are not registered are left out. Two queries: the
   * cluster documents by `_id`, the nodes by `{ clusterId, _id }`.
   */
  async findClustersWithNodes (clusterIds: readonly string[]): Promise<ClusterNodes[]> {
    const ids = [...new Set(clusterIds)];
    if (ids.length === 0) return [];
    const [registered, nodesByCluster] = await Promise.all([
      this.clusters.find({ _id: { $in: ids } }, { projection: { _id: 1, nodeNames: 1 } }).toArray(),
      this.nodeNamesOf(ids),
    ]);
    const byId = new Map(registered.map((doc) => [doc._id, doc]));
    return ids.flatMap((id) => {
      const doc = byId.get(id);
      return doc ? [{ id, nodeNames: committedNodes(doc, nodesByCluster.get(id) ?? []) }] : [];
    });
  }

  /**
   * nodeName → the claim, for each of the names that some cluster holds. The reports that ask in
   * the same turn of the event loop share one read by `_id` `$in` (src/store/coalesce.ts).
   */
  async findNodeOwners (nodeNames: readonly string[]): Promise<Map<string, NodeClaim>> {
    if (nodeNames.length === 0) return new Map();
    return this.#ownersInChunks(nodeNames);
  }

  /** `#nodeOwners`, a long name list read in chunks (a read by `_id` `$in`: see NODES_PER_OPERATION and inChunks). */
  async #ownersInChunks (nodeNames: readonly string[]): Promise<Map<string, NodeClaim>> {
    if (nodeNames.length <= NODES_PER_OPERATION) return this.#nodeOwners(nodeNames);
    return new Map((await inChunks(nodeNames, (chunk) => this.#nodeOwners(chunk))).flatMap((owners) => [...owners]));
  }

  /**
   * The nodes among `nodeNames` that are registered — their cluster committed them (a claim left by
   * a registration that has not committed, or crashed before it did, does not count) — and their
   * cluster. A claim at a revision its cluster has committed counts; the committed revisions are
   * read (by `_id` `$in`) only for a claim newer than this process has seen committed.
   */
  async findRegisteredNodeOwners (nodeNames: readonly string[]): Promise<Map<string, NodeClaim>> {
    if (nodeNames.length === 0) return new Map();
    const claims = await this.#ownersInChunks(nodeNames);
    const unsure = [...new Set([...claims.values()].filter((c) => c.revision > (this.#committed.get(c.clusterId) ?? 0)).map((c) => c.clusterId))];
    // A claim newer than its cluster's committed revision: a registration in flight (or one that
    // crashed before its commit) moved it on; the node is registered when the committed list names it.
    const committedLists = new Map<string, ReadonlySet<string>>();
    if (unsure.length > 0) {
      const docs = await this.clusters.find({ _id: { $in: unsure } }, { projection: { _id: 1, revision: 1, nodeNames: 1 } }).toArray();
      for (const doc of docs) {
        this.#noteCommitted(doc._id, doc.revision);
        if (doc.nodeNames) committedLists.set(doc._id, new Set(doc.nodeNames));
      }
    }
    const registered = new Map<string, NodeClaim>();
    for (const [name, claim] of claims) {
      if (claim.revision <= (this.#committed.get(claim.clusterId) ?? 0) || committedLists.get(claim.clusterId)?.has(name) === true) registered.set(name, claim);
    }
    return registered;
  }

  /** The highest registration revision this process has seen committed, per cluster (revisions only grow). */
  readonly #committed = new Map<string, number>();

  #noteCommitted (clusterId: string, revision: number): void {
    if (revision <= (this.#committed.get(clusterId) ?? 0)) return;
    if (this.#committed.size >= COMMITTED_KEPT && !this.#committed.has(clusterId)) this.#committed.clear();
    this.#committed.set(clusterId, revision);
  }

  readonly #nodeOwners = coalesced<readonly string[], Map<string, NodeClaim>>(async (calls) => {
    const names = [...new Set(calls.flat())];
    const docs = await this.nodes.find({ _id: { $in: names } }, { projection: { _id: 1, clusterId: 1, createdAt: 1, revision: 1 } }).toArray();
    const all = new Map(docs.map((doc) => [doc._id, { clusterId: doc.clusterId, createdAt: doc.createdAt, revision: doc.revision }]));
    return calls.map((wanted) => {
      const owners = new Map<string, NodeClaim>();
      for (const name of wanted) {
        const owner = all.get(name);
        if (owner) owners.set(name, owner);
      }
      return owners;
    });
  }, { weigh: (names) => names.length, maxWeight: NODES_PER_OPERATION });

  async releaseAbandonedClaim (nodeName: string, claim: NodeClaim): Promise<void> {
    await this.nodes.deleteOne({ _id: nodeName, clusterId: claim.clusterId, createdAt: claim.createdAt });
  }

  /**
   * Claims the nodes for the cluster at `revision`, in chunks of `NODES_PER_OPERATION` names one
   * after the other: each chunk's read of who holds its names (`_id` `$in`) and the update that moves
   * this cluster's own claims to the revision cost the square of their list on the local development
   * database. Per chunk: one read finds who holds each name; this cluster's own claims move to the
   * revision in one update, free names are inserted in one batch (the unique `_id` refuses a name
   * claimed meanwhile), and only the names a concurrent claim touched go through the per-node upsert.
   * Every chunk is claimed even when an earlier one was refused: the registration decides on all the
   * refusals together, and nothing is committed before every name is claimed.
   */
  async claimNodes (clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult> {
    const claimed = await inChunks(nodeNames, (chunk) => this.claimChunk(clusterId, chunk, revision, now));
    return { inserted: claimed.flatMap((c) => c.inserted), refused: claimed.flatMap((c) => c.refused) };
  }

  /** claimNodes for one chunk of names. */
  private async claimChunk (clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult> {
    const held = await this.nodes.find({ _id: { $in: [...nodeNames] } }, { projection: { _id: 1, clusterId: 1 } }).toArray();
    const holders = new Map(held.map((doc) => [doc._id, doc.clusterId]));
    const ours = nodeNames.filter((name) => holders.get(name) === clusterId);
    const free = nodeNames.filter((name) => !holders.has(name));
    const foreign = nodeNames.filter((name) => holders.has(name) && holders.get(name) !== clusterId);
    if (ours.length > 0) {
      const moved = await this.nodes.updateMany({ clusterId, _id: { $in: ours } }, { $max: { revision } });
      // A claim of ours changed hands since the read: decide every name of the chunk node by node.
      if (moved.matchedCount !== ours.length) return await this.claimEach(clusterId, nodeNames, revision, now);
    }
    const contended = await this.insertFree(clusterId, free, revision, now);
    const settled = await this.claimEach(clusterId, [...foreign, ...contended], revision, now);
    const inserted = free.filter((name) => !contended.includes(name));
    return { inserted: [...inserted, ...settled.inserted], refused: settled.refused };
  }

  /** Inserts claims of free names in one batch; answers the names some other claim took first. */
  private async insertFree (clusterId: string, names: readonly string[], revision: number, now: number): Promise<string[]> {
    if (names.length === 0) return [];
    try {
      await this.nodes.insertMany(names.map((name) => ({ _id: name, clusterId, revision, createdAt: now })), { ordered: false });
      return [];
    } catch (err) {
      const refusals = duplicateKeyRefusals(err);
      if (!refusals) throw err;
      return refusals.refused.flatMap((index) => names[index] ?? []);
    }
  }

  /** The per-node claim: an upsert filtered on `_id` and `clusterId` (another cluster's node does not match, and its `_id` refuses the insert). */
  private async claimEach (clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult> {
    if (nodeNames.length === 0) return { inserted: [], refused: [] };
    const operations: Array<AnyBulkWriteOperation<NodeDocument>> = nodeNames.map((nodeName) => ({
      updateOne: {
        filter: { _id: nodeName, clusterId },
        update: { $max: { revision }, $setOnInsert: { createdAt: now } },
        upsert: true,
      },
    }));
    try {
      const result = await this.nodes.bulkWrite(operations, { ordered: false });
      return { inserted: upsertedNames(nodeNames, result.upsertedIds), refused: [] };
    } catch (err) {
      const refusals = duplicateKeyRefusals(err);
      if (!refusals) throw err;
      return {
        inserted: upsertedNames(nodeNames, refusals.upsertedIds),
        refused: refusals.refused.flatMap((index) => nodeNames[index] ?? []),
      };
    }
  }

  /** One delete by `{ clusterId, _id: { $in } }` (it grows with the list alone: see NODES_PER_OPERATION). */
  async releaseNodes (clusterId: string, nodeNames: readonly string[]): Promise<void> {
    if (nodeNames.length === 0) return;
    await this.nodes.deleteMany({ clusterId, _id: { $in: [...nodeNames] } });
  }

  async commit (
    cluster: { id: string, name?: string, nodeNames: readonly string[], revision: number, now: number },
    expectedRevision: number | null
  ): Promise<{ createdAt: number, updatedAt: number } | null> {
    const { id, name, revision, now } = cluster;
    const nodeNames = [...cluster.nodeNames];
    if (expectedRevision === null) {
      try {
        await this.clusters.insertOne({ _id: id, name, revision, nodeNames, createdAt: now, updatedAt: now });
        return { createdAt: now, updatedAt: now };
      } catch (err) {
        if (isDuplicateKeyError(err)) return null;
        throw err;
      }
    }
    const doc = await this.clusters.findOneAndUpdate(
      { _id: id, revision: expectedRevision },
      name === undefined
        ? { $set: { revision, nodeNames, updatedAt: now }, $unset: { name: '' } }
        : { $set: { revision, nodeNames, updatedAt: now, name } },
      { returnDocument: 'after', projection: { createdAt: 1, updatedAt: 1 } }
    );
    return doc ? { createdAt: doc.createdAt, updatedAt: doc.updatedAt } : null;
  }

  /**
   * Deletes the cluster's claims of revision `revision` or older that `keep` does not name: the claims are
   * read (`claimsOf`) and the stale ones deleted by name in one operation that keeps the revision
   * condition, so a claim a newer registration of the cluster moved on meanwhile stays. (One delete by
   * `{ clusterId, _id: { $nin: keep } }` tests every claim of the cluster against the whole list on the
   * local development database, which serves no `$nin` from an index: 800 ms for 4,096 nodes, holding the
   * collection.)
   */
  async removeStaleNodes (clusterId: string, keep: readonly string[], revision: number): Promise<void> {
    const kept = new Set(keep);
    const stale = (await this.claimsOf(clusterId)).filter((claim) => !kept.has(claim._id) && claim.revision <= revision).map((claim) => claim._id);
    if (stale.length === 0) return;
    await this.nodes.deleteMany({ clusterId, _id: { $in: stale }, revision: { $lte: revision } });
  }

  /**
   * How many of `nodeNames` the cluster holds: one read of their claims by `{ clusterId, _id: { $in } }`.
   * (Written when `countDocuments`, an aggregation, was a scan of the collection on the local development
   * database: 820–910 ms for 4,096 names beside 32,768 other claims, against 45–85 ms for this read.)
   */
  async countNodes (clusterId: string, nodeNames: readonly string[]): Promise<number> {
    if (nodeNames.length === 0) return 0;
    const held = await this.nodes.find({ clusterId, _id: { $in: [...nodeNames] } }, { projection: { _id: 1 } }).toArray();
    return held.length;
  }

  /** clusterId → its node names (sorted) for the given clusters; one query. */
  private async nodeNamesOf (clusterIds: readonly string[]): Promise<Map<string, string[]>> {
    const byCluster = new Map<string, string[]>();
    if (clusterIds.length === 0) return byCluster;
    const nodes = await this.nodes
      .find({ clusterId: { $in: [...clusterIds] } }, { projection: { _id: 1, clusterId: 1 } })
      .sort({ clusterId: 1, _id: 1 })
      .toArray();
    for (const node of nodes) {
      const names = byCluster.get(node.clusterId) ?? [];
      names.push(node._id);
      byCluster.set(node.clusterId, names);
    }
    return byCluster;
  }
}

/** The claims that the committed registration names (all of them for documents without the list). */
const committedNodes = (doc: Pick<ClusterDocument, 'nodeNames'>, claimed: string[]): string[] => {
  if (doc.nodeNames === undefined) return claimed;
  const committed = new Set(doc.nodeNames);
  return claimed.filter((name) => committed.has(name));
};

/** A cluster document as a listing reads it (ClusterStore.list). */
interface ListedCluster extends Omit<ClusterDocument, 'nodeNames'> {
  /** The document has the committed list. */
  listed: boolean;
  nodeCount: number;
  /** The first names of the committed list. */
  nodeNames: string[];
}

const toRecord = (doc: Omit<ClusterDocument, 'nodeNames'>, nodeNames: string[], nodeCount = nodeNames.length): ClusterRecord => ({
  id: doc._id,
  name: doc.name,
  nodeNames,
  nodeCount,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
  revision: doc.revision,
});

/**
 * `run` on `items` in consecutive chunks of `NODES_PER_OPERATION`, at most `CHUNKS_AT_ONCE` chunks in
 * flight; the results in chunk order.
 */
async function inChunks<T, R> (items: readonly T[], run: (chunk: T[]) => Promise<R>): Promise<R[]> {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += NODES_PER_OPERATION) chunks.push(items.slice(i, i + NODES_PER_OPERATION));
  const results: R[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < chunks.length; i = next++) results[i] = await run(chunks[i] as T[]);
  };
  await Promise.all(Array.from({ length: Math.min(CHUNKS_AT_ONCE, chunks.length) }, worker));
  return results;
}

const upsertedNames = (nodeNames: readonly string[], upsertedIds: Record<number, unknown>): string[] =>
  Object.keys(upsertedIds).flatMap((index) => nodeNames[Number(index)] ?? []);
