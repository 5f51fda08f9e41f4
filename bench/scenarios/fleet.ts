import { randomBytes } from 'node:crypto';
import type { Collection, Db, Document } from 'mongodb';
import type { IImmutableImageDeploymentPlan, IImmutableRegistryPushEvent, IService } from '../../src/contracts/index.js';
import { pushEventFingerprint } from '../../src/domain/releases.js';
import { newestFirst, releasePageFilter } from '../../src/store/releaseStore.js';
import { summaryProjection } from '../../src/store/serviceDocument.js';
import type { BenchContext } from '../lib/context.js';
import { bearer, fullReplicas, pushEvent, serviceData } from '../lib/fixtures.js';
import { nextReport, reportOnce, type Reporter } from '../lib/fleet.js';
import { HttpClient, closedLoop, expectStatus } from '../lib/load.js';
import type { Child, CpuProbe } from '../lib/processes.js';
import { emptySamples, merge, summarize, type Samples, type Summary } from '../lib/stats.js';

/**
 * Fleet size (issue 24 item 2): every request path of the service measured on a small fleet and on a large
 * one, in the same run, through the real server over HTTP. Each size has a database of its own on the
 * development database the bench started (`<bench db>_fleet_small`, `…_fleet_large`) and a server process of
 * its own on it (`node dist/src/server.js`, as shipped: it creates the index plan at start-up). The measured
 * requests are the same at both sizes — the same subject services, clusters and bodies —; only the fleet
 * around them differs. Criterion per path: large ÷ small throughput (one request at a time, so 1 ÷ mean
 * latency) ≥ 0.8.
 *
 * What is seeded, per size (docs/benchmarks.md "Fleet size"):
 * - through the API (the same at both sizes): the subject clusters (`fs-subject` 10 nodes, `fs-reg` 100,
 *   `fs-r0…9` 10 each), the history service H on `fs-subject` with 60 releases (every other one tagged
 *   `stable`), promoted `historyRollouts` times (all but the last 3 then moved a year back: the delivery-metrics
 *   window holds the same rollouts at both sizes); the report service R on the ten `fs-r*` clusters, promoted once,
 *   every reporter reported once; one template bulk service with one push event, one template 100-node cluster;
 * - with the driver, copies of the template documents the server wrote (new ids, names, digests, tags and
 *   times, every other field as written; the push events' fingerprints computed as the service computes them):
 *   the other services, 100-node clusters and `bigClusters` clusters of 4,096 nodes (with their node claims),
 *   and the releases with one push event each, round robin over the bulk services.
 */

export interface FleetSize {
  label: 'small' | 'large';
  services: number;
  /** Clusters of BIG_CLUSTER_NODES nodes (the limit of one registration). */
  bigClusters: number;
  /** Nodes in all (the rest in 100-node clusters). */
  nodes: number;
  /** Releases, and as many push events. */
  releases: number;
  /** Rollouts of the history service H (the measured promotions add theirs). */
  historyRollouts: number;
}

export interface FleetPlan {
  rounds: number;
  /** Requests per measured block (at most; a block also stops starting requests after `blockMs`). */
  perBlock: number;
  blockMs: number;
  /** Unmeasured requests per path and size before the first round. */
  warmPerPath: number;
  /** Each store query alone, per size. */
  queryTimes: number;
}

const BIG_CLUSTER_NODES = Number(process.env['BENCH_FLEET_BIG_NODES'] ?? 4_096);
const SUBJECT_CLUSTERS = { subject: 10, reg: 100, reporters: 10, nodesPerReporter: 10 };
const SUBJECT_NODES = SUBJECT_CLUSTERS.subject + SUBJECT_CLUSTERS.reg + SUBJECT_CLUSTERS.reporters * SUBJECT_CLUSTERS.nodesPerReporter;
const HISTORY_RELEASES = 60;
const CLUSTER_PAGE = 20;

/** The two sizes; `BENCH_FLEET_SCALE` (default 1, `--quick` 0.1) scales the large one, never below the small one. */
export function fleetSizes (scale: number): [FleetSize, FleetSize] {
  const small: FleetSize = { label: 'small', services: 100, bigClusters: 1, nodes: 7_096, releases: 300, historyRollouts: 3 };
  const at = (full: number, floor: number): number => Math.max(floor, Math.round(full * scale));
  const large: FleetSize = {
    label: 'large',
    services: at(10_000, small.services),
    bigClusters: at(4, small.bigClusters),
    nodes: at(100_000, small.nodes),
    releases: at(50_000, small.releases),
    historyRollouts: at(2_000, small.historyRollouts),
  };
  return [small, large];
}

export interface FleetPathResult {
  path: string;
  request: string;
  small: Summary;
  large: Summary;
  /** Per round: large ÷ small throughput. */
  rounds: number[];
}

export interface FleetResult {
  sizes: [FleetSize, FleetSize];
  /** What each database holds when measuring starts (document counts by collection). */
  counts: Record<'small' | 'large', Record<string, number>>;
  /** The same once measuring is done (the measured pushes, promotions and registrations add theirs). */
  countsAfter: Record<'small' | 'large', Record<string, number>>;
  seedSeconds: Record<'small' | 'large', number>;
  paths: FleetPathResult[];
  /** CPU (ms) each server process spent per second while nothing was asked of it (its sweepers), before measuring. */
  idleCpuMsPerSecond: Record<'small' | 'large', number>;
  /** The stores' queries behind the paths, each alone with the driver (one at a time) at both sizes. */
  queries: QueryResult[];
}

export interface QueryResult {
  query: string;
  index: string;
  paths: string;
  small: Summary;
  large: Summary;
}

interface Tokens { admin: string, api: string, reader: string }

/** One size's server, database and subjects, and the state its measured requests carry on. */
interface Fleet {
  size: FleetSize;
  server: Child;
  db: Db;
  tokens: Tokens;
  history: { serviceId: string, releaseIds: string[], generation: number };
  reports: { serviceId: string, reporters: Reporter[], next: number };
  bulkServices: Array<{ id: string, repository: string }>;
  pushes: number;
  registrations: number;
  /** A push event of the history service (the release-count query counts its release's). */
  pushEventId: string;
  /** How long the setup took (s). */
  seconds: number;
}

/** A copy of `doc` with every string's occurrences of each `strings` key replaced, and every number found in `numbers` replaced. */
function replicate<T> (doc: T, strings: ReadonlyArray<[string, string]>, numbers: ReadonlyMap<number, number> = new Map()): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return strings.reduce((s, [from, to]) => (s.includes(from) ? s.replaceAll(from, to) : s), v);
    if (typeof v === 'number') return numbers.get(v) ?? v;
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(doc) as T;
}

async function insertInBatches (collection: Collection<Document>, docs: Iterable<Document>): Promise<void> {
  let batch: Document[] = [];
  for (const doc of docs) {
    batch.push(doc);
    if (batch.length === 5_000) {
      await collection.insertMany(batch, { ordered: false });
      batch = [];
    }
  }
  if (batch.length > 0) await collection.insertMany(batch, { ordered: false });
}

const pad = (n: number, width = 6): string => String(n).padStart(width, '0');
const nodeNamesOf = (clusterId: string, n: number): string[] => Array.from({ length: n }, (_, j) => `${clusterId}-n${pad(j, 4)}`);

async function setUp (ctx: BenchContext, size: FleetSize, cleanup: Array<() => Promise<unknown>>): Promise<Fleet> {
  const log = (line: string): void => ctx.opts.log(`fleet ${size.label}: ${line}`);
  const dbName = `${ctx.dbName}_fleet_${size.label}`;
  const db = ctx.client.db(dbName);
  cleanup.push(async () => await db.dropDatabase());
  const server = await ctx.startServer(`fleet-${size.label}`, ctx.mongoUri, { MONGODB_DB: dbName });
  cleanup.push(async () => await server.stop());
  const tokens: Tokens = {
    admin: await ctx.token({ subject: 'bench-admin', role: 'admin' }),
    api: await ctx.token({ subject: 'bench-ci', role: 'api' }),
    reader: await ctx.token({ subject: 'bench-reader', role: 'user' }),
  };
  const call = <T>(status: number[], method: string, path: string, body?: unknown, token = tokens.admin, headers: Record<string, string> = {}) =>
    expectStatus<T>(status, server.url, method, path, { ...bearer(token), ...headers }, body);
  const register = (id: string, nodeNames: string[]) => call([200, 201], 'PUT', `/v1/clusters/${id}`, { nodeNames });
  const createService = async (name: string, placement?: { clusterIds: string[], replicasPerNode: number }) => {
    const repository = `bench/${name}`;
    const created = await call<{ service: IService }>([201], 'POST', '/v1/services', serviceData(name, repository, placement));
    return { id: created.service.id, repository };
  };
  const push = async (serviceId: string, repository: string, seed: string, observedAt: number, tag?: string) => {
    const event = { ...pushEvent(serviceId, repository, seed, observedAt), ...(tag === undefined ? {} : { tag }) };
    await call([201], 'POST', '/v1/registry/push-events', event, tokens.api);
    return event as unknown as IImmutableRegistryPushEvent;
  };
  const promote = (serviceId: string, releaseId: string, generation: number) => call<{ service: IService }>([200], 'POST',
    `/v1/services/${serviceId}/image-releases/${releaseId}/promote`,
    { expectedRolloutGeneration: generation, enableImmutableImage: true, reason: 'benchmark fleet' }, tokens.api,
    { 'idempotency-key': randomBytes(12).toString('hex') });

  // Through the API: the subjects, the same at both sizes, and one template of each bulk document.
  const t0 = Date.now();
  log('the subjects and templates through the API');
  const reporterClusters = Array.from({ length: SUBJECT_CLUSTERS.reporters }, (_, k) => `fs-r${k}`);
  await register('fs-subject', nodeNamesOf('fs-subject', SUBJECT_CLUSTERS.subject));
  await register('fs-reg', nodeNamesOf('fs-reg', SUBJECT_CLUSTERS.reg));
  for (const id of reporterClusters) await register(id, nodeNamesOf(id, SUBJECT_CLUSTERS.nodesPerReporter));
  const templateCluster = 'a-000000';
  await register(templateCluster, nodeNamesOf(templateCluster, 100));

  const base = Date.UTC(2026, 0, 1);
  const history = await createService('fleet-history', { clusterIds: ['fs-subject'], replicasPerNode: 2 });
  const historyReleases: string[] = [];
  let pushEventId = '';
  for (let i = 0; i < HISTORY_RELEASES; i++) {
    const event = await push(history.id, history.repository, `history-${i}`, base + i * 60_000, i % 2 === 0 ? 'stable' : `v1.${i}`);
    historyReleases.push(event.releaseId);
    pushEventId = event.eventId;
  }
  const reportService = await createService('fleet-reports', { clusterIds: reporterClusters, replicasPerNode: 2 });
  const reportRelease = await push(reportService.id, reportService.repository, 'reports-0', base);
  const template = await createService(`fleet-b${pad(0)}`);
  const templateEvent = await push(template.id, template.repository, 'tmpl', base + 1);

  log(`promoting the history service ${size.historyRollouts} times`);
  let generation = 0;
  for (; generation < size.historyRollouts; generation++) await promote(history.id, historyReleases[generation % 2] as string, generation);
  await ageHistory(db, history.id, generation - RECENT_ROLLOUTS);

  log('the report service: one rollout, every reporter reports once');
  const promoted = await promote(reportService.id, reportRelease.releaseId, 0);
  const plan = promoted.service.data.imageDeployment as IImmutableImageDeploymentPlan;
  const deployedAt = Date.now() - 3_600_000;
  const reporters: Reporter[] = [];
  for (const clusterId of reporterClusters) {
    const nodes = nodeNamesOf(clusterId, SUBJECT_CLUSTERS.nodesPerReporter);
    reporters.push({
      serviceId: reportService.id,
      plan,
      clusterId,
      subject: 'coreflow',
      token: await ctx.token({ subject: 'coreflow', role: 'cluster', clusterId }),
      nodes,
      sequence: 0,
      inFlight: false,
      deployments: fullReplicas(plan, reportService.id, nodes).map((d) => ({ ...d, deployedAt })),
    });
  }
  const shape = { reporters: reporters.length, nodesPerReporter: SUBJECT_CLUSTERS.nodesPerReporter, replicasPerNode: 2, reportersPerService: reporters.length };
  await reportOnce({ ...ctx, server }, { name: `fleet-${size.label}`, shape, reporters, serviceIds: [reportService.id] });

  // With the driver: copies of the templates the server wrote.
  log(`seeding ${size.services} services, ${size.nodes} nodes (${size.bigClusters} × ${BIG_CLUSTER_NODES}), ${size.releases} releases and push events`);
  const services = db.collection('services');
  const clusters = db.collection('clusters');
  const nodes = db.collection('nodes');
  const releases = db.collection('releases');
  const pushEvents = db.collection('pushEvents');
  const serviceTemplate = await services.findOne({ _id: template.id as never });
  const clusterTemplate = await clusters.findOne({ _id: templateCluster as never });
  const nodeTemplate = await nodes.findOne({ _id: `${templateCluster}-n0000` as never });
  const releaseTemplate = await releases.findOne({ _id: templateEvent.releaseId as never });
  const eventTemplate = await pushEvents.findOne({ _id: templateEvent.eventId as never });
  if (!serviceTemplate || !clusterTemplate || !nodeTemplate || !releaseTemplate || !eventTemplate) throw new Error('fleet: a template document is missing');

  const bulkServices = [{ id: template.id, repository: template.repository }];
  const templateName = `fleet-b${pad(0)}`;
  const serviceDocs = function * () {
    for (let k = 1; k < size.services - 2; k++) {
      const id = `svc_${randomBytes(12).toString('base64url')}`; // as newServiceId (src/domain/services.ts)
      const name = `fleet-b${pad(k)}`;
      bulkServices.push({ id, repository: `bench/${name}` });
      yield replicate(serviceTemplate, [[template.id, id], [templateName, name]]);
    }
  };
  await insertInBatches(services, serviceDocs());

  const bigNodes = size.bigClusters * BIG_CLUSTER_NODES;
  const smallClusters = Math.floor((size.nodes - SUBJECT_NODES - bigNodes) / 100);
  const clusterIds = [
    ...Array.from({ length: smallClusters - 1 }, (_, k) => ({ id: `a-${pad(k + 1)}`, nodes: 100 })),
    ...Array.from({ length: size.bigClusters }, (_, k) => ({ id: `zz-big-${k}`, nodes: BIG_CLUSTER_NODES })),
  ];
  const clusterDocs = clusterIds.map(({ id, nodes: n }) => ({ ...replicate(clusterTemplate, [[templateCluster, id]]), nodeNames: nodeNamesOf(id, n) }));
  await insertInBatches(clusters, clusterDocs);
  const nodeDocs = function * () {
    for (const { id, nodes: n } of clusterIds) {
      for (const name of nodeNamesOf(id, n)) yield { ...nodeTemplate, _id: name, clusterId: id };
    }
  };
  await insertInBatches(nodes, nodeDocs());

  const templateDigest = templateEvent.registryRootDigest;
  const bulkReleases = size.releases - HISTORY_RELEASES - 2;
  const releaseDocs: Document[] = [];
  const eventDocs: Document[] = [];
  const flush = async (): Promise<void> => {
    await Promise.all([releases.insertMany(releaseDocs.splice(0), { ordered: false }), pushEvents.insertMany(eventDocs.splice(0), { ordered: false })]);
  };
  for (let i = 0; i < bulkReleases; i++) {
    const service = bulkServices[i % bulkServices.length] as { id: string, repository: string };
    const event = pushEvent(service.id, service.repository, `bulk-${i}`, base + 10_000 + i * 1_000) as unknown as IImmutableRegistryPushEvent;
    const strings: Array<[string, string]> = [
      [template.id, service.id], [template.repository, service.repository], [templateDigest, event.registryRootDigest],
      [templateEvent.releaseId, event.releaseId], [templateEvent.eventId, event.eventId], [templateEvent.tag, event.tag],
    ];
    const times = new Map([[templateEvent.observedAt, event.observedAt]]);
    releaseDocs.push(replicate(releaseTemplate, strings, times));
    eventDocs.push({ ...replicate(eventTemplate, strings, times), fingerprint: pushEventFingerprint(event) });
    if (releaseDocs.length === 5_000) await flush();
  }
  if (releaseDocs.length > 0) await flush();
  const seconds = (Date.now() - t0) / 1000;
  log(`set up in ${seconds.toFixed(1)} s`);
  return {
    size,
    server,
    db,
    tokens,
    history: { serviceId: history.id, releaseIds: historyReleases, generation },
    reports: { serviceId: reportService.id, reporters, next: 0 },
    bulkServices,
    pushes: 0,
    registrations: 0,
    pushEventId,
    seconds,
  };
}

/** One measured request path: the request, and what it sends at a given size (its answer's status is the outcome). */
interface PathSpec {
  path: string;
  request: string;
  expected: string;
  send: (fleet: Fleet, client: HttpClient) => Promise<string>;
}

const get = (fleet: Fleet, client: HttpClient, path: string): Promise<string> =>
  client.request('GET', path, bearer(fleet.tokens.reader)).then((res) => String(res.status));

const PATHS: PathSpec[] = [
  {
    path: 'push ingestion',
    request: 'POST /v1/registry/push-events (a new digest of a bulk service, round robin)',
    expected: '201',
    send: async (f, client) => {
      const i = f.pushes++;
      const service = f.bulkServices[i % f.bulkServices.length] as { id: string, repository: string };
      const event = pushEvent(service.id, service.repository, `measured-${randomBytes(6).toString('hex')}`, Date.UTC(2026, 6, 1) + i * 1_000);
      const res = await client.request('POST', '/v1/registry/push-events', bearer(f.tokens.api), JSON.stringify(event));
      return String(res.status);
    },
  },
  {
    path: 'promotion',
    request: 'POST …/image-releases/:releaseId/promote (service H, one writer, the other of two releases)',
    expected: '200',
    send: async (f, client) => {
      const h = f.history;
      const body = JSON.stringify({ expectedRolloutGeneration: h.generation, enableImmutableImage: true, reason: 'benchmark fleet' });
      const res = await client.request('POST', `/v1/services/${h.serviceId}/image-releases/${h.releaseIds[h.generation % 2] as string}/promote`,
        { ...bearer(f.tokens.api), 'idempotency-key': randomBytes(12).toString('hex') }, body);
      if (res.status === 200) h.generation++;
      else if (res.status === 409) h.generation = (JSON.parse(res.body) as { currentGeneration?: number }).currentGeneration ?? h.generation;
      return String(res.status);
    },
  },
  {
    path: 'report',
    request: 'POST /v1/deployment-snapshots (service R: 10 reporters × 10 nodes × 2 replicas, round robin, steady state)',
    expected: '200',
    send: async (f, client) => {
      const r = f.reports.reporters[f.reports.next++ % f.reports.reporters.length] as Reporter;
      const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
      return String(res.status);
    },
  },
  { path: 'rollout view', request: 'GET /v1/services/R/rollout', expected: '200', send: (f, c) => get(f, c, `/v1/services/${f.reports.serviceId}/rollout`) },
  { path: 'service listing', request: 'GET /v1/services (first page of 50, by name)', expected: '200', send: (f, c) => get(f, c, '/v1/services') },
  {
    path: 'cluster listing',
    request: `GET /v1/clusters?limit=${CLUSTER_PAGE} (first page: ${CLUSTER_PAGE} clusters of 100 nodes)`,
    expected: '200',
    send: (f, c) => get(f, c, `/v1/clusters?limit=${CLUSTER_PAGE}`),
  },
  {
    path: 'release listing',
    request: `GET /v1/services/H/image-releases (first page of 50 of ${HISTORY_RELEASES})`,
    expected: '200',
    send: (f, c) => get(f, c, `/v1/services/${f.history.serviceId}/image-releases`),
  },
  {
    path: 'history listing',
    request: 'GET /v1/services/H/rollouts (first page)',
    expected: '200',
    send: (f, c) => get(f, c, `/v1/services/${f.history.serviceId}/rollouts`),
  },
  {
    path: 'tag history',
    request: `GET /v1/services/H/tags/stable/history (${HISTORY_RELEASES / 2} entries)`,
    expected: '200',
    send: (f, c) => get(f, c, `/v1/services/${f.history.serviceId}/tags/stable/history`),
  },
  {
    path: 'delivery metrics',
    request: 'GET /v1/services/H/delivery-metrics',
    expected: '200',
    send: (f, c) => get(f, c, `/v1/services/${f.history.serviceId}/delivery-metrics`),
  },
  {
    path: 'cluster registration',
    request: 'PUT /v1/clusters/fs-reg (100 nodes; every registration swaps one node in and one out)',
    expected: '200',
    send: async (f, client) => {
      const i = f.registrations++;
      const names = nodeNamesOf('fs-reg', SUBJECT_CLUSTERS.reg + 1).filter((_, j) => j !== (i % 2 === 0 ? 0 : SUBJECT_CLUSTERS.reg));
      const res = await client.request('PUT', '/v1/clusters/fs-reg', bearer(f.tokens.admin), JSON.stringify({ nodeNames: names }));
      return String(res.status);
    },
  },
];

/**
 * The queries the paths make whose cost could grow with the fleet, as the stores make them (filter, sort,
 * limit, projection: src/store/*), each named with the index of the index plan (src/store/indexPlan.ts)
 * that serves it on MongoDB.
 */
interface QuerySpec {
  query: string;
  index: string;
  paths: string;
  run: (f: Fleet) => Promise<unknown>;
}

const QUERIES: QuerySpec[] = [
  {
    query: 'a service\'s releases, newest first (ReleaseStore.listByService, limit 51)',
    index: 'releases_service_newest',
    paths: 'release listing',
    run: (f) => f.db.collection('releases').find(releasePageFilter(f.history.serviceId) as Document).sort(newestFirst).limit(51).toArray(),
  },
  {
    query: 'when the page\'s releases last succeeded (RolloutStore.lastSucceeded: serviceId, releaseId $in, succeededAt)',
    index: 'rollouts_service_generation_unique (prefix)',
    paths: 'release listing',
    run: (f) => f.db.collection('rollouts').find(
      { serviceId: f.history.serviceId, releaseId: { $in: f.history.releaseIds.slice(-50) }, succeededAt: { $exists: true } },
      { projection: { _id: 0, releaseId: 1, succeededAt: 1 } }).toArray(),
  },
  {
    query: 'the page\'s signature verdicts (ReleaseStore.findVerifications: `_id` $in AND verification $exists)',
    index: '_id (the filter names more fields)',
    paths: 'release listing',
    run: (f) => f.db.collection('releases').find({ _id: { $in: f.history.releaseIds.slice(-50) as never[] }, verification: { $exists: true } },
      { projection: { verification: 1 } }).toArray(),
  },
  {
    query: 'a tag\'s ledger (PushEventStore.tagHistory: serviceId, tag, newest first, limit 51)',
    index: 'pushEvents_tag_ledger',
    paths: 'tag history',
    run: (f) => f.db.collection('pushEvents').find({ serviceId: f.history.serviceId, tag: 'stable' },
      { projection: { _id: 1, releaseId: 1, registryRootDigest: 1, digestPinnedImageReference: 1, observedAt: 1, actorUserId: 1 } })
      .sort({ observedAt: -1, _id: -1 }).limit(51).toArray(),
  },
  {
    query: 'a release\'s stored push events (PushEventStore.countForRelease: releaseId and the identity)',
    index: 'pushEvents_release',
    paths: 'push ingestion',
    run: async (f) => {
      const event = await f.db.collection('pushEvents').findOne({ _id: f.pushEventId as never });
      if (!event) throw new Error('fleet: no push event to count');
      const { releaseId, serviceId, registryHost, repository, registryRootDigest, imageId, manifestMediaType } = event;
      const identity = { releaseId, serviceId, registryHost, repository, registryRootDigest, imageId, manifestMediaType };
      return await f.db.collection('pushEvents').countDocuments(identity);
    },
  },
  {
    query: 'a push\'s release upsert (ReleaseStore.recordObservation: `_id` AND the identity; its filter, as a findOne)',
    index: '_id (the filter names more fields)',
    paths: 'push ingestion',
    run: async (f) => {
      const releases = f.db.collection('releases');
      const release = await releases.findOne({ _id: f.history.releaseIds[0] as never });
      const data = release?.['data'] as Document | undefined;
      if (!data) throw new Error('fleet: no release to find');
      return await releases.findOne({
        _id: f.history.releaseIds[0] as never,
        'data.serviceId': data['serviceId'],
        'data.registryHost': data['registryHost'],
        'data.repository': data['repository'],
        'data.registryRootDigest': data['registryRootDigest'],
        'data.imageId': data['imageId'],
        'data.manifestMediaType': data['manifestMediaType'],
      });
    },
  },
  {
    query: 'a cluster\'s claims (ClusterStore.findById: clusterId, sorted by _id)',
    index: 'nodes_clusterId_id',
    paths: 'cluster registration',
    run: (f) => f.db.collection('nodes').find({ clusterId: 'fs-reg' }, { projection: { _id: 1 } }).sort({ _id: 1 }).toArray(),
  },
  {
    query: 'a service\'s rollouts, newest first (RolloutStore.list, limit 51)',
    index: 'rollouts_service_generation_unique (prefix)',
    paths: 'history listing',
    run: (f) => f.db.collection('rollouts').find({ serviceId: f.history.serviceId }, { projection: { serviceAfter: 0 } })
      .sort({ generation: -1 }).limit(51).toArray(),
  },
  {
    query: 'a service\'s rollout outcomes in a 30-day window (RolloutStore.listOutcomes: back to the first one created before it)',
    index: 'rollouts_service_generation_unique (prefix)',
    paths: 'delivery metrics, promotion',
    run: async (f) => {
      const since = Date.now() - 30 * 24 * 3_600_000;
      const outcomes: Document[] = [];
      const projection = { generation: 1, mode: 1, releaseId: 1, createdAt: 1, succeededAt: 1, failure: 1, ended: 1 };
      for (let before: number | undefined; ;) { // keyset pages of 128, as the store reads them
        const filter = before === undefined ? { serviceId: f.history.serviceId } : { serviceId: f.history.serviceId, generation: { $lt: before } };
        const page = await f.db.collection('rollouts').find(filter, { projection }).sort({ generation: -1 }).limit(128).toArray();
        outcomes.push(...page);
        if (page.length < 128 || page.some((doc) => (doc['createdAt'] as number) < since)) return outcomes;
        before = page[page.length - 1]?.['generation'] as number;
      }
    },
  },
  {
    query: 'the plan\'s compare-and-swap onto the service (PlanStore.applyRollout: `_id` AND generation, status revision, …; its shape, as a findOne)',
    index: '_id (the filter names more fields)',
    paths: 'promotion',
    run: (f) => f.db.collection('services').findOne({ _id: f.history.serviceId as never, 'data.imageDeployment.rolloutGeneration': { $gte: 0 } },
      { projection: { _id: 1 } }),
  },
  {
    query: 'a release\'s promotions (RolloutStore.countPromotions: releaseId, mode $in)',
    index: 'rollouts_release_mode',
    paths: 'promotion',
    run: (f) => f.db.collection('rollouts').countDocuments({ releaseId: f.history.releaseIds[0], mode: { $in: ['promotion', 'automatic'] } }),
  },
  {
    query: 'the nodes of the target clusters (ClusterStore.findClustersWithNodes: clusterId $in, sorted)',
    index: 'nodes_clusterId_id',
    paths: 'promotion',
    run: (f) => f.db.collection('nodes').find({ clusterId: { $in: ['fs-subject'] } }, { projection: { _id: 1, clusterId: 1 } })
      .sort({ clusterId: 1, _id: 1 }).toArray(),
  },
  {
    query: `the nodes of a page of ${CLUSTER_PAGE} clusters (ClusterStore.list)`,
    index: 'nodes_clusterId_id',
    paths: 'cluster listing',
    run: (f) => f.db.collection('nodes').find({ clusterId: { $in: Array.from({ length: CLUSTER_PAGE }, (_, k) => `a-${pad(k)}`) } },
      { projection: { _id: 1, clusterId: 1 } }).sort({ clusterId: 1, _id: 1 }).toArray(),
  },
  {
    query: 'a registration\'s node count and stale nodes (ClusterStore.countNodes, removeStaleNodes: clusterId first)',
    index: 'nodes_clusterId_id',
    paths: 'cluster registration',
    run: (f) => f.db.collection('nodes').countDocuments({ clusterId: 'fs-reg', _id: { $in: nodeNamesOf('fs-reg', SUBJECT_CLUSTERS.reg) as never[] } }),
  },
  {
    query: 'services by name (CatalogueStore.list, limit 51)',
    index: 'services_name_unique',
    paths: 'service listing',
    run: (f) => f.db.collection('services').find({}, { projection: summaryProjection }).sort({ 'data.name': 1 }).limit(51).toArray(),
  },
  {
    query: 'the sweeper\'s open lifecycles (LifecycleStore.openLifecycles, every 5 s per process)',
    index: 'services_lifecycle_open',
    paths: 'all (background)',
    run: (f) => f.db.collection('services').find({ 'rolloutStatus.lifecycle.open': true }, { projection: { _id: 1 } }).sort({ _id: 1 }).limit(500).toArray(),
  },
];

/** Each query alone (one at a time) at both sizes, alternately, `times` times each after two unmeasured. */
async function measureQueries (fleets: readonly [Fleet, Fleet], times: number, maxMs: number): Promise<QueryResult[]> {
  const out: QueryResult[] = [];
  for (const spec of QUERIES) {
    const samples = { small: emptySamples(), large: emptySamples() };
    for (const f of fleets) for (let i = 0; i < 2; i++) await spec.run(f);
    for (let round = 0; round < 2; round++) {
      for (const f of round === 0 ? fleets : [...fleets].reverse()) {
        const op = async (): Promise<string> => { await spec.run(f); return 'ok'; };
        merge(samples[f.size.label], await closedLoop({ concurrency: 1, total: Math.ceil(times / 2), maxMs, op }));
      }
    }
    out.push({ query: spec.query, index: spec.index, paths: spec.paths, small: summarize(samples.small), large: summarize(samples.large) });
  }
  return out;
}

const block = async (ctx: BenchContext, fleet: Fleet, spec: PathSpec, total: number, maxMs: number): Promise<Samples> => {
  const client = new HttpClient(fleet.server.url, 1);
  const cpu: CpuProbe[] = [{ ...fleet.server.cpu, name: 'service' }, ...(ctx.probes.db ? [ctx.probes.db] : [])];
  try {
    return await closedLoop({ concurrency: 1, total, maxMs, cpu, op: async () => await spec.send(fleet, client) });
  } finally {
    client.close();
  }
};

async function collectionCounts (db: Db): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of ['services', 'clusters', 'nodes', 'releases', 'pushEvents', 'rollouts', 'reports']) out[name] = await db.collection(name).countDocuments();
  return out;
}

export async function runFleet (ctx: BenchContext, plan: FleetPlan, scale: number): Promise<FleetResult> {
  const { log } = ctx.opts;
  const sizes = fleetSizes(scale);
  const fleets: Fleet[] = [];
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    for (const size of sizes) fleets.push(await setUp(ctx, size, cleanup));
    const [small, large] = fleets as [Fleet, Fleet];
    const counts = { small: await collectionCounts(small.db), large: await collectionCounts(large.db) };
    log(`fleet: documents — small ${JSON.stringify(counts.small)}, large ${JSON.stringify(counts.large)}`);
    // What each server spends with nothing asked of it (its sweepers), over the same 3 s.
    const idle = { small: small.server.cpu.read(), large: large.server.cpu.read() };
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const idleCpuMsPerSecond = { small: (small.server.cpu.read() - idle.small) / 3, large: (large.server.cpu.read() - idle.large) / 3 };

    for (const spec of PATHS) for (const f of fleets) await block(ctx, f, spec, plan.warmPerPath, 2_000);
    const merged = PATHS.map(() => ({ small: emptySamples(), large: emptySamples(), rounds: [] as number[] }));
    for (let round = 1; round <= plan.rounds; round++) {
      const forward = round % 2 === 1;
      for (const [i, spec] of (forward ? PATHS.map((s, j) => [j, s] as const) : PATHS.map((s, j) => [j, s] as const).reverse())) {
        const into = merged[i] as (typeof merged)[number];
        const these: Partial<Record<'small' | 'large', Summary>> = {};
        for (const f of forward ? [small, large] : [large, small]) {
          const samples = await block(ctx, f, spec, plan.perBlock, plan.blockMs);
          these[f.size.label] = summarize(samples);
          merge(into[f.size.label], samples);
        }
        const [s, l] = [these.small as Summary, these.large as Summary];
        into.rounds.push(l.throughput / s.throughput);
        log(`  fleet ${spec.path}: round ${round}/${plan.rounds}: small ${s.throughput.toFixed(0)}/s p50 ${s.p50.toFixed(1)} ms, ` +
          `large ${l.throughput.toFixed(0)}/s p50 ${l.p50.toFixed(1)} ms`);
      }
    }
    const paths = PATHS.map((spec, i) => {
      const m = merged[i] as (typeof merged)[number];
      const result = { path: spec.path, request: spec.request, small: summarize(m.small), large: summarize(m.large), rounds: m.rounds };
      for (const label of ['small', 'large'] as const) {
        const unexpected = Object.keys(result[label].outcomes).filter((k) => k !== spec.expected);
        if (unexpected.length > 0) log(`  WARNING fleet ${spec.path} (${label}): outcomes ${JSON.stringify(result[label].outcomes)}`);
      }
      return result;
    });
    const seedSeconds = { small: small.seconds, large: large.seconds };
    const countsAfter = { small: await collectionCounts(small.db), large: await collectionCounts(large.db) };
    log(`fleet: documents after measuring — small ${JSON.stringify(countsAfter.small)}, large ${JSON.stringify(countsAfter.large)}`);
    log('fleet: the stores\' queries alone');
    const queries = await measureQueries([small, large], plan.queryTimes, plan.blockMs);
    return { sizes, counts, countsAfter, seedSeconds, paths, idleCpuMsPerSecond, queries };
  } finally {
    // The servers first, then their databases (the large one holds the JVM's heap).
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  }
}

/** The bound of the criterion: large ÷ small throughput. */
export const FLEET_BOUND = 0.8;

const perRequest = (s: Summary, key: string): string => {
  const v = s.cpuPerOpMs[key];
  return v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(2);
};
const msOf = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const spreadOf = (values: number[]): string => (values.length === 0 ? '' : `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`);
const n = (v: number): string => v.toLocaleString('en-US');

/** What each size holds, as a line of text. */
export function fleetSizesLine (r: FleetResult): string {
  const of = (label: 'small' | 'large'): string => {
    const c = r.counts[label];
    return `${label}: ${n(c['services'] ?? 0)} services, ${n(c['clusters'] ?? 0)} clusters, ${n(c['nodes'] ?? 0)} nodes, ` +
      `${n(c['releases'] ?? 0)} releases, ${n(c['pushEvents'] ?? 0)} push events, ${n(c['rollouts'] ?? 0)} rollouts, ` +
      `${n(c['reports'] ?? 0)} report records (set up in ${r.seedSeconds[label].toFixed(0)} s)`;
  };
  const after = (label: 'small' | 'large'): string => `${n(r.countsAfter[label]['rollouts'] ?? 0)} rollouts and ` +
    `${n(r.countsAfter[label]['releases'] ?? 0)} releases at the ${label} size`;
  return `${of('small')}; ${of('large')}. After measuring: ${after('small')}, ${after('large')}. ` +
    `Idle server CPU (sweepers): ${r.idleCpuMsPerSecond.small.toFixed(1)} ms/s (small), ` +
    `${r.idleCpuMsPerSecond.large.toFixed(1)} ms/s (large)`;
}

export function fleetTable (r: FleetResult): string {
  const lines = [
    '| path | request | small: requests/s | small: p50 | small: p99 | large: requests/s | large: p50 | large: p99 | ' +
      '**large ÷ small throughput** (per round) | small ÷ large p50 | server CPU / request small → large | database CPU / request small → large | ' +
      `≥ ${FLEET_BOUND} |`,
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const p of r.paths) {
    const q = p.large.throughput / p.small.throughput;
    lines.push(`| ${p.path} | ${p.request} | ${p.small.throughput.toFixed(1)} | ${msOf(p.small.p50)} ms | ${msOf(p.small.p99)} ms | ` +
      `${p.large.throughput.toFixed(1)} | ${msOf(p.large.p50)} ms | ${msOf(p.large.p99)} ms | **${q.toFixed(2)}** (${spreadOf(p.rounds)}) | ` +
      `${(p.small.p50 / p.large.p50).toFixed(2)} | ${perRequest(p.small, 'service')} → ${perRequest(p.large, 'service')} ms | ` +
      `${perRequest(p.small, 'db')} → ${perRequest(p.large, 'db')} ms | ${q >= FLEET_BOUND ? 'holds' : 'does not hold'} |`);
  }
  return lines.join('\n');
}

export function fleetQueriesTable (r: FleetResult): string {
  const lines = [
    '| query (store) | index on MongoDB | paths | small: p50 | large: p50 | large ÷ small p50 |',
    '| --- | --- | --- | ---: | ---: | ---: |',
  ];
  for (const q of r.queries) {
    lines.push(`| ${q.query} | \`${q.index}\` | ${q.paths} | ${msOf(q.small.p50)} ms | ${msOf(q.large.p50)} ms | ${(q.large.p50 / q.small.p50).toFixed(2)} |`);
  }
  return lines.join('\n');
}

export function fleetCriteria (r: FleetResult): Array<{ name: string, measured: string, holds: boolean }> {
  return r.paths.map((p) => {
    const q = p.large.throughput / p.small.throughput;
    const unexpected = (['small', 'large'] as const).flatMap((label) => {
      const other = Object.entries(p[label].outcomes).filter(([k]) => !k.startsWith('2'));
      return other.length === 0 ? [] : [`${label}: ${other.map(([k, c]) => `${c} × ${k}`).join(', ')}`];
    });
    return {
      name: `fleet size, ${p.path}: large ÷ small throughput ≥ ${FLEET_BOUND}`,
      measured: `${p.large.throughput.toFixed(1)} ÷ ${p.small.throughput.toFixed(1)} requests/s = ${q.toFixed(2)} (per round ${spreadOf(p.rounds)}); ` +
        `p50 ${msOf(p.small.p50)} → ${msOf(p.large.p50)} ms${unexpected.length > 0 ? `; answers other than 2xx — ${unexpected.join('; ')}` : ''}`,
      holds: q >= FLEET_BOUND && unexpected.length === 0,
    };
  });
}

/** Rollouts of the history service left in the delivery-metrics window (its default 30 days) at every size. */
const RECENT_ROLLOUTS = 3;

/**
 * Moves the history service's rollouts before generation `before` a year back (created, succeeded,
 * failed, ended): a long history, as a service that deployed 2,000 times has, with the same rollouts
 * in the delivery-metrics window at every size. Its cost grows with the rollouts in the window (the
 * answer is made of them), not with those before it (docs/benchmarks.md "Fleet size").
 */
async function ageHistory (db: Db, serviceId: string, before: number): Promise<void> {
  if (before <= 0) return;
  const rollouts = db.collection('rollouts');
  const older = { serviceId, generation: { $lt: before } };
  for (const field of ['createdAt', 'succeededAt', 'failure.at', 'ended.at']) {
    await rollouts.updateMany({ ...older, [field]: { $exists: true } }, { $inc: { [field]: -YEAR_MS } });
  }
}

const YEAR_MS = 365 * 24 * 3_600_000;
