import type { Collection, Document } from 'mongodb';
import type { IImmutableImageDeploymentPlan, IService } from '../../src/contracts/index.js';
import { httpLoop, measureTriple, probesFor, serverCounter, setCanned, type BenchContext, type Triple } from '../lib/context.js';
import { bearer, createServiceWithReleases, fullReplicas, reportBody, seedClusters } from '../lib/fixtures.js';
import { HttpClient, closedLoop, expectStatus } from '../lib/load.js';
import { STATUS_EVENTS_KEPT } from '../../src/domain/rolloutStatus.js';

/**
 * Report ingestion: a fleet of Coreflow reporters, each reporting snapshots of its own nodes'
 * replicas (all running and verified) for the current rollout of the service it runs,
 * concurrently. Each reporter has at most one report in flight and its sequence only grows,
 * as a real Coreflow's.
 *
 * Fleet layout: reporter k is the Coreflow of cluster k, with `nodesPerReporter` nodes ×
 * `replicasPerNode` replicas; services hold `reportersPerService` reporters each (service s is
 * placed on clusters s·n … s·n+n−1), so a service's rollout status holds at most that many
 * reporters whatever the fleet size. Load: min(R, 10) reports in flight; each next report comes
 * from a reporter picked at random among those not in flight, so reports to one service collide
 * (status compare-and-swap conflicts) as often as chance makes them.
 */

export interface FleetShape {
  reporters: number;
  nodesPerReporter: number;
  replicasPerNode: number;
  reportersPerService: number;
}

interface Reporter {
  serviceId: string;
  plan: IImmutableImageDeploymentPlan;
  clusterId: string;
  subject: string;
  token: string;
  nodes: string[];
  sequence: number;
  inFlight: boolean;
  deployments: Array<Record<string, unknown>>;
}

interface Fleet {
  reporters: Reporter[];
  serviceIds: string[];
}

async function setupFleet (ctx: BenchContext, name: string, shape: FleetShape): Promise<Fleet> {
  const clusters = Array.from({ length: shape.reporters }, (_, k) => ({
    id: `${name}-c${k}`,
    nodeNames: Array.from({ length: shape.nodesPerReporter }, (_, j) => `${name}-c${k}-n${j}`),
  }));
  await seedClusters(ctx, clusters);
  const api = await ctx.token({ subject: 'bench-ci', role: 'api' });
  const reporters: Reporter[] = [];
  const serviceIds: string[] = [];
  for (let first = 0; first < clusters.length; first += shape.reportersPerService) {
    const mine = clusters.slice(first, first + shape.reportersPerService);
    const placement = { clusterIds: mine.map((c) => c.id), replicasPerNode: shape.replicasPerNode };
    const service = await createServiceWithReleases(ctx, `${name}-s${first / shape.reportersPerService}`, 1, placement);
    const promoted = await expectStatus<{ service: IService }>([200], ctx.server.url, 'POST',
      `/v1/services/${service.serviceId}/image-releases/${service.releaseIds[0] ?? ''}/promote`,
      { ...bearer(api), 'idempotency-key': `${name}-first` }, { expectedRolloutGeneration: 0, enableImmutableImage: true, reason: 'benchmark fleet' });
    const plan = promoted.service.data.imageDeployment;
    if (!plan) throw new Error('promotion answered without a plan');
    serviceIds.push(service.serviceId);
    for (const cluster of mine) {
      reporters.push({
        serviceId: service.serviceId,
        plan,
        clusterId: cluster.id,
        subject: 'coreflow',
        token: await ctx.token({ subject: 'coreflow', role: 'cluster', clusterId: cluster.id }),
        nodes: cluster.nodeNames,
        sequence: 0,
        inFlight: false,
        // The plan's replicasPerNode is the placement's: every replica of the reporter's nodes, verified.
        deployments: fullReplicas(plan, service.serviceId, cluster.nodeNames),
      });
    }
  }
  return { reporters, serviceIds };
}

/**
 * A long-lived service's status history is full: 100 events (STATUS_EVENTS_KEPT), about 25
 * rollouts' worth. Seeded with the driver in front of the fleet's own few events (revision 0:
 * older than anything here; nothing in the benchmark replays them).
 */
async function seedStatusHistory (ctx: BenchContext, serviceIds: string[]): Promise<void> {
  const services = ctx.db.collection('services') as Collection<Document>;
  for (const serviceId of serviceIds) {
    const doc = await services.findOne({ _id: serviceId as never }, { projection: { statusEvents: 1 } });
    const own = (doc?.['statusEvents'] as Document[] | undefined) ?? [];
    const last = own[own.length - 1];
    if (!last) continue;
    const history = Array.from({ length: STATUS_EVENTS_KEPT }, (_, i) =>
      ({ ...last, revision: 0, rolloutId: `ro_history-${i}`, at: (last['at'] as number) - (STATUS_EVENTS_KEPT - i) * 60_000 }));
    await services.updateOne({ _id: serviceId as never }, { $set: { statusEvents: [...history, ...own].slice(-STATUS_EVENTS_KEPT) } });
  }
}

/** A random reporter with no report in flight (there is one: in flight ≤ reporters). */
function takeReporter (fleet: Fleet): Reporter {
  const n = fleet.reporters.length;
  let k = Math.floor(Math.random() * n);
  for (let tried = 0; tried < n; tried++, k = (k + 1) % n) {
    const r = fleet.reporters[k] as Reporter;
    if (!r.inFlight) {
      r.inFlight = true;
      return r;
    }
  }
  throw new Error('every reporter is in flight');
}

/** The reporter's next snapshot (sequence + 1, reported now): the tests' report body (test/support/reports.ts). */
function nextReport (r: Reporter): Record<string, unknown> {
  r.sequence++;
  return reportBody(r.plan, r.serviceId, { session: `session-${r.clusterId}`, sequence: r.sequence, nodeNames: r.nodes, deployments: r.deployments });
}

/**
 * Floor (b) for one report: exactly the database round trips the handler makes
 * (src/domain/reports.ts, src/store/{serviceStore,clusterStore,deploymentStore}.ts), in the same
 * order, with documents of the same size, and the same compare-and-swap on the status revision
 * (re-read and retry on a conflict) — but no HTTP, no token, no schema, no evidence checks:
 *   findOne(service, without the status history) → find(node owners) → bulkWrite(upsert
 *   deployments) → deleteMany(stale deployments) → updateOne(status CAS) [→ findOne → updateOne …].
 * It writes the status and evidence it read with this reporter's entry updated (same bytes as
 * the service writes, a real change, and the status stays valid), so it runs on the server's
 * own documents and collections.
 */
function driverReport (ctx: BenchContext, conflicts: { n: number }) {
  const services = ctx.db.collection('services') as Collection<Document>;
  const nodes = ctx.db.collection('nodes') as Collection<Document>;
  const deployments = ctx.db.collection('deployments') as Collection<Document>;
  return async (r: Reporter): Promise<string> => {
    const body = nextReport(r);
    const reportedAt = body['reportedAt'] as number;
    const serviceId = r.serviceId;
    let doc = await services.findOne({ _id: serviceId as never }, { projection: { statusEvents: 0 } });
    if (!doc) throw new Error('service missing');
    await nodes.find({ _id: { $in: r.nodes as never[] } }, { projection: { _id: 1, clusterId: 1 } }).toArray();
    const reporterId = `${r.clusterId}/${r.subject}`;
    await deployments.bulkWrite(r.deployments.map((d) => ({
      replaceOne: {
        filter: { _id: `${serviceId}/${d['id'] as string}` as never },
        replacement: { serviceId, clusterId: r.clusterId, nodeName: d['nodeName'], deployment: d, reportedAt, reportedBy: reporterId },
        upsert: true,
      },
    })), { ordered: false });
    await deployments.deleteMany({
      serviceId,
      clusterId: r.clusterId,
      nodeName: { $in: r.nodes },
      _id: { $nin: r.deployments.map((d) => `${serviceId}/${d['id'] as string}`) as never[] },
    });
    for (let attempt = 0; attempt < 64; attempt++) {
      const revision = (doc['statusRevision'] as number | undefined) ?? 0;
      const now = Date.now();
      const { status, evidence } = withThisReport(doc, reporterId, r.sequence, reportedAt, now);
      const result = await services.updateOne(
        {
          _id: serviceId as never,
          'data.imageDeployment.rolloutId': r.plan.rolloutId,
          ...(revision === 0 ? { statusRevision: { $exists: false } } : { statusRevision: revision }),
        },
        { $set: { 'data.imageRolloutStatus': status, rolloutEvidence: evidence, statusRevision: revision + 1, updatedAt: now } }
      );
      if (result.matchedCount === 1) return '200';
      conflicts.n++;
      doc = await services.findOne({ _id: serviceId as never }, { projection: { statusEvents: 0 } });
      if (!doc) throw new Error('service missing');
    }
    return 'cas-exhausted';
  };
}

/**
 * The status and evidence as read, with this reporter's entry carrying the new sequence and
 * time: a write of the same size that really changes the document, as the service's does.
 */
function withThisReport (doc: Document, reporterId: string, sequence: number, reportedAt: number, now: number): { status: Document, evidence: Document } {
  const status = (doc['data'] as Document)['imageRolloutStatus'] as Document;
  const evidence = doc['rolloutEvidence'] as Document;
  return {
    status: {
      ...status,
      updatedAt: now,
      reporters: (status['reporters'] as Document[]).map((e) => (e['reporterId'] === reporterId ? { ...e, reportSequence: sequence, reportedAt } : e)),
    },
    evidence: {
      ...evidence,
      reporters: (evidence['reporters'] as Document[]).map((e) => (e['reporterId'] === reporterId ? { ...e, reportedAt } : e)),
    },
  };
}

export interface IngestionMeasurement {
  /** Reports in flight (closed loop). */
  concurrency: number;
  triple: Triple;
  /** Status compare-and-swap conflicts (each one a re-read and another write) per report; server: from GET /metrics when it has the series. */
  casRetriesPerReport: { server: number | null, driver: number };
}

export interface IngestionResult {
  shape: FleetShape;
  services: number;
  /** Size of one service document in steady state (approximately: its JSON length). */
  serviceDocumentBytes: number;
  /** Deployment documents in the collection (all fleets so far). */
  deploymentDocuments: number;
  measurements: IngestionMeasurement[];
}

const CONFLICT_SERIES = 'cloudly_release_cas_conflicts_total{kind="rollout-status-revision"}';

/**
 * Sets up a fleet, lets every reporter report once (statuses reach their full size), then, for
 * each concurrency, warms up and measures the three subjects in interleaved rounds.
 */
export interface IngestionLevel {
  /** Reports in flight (at most the number of reporters). */
  concurrency: number;
  /** Reports per measured block (there are `rounds` blocks per subject). */
  perBlock: number;
  /** Warm-up of the server before measuring (the bare-driver floor gets 0.6 of it). */
  warmMs: number;
}

/** `rounds`: interleaved rounds per concurrency (default 3). */
export async function runIngestion (
  ctx: BenchContext, name: string, shape: FleetShape, levels: IngestionLevel[], rounds: Record<number, number>,
): Promise<IngestionResult> {
  const { log } = ctx.opts;
  log(`ingestion ${name}: ${shape.reporters} reporters × ${shape.nodesPerReporter} nodes × ${shape.replicasPerNode} replicas, ` +
    `${shape.reportersPerService} reporters per service: setting up`);
  const fleet = await setupFleet(ctx, name, shape);

  const withReporter = async (op: (r: Reporter) => Promise<string>): Promise<string> => {
    const r = takeReporter(fleet);
    try {
      return await op(r);
    } finally {
      r.inFlight = false;
    }
  };
  const httpBlock = async (url: string, subject: 'server' | 'fastify', concurrency: number, total: number, maxMs?: number) =>
    await httpLoop(ctx, subject, url, { concurrency, total, maxMs }, async (client) => await withReporter(async (r) => {
      const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
      return String(res.status);
    }));
  const floorConflicts = { n: 0 };
  const floorOp = driverReport(ctx, floorConflicts);
  const driverBlock = (concurrency: number, total: number, maxMs?: number) =>
    closedLoop({ concurrency, total, ...(maxMs === undefined ? {} : { maxMs }), cpu: probesFor(ctx, 'driver'), op: () => withReporter(floorOp) });

  // Every reporter once, in order: each status then holds all its reporters.
  const firstConcurrency = Math.min(fleet.reporters.length, 10);
  const firstClient = new HttpClient(ctx.server.url, firstConcurrency);
  let lastAnswer = '';
  try {
    const first = await closedLoop({
      concurrency: firstConcurrency,
      total: fleet.reporters.length,
      op: async (_w, i) => {
        const r = fleet.reporters[i] as Reporter;
        const res = await firstClient.request('POST', '/v1/deployment-snapshots', bearer(r.token), JSON.stringify(nextReport(r)));
        if (res.status !== 200) log(`first report of ${r.clusterId}: ${res.status} ${res.body.slice(0, 300)}`);
        else lastAnswer = res.body;
        return String(res.status);
      },
    });
    if ((first.outcomes['200'] ?? 0) !== first.ops) throw new Error(`first reports failed: ${JSON.stringify(first.outcomes)}`);
  } finally {
    firstClient.close();
  }
  await setCanned(ctx, 'report', 200, lastAnswer);
  await seedStatusHistory(ctx, fleet.serviceIds);

  const measurements: IngestionMeasurement[] = [];
  for (const { concurrency: wanted, perBlock, warmMs } of levels) {
    const concurrency = Math.min(wanted, fleet.reporters.length);
    // Warm-up by time (JIT of the server, this process and the database), not measured.
    const warm = await httpBlock(ctx.server.url, 'server', concurrency, Number.MAX_SAFE_INTEGER, warmMs);
    if ((warm.outcomes['200'] ?? 0) !== warm.ops) throw new Error(`warm-up reports failed: ${JSON.stringify(warm.outcomes)}`);
    await driverBlock(concurrency, Number.MAX_SAFE_INTEGER, warmMs * 0.6);
    await httpBlock(ctx.fastify.url, 'fastify', concurrency, Number.MAX_SAFE_INTEGER, 500);
    let serverConflicts: number | undefined = 0;
    floorConflicts.n = 0;
    const triple = await measureTriple(ctx, `ingestion ${name}, ${concurrency} in flight`, rounds[concurrency] ?? 3, {
      server: async () => {
        const before = await serverCounter(ctx, CONFLICT_SERIES);
        const samples = await httpBlock(ctx.server.url, 'server', concurrency, perBlock);
        const after = await serverCounter(ctx, CONFLICT_SERIES);
        serverConflicts = before === undefined || after === undefined || serverConflicts === undefined ? undefined : serverConflicts + after - before;
        return samples;
      },
      fastify: () => httpBlock(ctx.fastify.url, 'fastify', concurrency, perBlock),
      driver: () => driverBlock(concurrency, perBlock),
    });
    for (const subject of ['server', 'fastify', 'driver'] as const) {
      const outcomes = triple[subject].outcomes;
      if (Object.keys(outcomes).some((k) => k !== '200')) log(`  WARNING ingestion ${name} (${subject}): unexpected outcomes ${JSON.stringify(outcomes)}`);
    }
    measurements.push({
      concurrency,
      triple,
      casRetriesPerReport: {
        server: serverConflicts === undefined ? null : serverConflicts / triple.server.ops,
        driver: floorConflicts.n / triple.driver.ops,
      },
    });
  }
  const doc = await ctx.db.collection('services').findOne({ _id: fleet.serviceIds[0] as never });
  return {
    shape,
    services: fleet.serviceIds.length,
    serviceDocumentBytes: JSON.stringify(doc).length,
    deploymentDocuments: await ctx.db.collection('deployments').countDocuments(),
    measurements,
  };
}
