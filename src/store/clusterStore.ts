import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { ClusterNodes, ClusterRecord, NodeClaim, NodeClaimResult } from '../domain/clusters.js';
import type { ClusterRepository } from '../domain/ports/index.js';
import { coalesced } from './coalesce.js';
import { duplicateKeyRefusals, isDuplicateKeyError } from './driverErrors.js';
import type { Database } from './mongo.js';
import { collections } from './indexPlan.js';

/** Clusters whose committed revision a process remembers (`findRegisteredNodeOwners`). */
const COMMITTED_KEPT = 16_384;

/** Node names one coalesced owner read asks for at most (~4 MiB of names at their longest); a larger single call goes alone. */
const OWNER_NAMES_PER_READ = 16_384;

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
      this.nodes.find({ clusterId }, { projection: { _id: 1 } }).sort({ _id: 1 }).map((node) => node._id).toArray(),
    ]);
    return doc ? toRecord(doc, committedNodes(doc, claimed)) : null;
  }

  async list ({ limit, after }: { limit: number, after?: string }): Promise<ClusterRecord[]> {
    const docs = await this.clusters.find(after === undefined ? {} : { _id: { $gt: after } }).sort({ _id: 1 }).limit(limit).toArray();
    const nodesByCluster = await this.nodeNamesOf(docs.map((doc) => doc._id));
    return docs.map((doc) => toRecord(doc, committedNodes(doc, nodesByCluster.get(doc._id) ?? [])));
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
    return this.#nodeOwners(nodeNames);
  }

  /**
   * The nodes among `nodeNames` that are registered — their cluster committed them (a claim left by
   * a registration that has not committed, or crashed before it did, does not count) — and their
   * cluster. A claim at a revision its cluster has committed counts; the committed revisions are
   * read (by `_id` `$in`) only for a claim newer than this process has seen committed.
   */
  async findRegisteredNodeOwners (nodeNames: readonly string[]): Promise<Map<string, NodeClaim>> {
    if (nodeNames.length === 0) return new Map();
    const claims = await this.#nodeOwners(nodeNames);
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
  }, { weigh: (names) => names.length, maxWeight: OWNER_NAMES_PER_READ });

  async releaseAbandonedClaim (nodeName: string, claim: NodeClaim): Promise<void> {
    await this.nodes.deleteOne({ _id: nodeName, clusterId: claim.clusterId, createdAt: claim.createdAt });
  }

  /**
   * Claims the nodes for the cluster at `revision`. One read by `_id` `$in` finds who holds each
   * name; this cluster's own claims move to the revision in one update, free names are inserted in
   * one batch (the unique `_id` refuses a name claimed meanwhile), and only the names a concurrent
   * claim touched go through the per-node upsert. (A filter of `_id` and another field per node —
   * the per-node path — is a collection scan per node on databases that only use an index for
   * `_id` alone, such as the local development database: thousands of nodes took minutes.)
   *
   * Filters of a cluster's claims by name list lead with `clusterId` — `{ clusterId, _id: { $in } }`,
   * here, in releaseNodes and in countNodes. On MongoDB the order of a filter's fields does not
   * matter; the local development database serves such a filter from the clusterId index only when
   * that equality comes first, and otherwise tests every claim in the collection against the list: a
   * 4,096-node registration beside 32,768 other claims took over 10 s, and its count held the database
   * long enough for the driver's heartbeat to fail (every request in flight answered 503).
   */
  async claimNodes (clusterId: string, nodeNames: readonly string[], revision: number, now: number): Promise<NodeClaimResult> {
    if (nodeNames.length === 0) return { inserted: [], refused: [] };
    const held = await this.nodes.find({ _id: { $in: [...nodeNames] } }, { projection: { _id: 1, clusterId: 1 } }).toArray();
    const holders = new Map(held.map((doc) => [doc._id, doc.clusterId]));
    const ours = nodeNames.filter((name) => holders.get(name) === clusterId);
    const free = nodeNames.filter((name) => !holders.has(name));
    const foreign = nodeNames.filter((name) => holders.has(name) && holders.get(name) !== clusterId);
    if (ours.length > 0) {
      const moved = await this.nodes.updateMany({ clusterId, _id: { $in: ours } }, { $max: { revision } });
      // A claim of ours changed hands since the read: decide every name node by node.
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

  async removeStaleNodes (clusterId: string, keep: readonly string[], revision: number): Promise<void> {
    await this.nodes.deleteMany({ clusterId, _id: { $nin: [...keep] }, revision: { $lte: revision } });
  }

  async countNodes (clusterId: string, nodeNames: readonly string[]): Promise<number> {
    if (nodeNames.length === 0) return 0;
    return this.nodes.countDocuments({ clusterId, _id: { $in: [...nodeNames] } });
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

const toRecord = (doc: ClusterDocument, nodeNames: string[]): ClusterRecord => ({
  id: doc._id,
  name: doc.name,
  nodeNames,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
  revision: doc.revision,
});

const upsertedNames = (nodeNames: readonly string[], upsertedIds: Record<number, unknown>): string[] =>
  Object.keys(upsertedIds).flatMap((index) => nodeNames[Number(index)] ?? []);
