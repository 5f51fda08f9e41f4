/**
 * The index plan: every query the service makes is served by one of these
 * indexes (README "Index plan" lists the queries next to them). Created at
 * start-up, idempotently. No partial indexes, and nothing relies on TTL expiry:
 * the local development database supports neither (docs/architecture.md "The local development database").
 */
export interface IndexPlanEntry {
  collection: string;
  name: string;
  key: Record<string, 1 | -1>;
  unique?: boolean;
  /** Only documents that have the field are in the index (so documents without it never collide on a unique one). */
  sparse?: boolean;
  /** TTL clean-up where the database supports it (the local development database ignores it). */
  expireAfterSeconds?: number;
  /** Which queries it serves (documentation, also printed in the README). */
  serves: string;
}

/** The entry's options for createIndex, without the ones it does not set (a `unique: null` sent is refused by some servers). */
export function indexOptions (entry: IndexPlanEntry): { name: string, unique?: boolean, sparse?: boolean, expireAfterSeconds?: number } {
  return {
    name: entry.name,
    ...(entry.unique === undefined ? {} : { unique: entry.unique }),
    ...(entry.sparse === undefined ? {} : { sparse: entry.sparse }),
    ...(entry.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: entry.expireAfterSeconds }),
  };
}

export const collections = {
  services: 'services',
  clusters: 'clusters',
  nodes: 'nodes',
  releases: 'releases',
  pushEvents: 'pushEvents',
  rollouts: 'rollouts',
  idempotency: 'idempotency',
  reports: 'reports',
  reportClaims: 'reportClaims',
  statusBuckets: 'statusBuckets',
  events: 'events',
  attestations: 'attestations',
  webhookSubscriptions: 'webhookSubscriptions',
  webhookCursors: 'webhookCursors',
  webhookDeliveries: 'webhookDeliveries',
  webhookDeadLetters: 'webhookDeadLetters',
  governance: 'governance',
  promotionRequests: 'promotionRequests',
  breakGlassGrants: 'breakGlassGrants',
} as const;

export const indexPlan: readonly IndexPlanEntry[] = [
  {
    collection: collections.services,
    name: 'services_name_unique',
    key: { 'data.name': 1 },
    unique: true,
    serves: 'createService/updateService: one service per name',
  },
  {
    collection: collections.releases,
    name: 'releases_identity_unique',
    key: { 'data.serviceId': 1, 'data.registryHost': 1, 'data.repository': 1, 'data.registryRootDigest': 1 },
    unique: true,
    serves: 'one release per (service, registry host, repository, root digest): the push-event identity check and the final guard of the release upsert',
  },
  {
    collection: collections.releases,
    name: 'releases_service_newest',
    key: { 'data.serviceId': 1, 'data.lastObservedAt': -1, _id: -1 },
    serves: 'getServiceImageReleases and GET /v1/services/:serviceId/image-releases: newest observation first, keyset pagination',
  },
  {
    collection: collections.pushEvents,
    name: 'pushEvents_release',
    key: { releaseId: 1 },
    serves: 'observationCount: the number of stored events of a release (countDocuments on push-event ingestion)',
  },
  {
    collection: collections.pushEvents,
    name: 'pushEvents_tag_ledger',
    key: { serviceId: 1, tag: 1, observedAt: -1, _id: -1 },
    serves: 'the tag ledger GET /v1/services/:serviceId/tags/:tag/history (newest first, keyset pagination, `at`)',
  },
  {
    collection: collections.nodes,
    name: 'nodes_clusterId_id',
    key: { clusterId: 1, _id: 1 },
    serves: 'a cluster\'s node names, sorted (getCluster, listClusters, findClustersWithNodes), stale-node removal and node counts' +
      ' on registerCluster; node owners and claims use _id',
  },
  {
    collection: collections.rollouts,
    name: 'rollouts_service_generation_unique',
    key: { serviceId: 1, generation: -1 },
    unique: true,
    serves: 'THE compare-and-swap: one rollout per (service, generation); rollout history newest first; a service\'s' +
      ' rollouts left pending by a crash (at its generation and the next) and the rollout before a given one, by exact generation',
  },
  {
    collection: collections.rollouts,
    // Led by serviceId (the shard key of rollouts, docs/operations.md "Sharding"); the same constraint as
    // unique idempotencyRecordId alone, which is a hash of the service and the key (src/domain/rollouts.ts).
    // Replaces `rollouts_idempotency_record_unique` ({ idempotencyRecordId: 1 }), which a sharded collection refuses.
    name: 'rollouts_service_idempotency_record_unique',
    key: { serviceId: 1, idempotencyRecordId: 1 },
    unique: true,
    serves: 'at most one rollout per idempotent request; resuming a crashed request (by serviceId and the record, both equalities)',
  },
  {
    collection: collections.rollouts,
    name: 'rollouts_release_mode',
    key: { releaseId: 1, mode: 1 },
    serves: "a release's promotionCount",
  },
  {
    collection: collections.rollouts,
    name: 'rollouts_service_digest',
    key: { serviceId: 1, 'plan.requestedDigest': 1 },
    serves: "pipelines: an upstream stage's rollouts of the digest being promoted (docs/governance.md)",
  },
  {
    collection: collections.services,
    name: 'services_pipeline_promotion',
    key: { 'data.promotionPolicy.pipeline.automaticPromotion.enabled': 1, _id: 1 },
    serves: 'the sweeper: services whose pipeline promotes downstream by itself',
  },
  {
    collection: collections.services,
    name: 'services_lifecycle_open',
    key: { 'rolloutStatus.lifecycle.open': 1, _id: 1 },
    serves: 'the sweeper: services whose current rollout has lifecycle work open (equality on the flag, then by _id)',
  },
  {
    collection: collections.services,
    name: 'services_window_wait',
    key: { 'windowWait.retryAt': 1 },
    sparse: true,
    serves: 'the sweeper: services with a push waiting for a closed window or stop-the-line to open (docs/governance.md)',
  },
  {
    collection: collections.promotionRequests,
    name: 'promotion_requests_service',
    key: { serviceId: 1, createdAt: -1 },
    serves: "a service's promotion requests, newest first (docs/governance.md \"Approvals\")",
  },
  {
    collection: collections.idempotency,
    name: 'idempotency_expiry',
    key: { expiresAt: 1 },
    expireAfterSeconds: 0,
    serves: 'removes idempotency records 48 h after creation (TTL; the local development database has none, so every process sweeps them periodically)',
  },
  {
    collection: collections.reports,
    name: 'reports_service',
    key: { serviceId: 1, rolloutId: 1 },
    serves: 'the stored deployments of a service without the immutable policy (its reports have no rolloutId); a rollout\'s reports are read by _id',
  },
  {
    collection: collections.reports,
    // Led by _id (the shard key of reports, docs/operations.md "Sharding"): the filter names the shard key, as a
    // sharded upsert must. Replaces `reports_fence_unique` ({ fence: 1 }, sparse), which a sharded collection refuses.
    name: 'reports_id_fence_unique',
    key: { _id: 1, fence: 1 },
    unique: true,
    serves: 'THE compare-and-swap of a report: replace the record `{ _id, fence }` whose fence is `<_id>@<version>` (an equality on' +
      ' exactly a unique index\'s fields, served by an index on every MongoDB-compatible server; records written before fences existed have none)',
  },
  {
    collection: collections.reports,
    name: 'reports_rollout',
    key: { rolloutId: 1 },
    serves: 'removing the reports of a rollout long superseded; a rollout\'s records as its attestation\'s evidence and a drift\'s',
  },
  {
    collection: collections.reportClaims,
    name: 'reportClaims_rollout',
    key: { rolloutId: 1 },
    serves: 'removing the claims of a rollout long superseded; claims themselves are by _id',
  },
  {
    collection: collections.statusBuckets,
    name: 'statusBuckets_rollout',
    key: { rolloutId: 1 },
    serves: 'removing the status buckets of a rollout long superseded; buckets themselves are by _id (`<rolloutId>:<bucket>`)',
  },
  {
    collection: collections.events,
    name: 'events_time',
    key: { time: 1 },
    serves: 'removing events past the retention (EVENTS_RETENTION_DAYS); a service\'s events are read by _id (`<serviceId>:<seq>`, `$in`)',
  },
  {
    collection: collections.attestations,
    name: 'attestations_chain_unique',
    key: { serviceId: 1, sequence: 1 },
    unique: true,
    serves: 'ONE attestation per place in a service\'s hash chain (two processes issuing at once cannot fork it); the chain\'s head;' +
      ' listing a service\'s attestations in chain order (keyset on sequence)',
  },
  {
    collection: collections.attestations,
    name: 'attestations_rollout',
    key: { serviceId: 1, rolloutId: 1, sequence: 1 },
    serves: 'a rollout\'s attestations (GET /v1/services/:serviceId/attestations?rolloutId=)',
  },
  {
    collection: collections.attestations,
    name: 'attestations_attach',
    key: { attach: 1 },
    serves: 'attestations whose registry attachment is pending (the sweeper retries them)',
  },
  {
    collection: collections.webhookCursors,
    name: 'webhookCursors_subscription',
    key: { subscriptionId: 1 },
    serves: 'a subscription\'s cursors (one per service; each moved by _id `<subscriptionId>|<serviceId>` compare-and-swap on its seq); removing them with it',
  },
  {
    collection: collections.webhookDeliveries,
    name: 'webhookDeliveries_subscription_at',
    key: { subscriptionId: 1, at: -1 },
    serves: 'a subscription\'s delivery log, newest first; removing it with the subscription',
  },
  {
    collection: collections.webhookDeliveries,
    name: 'webhookDeliveries_at',
    key: { at: 1 },
    serves: 'removing delivery-log entries past the event log\'s retention (EVENTS_RETENTION_DAYS)',
  },
  {
    collection: collections.webhookDeadLetters,
    name: 'webhookDeadLetters_subscription_state',
    key: { subscriptionId: 1, state: 1, deadAt: 1 },
    serves: 'a subscription\'s dead letters oldest first, those queued for redelivery, queueing every dead one' +
      ' (a letter itself is by _id `<subscriptionId>|<eventId>`)',
  },
];
