/**
 * The sharding plan: the shard key of every collection the store uses, or why it stays unsharded
 * (on the database's primary shard), and the queries on sharded collections that do not name their
 * shard key — each a documented scatter-gather on a cold path. docs/operations.md "Sharding" is this
 * file as a table, with the capacity plan. Data only: the servers never shard anything themselves
 * (an operator runs `sh.shardCollection` with these keys).
 *
 * Two rules of MongoDB decide it, and test/unit/store/shardPlan.test.ts checks the first against the
 * index plan (./indexPlan.ts); test/integration/store/shardTargeting.test.ts checks the queries:
 * - a unique index on a sharded collection must have the shard key's fields as its prefix (or lead with
 *   `_id`) — the server refuses it otherwise, and a refused unique index keeps the service unready;
 * - `_id` is unique across shards only where `_id` is the shard key: every sharded collection whose
 *   compare-and-swap rests on its unique `_id` (an insert that a second writer's insert of the same `_id`
 *   must collide with) is sharded on `_id`, or on a field that `_id` determines (the same `_id` always
 *   lands on the same shard).
 */
import { MIGRATIONS_COLLECTION } from './migrations.js';
import { collections } from './indexPlan.js';

/** A shard key: fields in order, each ranged (1) or hashed. */
export type ShardKey = Readonly<Record<string, 1 | 'hashed'>>;

/** A shard key as docs/operations.md writes it: `{ _id: hashed }`, `{ serviceId: 1 }`. */
export const describeShardKey = (key: ShardKey): string =>
  `{ ${Object.entries(key).map(([field, kind]) => `${field}: ${kind}`).join(', ')} }`;

export interface ShardPlanEntry {
  /** The key `sh.shardCollection` takes, or 'unsharded': the collection stays whole on the primary shard. */
  shardKey: ShardKey | 'unsharded';
  /** Why this key (what names it, what stays unique), or why it need not be sharded (its size, its traffic). */
  why: string;
  /** How large it grows, roughly (for a fleet of 100,000 nodes). */
  size: string;
}

/** The commands whose filters the store sends (the wire's names: `find`, `update`, `delete`, `findAndModify`, `aggregate` for counts). */
export type QueryCommand = 'find' | 'update' | 'delete' | 'findAndModify' | 'aggregate' | 'count';

/**
 * A query on a sharded collection that does not name the shard key with an equality or `$in`: the
 * router sends it to every shard. Identified by collection, command and the filter's top-level fields.
 */
export interface ScatterGather {
  collection: string;
  command: QueryCommand;
  /** The filter's top-level field names, sorted. */
  filter: readonly string[];
  /** The store methods that send it. */
  sentBy: string;
  /** Why it is cold (how often it runs), and what it costs: one round trip per shard. */
  why: string;
}

const U = 'unsharded' as const;

export const shardPlan: Readonly<Record<string, ShardPlanEntry>> = {
  [collections.reports]: {
    shardKey: { _id: 'hashed' },
    why: 'THE hot collection: every report writes its record (compare-and-swap on `{ _id, fence }`) and the read path reads' +
      ' a rollout\'s records by `_id` `$in`. Hashed `_id` spreads the records of one large rollout over every shard (a ranged' +
      ' `_id` would keep a rollout\'s records, which share the `rollout:<rolloutId>:` prefix, in one chunk on one shard), and' +
      ' keeps the `_id` unique across shards: the first insert of a record is its compare-and-swap.',
    size: 'one record per (rollout, reporter), ~14 KiB each; the records of rollouts two generations superseded are removed',
  },
  [collections.reportClaims]: {
    shardKey: { _id: 'hashed' },
    why: 'Read (`_id` `$in`), inserted and given back by `_id` on the report path; a claim IS its unique `_id`' +
      ' (`<rolloutId>/node/<name>`): only `_id` as the shard key keeps that unique across shards.',
    size: 'one per (rollout, target node or session): up to 100,000 per fleet-wide rollout, ~100 bytes each',
  },
  [collections.statusBuckets]: {
    shardKey: { _id: 'hashed' },
    why: 'Read and written by `_id` (`<rolloutId>:<bucket>`, `_id` `$in` for a rollout\'s reporters) on the report path: a' +
      ' report that changes counts writes its bucket (compare-and-swap on its reporter\'s contribution, an upsert by `_id`),' +
      ' so `_id` is the key; hashed spreads the 128 buckets of one large rollout over every shard.',
    size: 'up to 128 per rollout (kept while its reports are), ≤ ~2 KiB each',
  },
  [collections.nodes]: {
    shardKey: { _id: 'hashed' },
    why: 'Every report reads its nodes\' owners by `_id` `$in`; a node belongs to one cluster because its name is the unique' +
      ' `_id` — only `_id` as the shard key keeps that true across shards (`{ clusterId }` would let two clusters claim one' +
      ' node on two shards). A cluster\'s whole node list (`{ clusterId }`) is then a scatter-gather: registration and promotion only.',
    size: 'one per node: 100,000 × ~100 bytes ≈ 10 MB (sharded for the per-report reads, not for its size)',
  },
  [collections.events]: {
    shardKey: { _id: 'hashed' },
    why: 'Inserted by the relay and read by `_id` `$in` (`<serviceId>:<seq>`); the `_id` insert is the exactly-once of the' +
      ' log (a second insert is a duplicate key), so `_id` is the key. Grows with activity × EVENTS_RETENTION_DAYS.',
    size: 'one per domain event, kept EVENTS_RETENTION_DAYS; ~0.5 KiB each',
  },
  [collections.rollouts]: {
    shardKey: { serviceId: 1 },
    why: 'THE compare-and-swap of a promotion is the unique `{ serviceId, generation }`, so the key is `serviceId` (a prefix of' +
      ' it, and of `{ serviceId, idempotencyRecordId }`); every history, pending and idempotency read names it. The plan of a' +
      ' rollout (its target nodes) makes documents large and history is kept for good. `_id` (`ro_<uuid>`) is random: unique' +
      ' per shard is unique. One service\'s history stays in one chunk (it cannot split below one serviceId).',
    size: 'one per promotion or rollback, kept for good; ~1 KiB + ~80 bytes per target node',
  },
  [collections.services]: {
    shardKey: U,
    why: '`services_name_unique` makes names unique across all services and cannot lead with `_id`, which every read names;' +
      ' one document per service is small enough for one shard. Its traffic (the report target read, coalesced, and the' +
      ' status-summary update of a report that changes counts) stays on the primary shard: docs/operations.md "Sharding".',
    size: 'one per service (hundreds to a few thousand): a few KiB, the plan (~80 bytes per target node), the last 100 status' +
      ' events, and at most 128 bucket sums of the status (~5 KiB) whatever the number of reporters',
  },
  [collections.clusters]: {
    shardKey: U,
    why: 'By `_id` only; read on registration, promotion and the rare unsure node claim.',
    size: 'one per cluster (~1,000), ≤ ~100 KiB each',
  },
  [collections.releases]: {
    shardKey: U,
    why: 'Grows with image pushes, not with the fleet or its reports. Were it ever sharded, `{ data.serviceId: 1 }` is the key' +
      ' `releases_identity_unique` allows — and the reads by `_id` (promotion) would then need the service id.',
    size: 'one per pushed image (~1 KiB): a million is ~1 GiB',
  },
  [collections.pushEvents]: {
    shardKey: U,
    why: 'Grows with image pushes only; the dedup record is its unique `_id`, so a future key is `{ _id: hashed }`' +
      ' (the tag ledger would then scatter).',
    size: 'one per push event, kept for good (~1 KiB)',
  },
  [collections.idempotency]: {
    shardKey: U,
    why: 'Idempotent requests of the last 48 h (promotions, rollbacks), by `_id`.',
    size: 'thousands of ~1 KiB documents',
  },
  [collections.attestations]: {
    shardKey: U,
    why: 'One or two per rollout. Were it sharded, `{ serviceId: 1 }` is the key `attestations_chain_unique` allows.',
    size: 'one per success or drift (~4 KiB)',
  },
  [collections.webhookSubscriptions]: { shardKey: U, why: 'A handful of subscriptions, read by `_id` and listed whole.', size: 'tens' },
  [collections.webhookCursors]: { shardKey: U, why: 'One per (subscription, service): small.', size: 'subscriptions × services' },
  [collections.webhookDeliveries]: {
    shardKey: U,
    why: 'The delivery log: per delivered event, kept EVENTS_RETENTION_DAYS; cold.',
    size: 'events × subscriptions',
  },
  [collections.webhookDeadLetters]: { shardKey: U, why: 'Deliveries given up on: few.', size: 'few' },
  [collections.governance]: { shardKey: U, why: 'One document (`global`).', size: '1' },
  [collections.promotionRequests]: { shardKey: U, why: 'Promotions waiting for approval: few.', size: 'few' },
  [collections.breakGlassGrants]: { shardKey: U, why: 'Break-glass grants: few.', size: 'few' },
  [MIGRATIONS_COLLECTION]: { shardKey: U, why: 'One record per start-up migration.', size: 'under ten' },
};

const PER_PROMOTION = 'once per promotion or rollback (a few a minute at most, against thousands of reports a second)';

export const scatterGathers: readonly ScatterGather[] = [
  {
    collection: collections.rollouts,
    command: 'update',
    filter: ['_id'],
    sentBy: 'RolloutStore.markApplied, recordMilestones',
    why: `by \`_id\` alone (the callers hold the rollout id, not its service): ${PER_PROMOTION} and once per decided milestone;` +
      ' a single-document update by `_id` is allowed on any sharded collection',
  },
  {
    collection: collections.rollouts,
    command: 'find',
    filter: ['_id'],
    sentBy: 'RolloutStore.recordMilestones',
    why: `the milestones the record holds already: ${PER_PROMOTION} and once per decided milestone`,
  },
  {
    collection: collections.rollouts,
    command: 'update',
    filter: ['_id', 'ended'],
    sentBy: 'RolloutStore.markEnded',
    why: `the replaced rollout's end: ${PER_PROMOTION}`,
  },
  {
    collection: collections.rollouts,
    command: 'update',
    filter: ['_id', 'revokedAt'],
    sentBy: 'RolloutStore.recordRevocation',
    why: 'a drift\'s revocation: once per drifted rollout',
  },
  {
    collection: collections.rollouts,
    command: 'aggregate',
    filter: ['mode', 'releaseId'],
    sentBy: 'RolloutStore.countPromotions',
    why: `a release's promotionCount (rollouts of a release, of any service): ${PER_PROMOTION}`,
  },
  {
    collection: collections.nodes,
    command: 'find',
    filter: ['clusterId'],
    sentBy: 'ClusterStore.claimsOf (findById, removeStaleNodes)',
    why: 'a cluster\'s node claims: GET /v1/clusters/:id and registration (its stale nodes, then deleted by `_id` `$in`), once per registration or read',
  },
  {
    collection: collections.nodes,
    command: 'find',
    filter: ['clusterId'],
    sentBy: 'ClusterStore.nodeNamesOf (findClustersWithNodes, list)',
    why: `the target nodes of a promotion's clusters (\`clusterId\` \`$in\`): ${PER_PROMOTION}; cluster listings`,
  },
  {
    collection: collections.reports,
    command: 'find',
    filter: ['rolloutId', 'serviceId'],
    sentBy: 'ReportStore.listServiceRecords',
    why: 'GET /v1/services/:id/deployments of a service without the immutable policy: an operator\'s read',
  },
  {
    collection: collections.reports,
    command: 'delete',
    filter: ['rolloutId'],
    sentBy: 'ReportStore.removeRollout',
    why: `the records of a rollout two generations superseded: ${PER_PROMOTION}`,
  },
  {
    collection: collections.reportClaims,
    command: 'delete',
    filter: ['rolloutId'],
    sentBy: 'ReportStore.removeRollout',
    why: `the claims of a rollout two generations superseded: ${PER_PROMOTION}`,
  },
  {
    collection: collections.statusBuckets,
    command: 'delete',
    filter: ['rolloutId'],
    sentBy: 'ReportStore.removeRollout',
    why: `the status buckets of a rollout two generations superseded: ${PER_PROMOTION}`,
  },
  {
    collection: collections.events,
    command: 'delete',
    filter: ['time'],
    sentBy: 'EventLogStore.sweepExpired',
    why: 'removing events past EVENTS_RETENTION_DAYS: each process, every few minutes',
  },
];
