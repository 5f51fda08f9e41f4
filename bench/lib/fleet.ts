import type { Collection, Document } from 'mongodb';
import type { IImmutableImageDeploymentPlan, IService } from '../../src/contracts/index.js';
import { STATUS_EVENTS_KEPT } from '../../src/domain/rolloutStatus.js';
import type { BenchContext } from './context.js';
import { bearer, createServiceWithReleases, fullReplicas, reportBody, seedClusters } from './fixtures.js';
import { HttpClient, closedLoop, expectStatus } from './load.js';

/**
 * A fleet of Coreflow reporters: reporter k is the Coreflow of cluster k, with
 * `nodesPerReporter` nodes × `replicasPerNode` replicas, all running and verified for the
 * current rollout of the service it runs; services hold `reportersPerService` reporters each
 * (service s is placed on clusters s·n … s·n+n−1, and promoted once: its rollout targets them).
 * Each reporter has at most one report in flight and its sequence only grows, as a real
 * Coreflow's. `reportersPerService = reporters` is one rollout reported on by the whole fleet.
 */
export interface FleetShape {
  reporters: number;
  nodesPerReporter: number;
  replicasPerNode: number;
  reportersPerService: number;
}

export interface Reporter {
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

export interface Fleet {
  name: string;
  shape: FleetShape;
  reporters: Reporter[];
  serviceIds: string[];
}

/** The reporter id the server derives from a cluster token (src/domain/reports.ts `reporterIdOf`). */
export const reporterIdOf = (r: Reporter): string => `${r.clusterId}/${r.subject}`;

export async function setupFleet (ctx: BenchContext, name: string, shape: FleetShape): Promise<Fleet> {
  const clusters = Array.from({ length: shape.reporters }, (_, k) => ({
    id: `${name}-c${k}`,
    nodeNames: Array.from({ length: shape.nodesPerReporter }, (_, j) => `${name}-c${k}-n${j}`),
  }));
  await seedClusters(ctx, clusters);
  const api = await ctx.token({ subject: 'bench-ci', role: 'api' });
  // Replicas running for an hour already: past the stability window from the first report on (a fleet in its steady state).
  const deployedAt = Date.now() - 3_600_000;
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
        deployments: fullReplicas(plan, service.serviceId, cluster.nodeNames).map((d) => ({ ...d, deployedAt })),
      });
    }
  }
  return { name, shape, reporters, serviceIds };
}

/**
 * A long-lived service's status history is full: 100 events (STATUS_EVENTS_KEPT), about 25
 * rollouts' worth. Seeded with the driver in front of the fleet's own few events (revision 0:
 * older than anything here; nothing in the benchmark replays them).
 */
export async function seedStatusHistory (ctx: BenchContext, serviceIds: string[]): Promise<void> {
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
export function takeReporter (fleet: Fleet): Reporter {
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
export function nextReport (r: Reporter): Record<string, unknown> {
  r.sequence++;
  return reportBody(r.plan, r.serviceId, { session: `session-${r.clusterId}`, sequence: r.sequence, nodeNames: r.nodes, deployments: r.deployments });
}

const FIRST_REPORT_ATTEMPTS = 5;

/**
 * Every reporter reports once, in order, at most 10 at a time: each status then holds all its
 * reporters (and the nodes and sessions are claimed). Returns the last answer (the plain-Fastify
 * floor's canned one); any answer but 200 is an error.
 */
export async function reportOnce (ctx: BenchContext, fleet: Fleet): Promise<string> {
  const concurrency = Math.min(fleet.reporters.length, 10);
  const client = new HttpClient(ctx.server.url, concurrency);
  let lastAnswer = '';
  try {
    const first = await closedLoop({
      concurrency,
      total: fleet.reporters.length,
      maxMs: Number.POSITIVE_INFINITY, // every reporter, however long it takes (not a measured block)
      op: async (_w, i) => {
        const r = fleet.reporters[i] as Reporter;
        const body = JSON.stringify(nextReport(r));
        // A 503 (the database did not answer in time: a loaded machine) is retried as a Coreflow does, with the same body (a replay).
        for (let attempt = 1; ; attempt++) {
          const res = await client.request('POST', '/v1/deployment-snapshots', bearer(r.token), body);
          if (res.status === 200) lastAnswer = res.body;
          else ctx.opts.log(`first report of ${r.clusterId} (attempt ${attempt}): ${res.status} ${res.body.slice(0, 200)}`);
          if (res.status !== 503 || attempt === FIRST_REPORT_ATTEMPTS) return String(res.status);
          await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
        }
      },
    });
    if ((first.outcomes['200'] ?? 0) !== first.ops) throw new Error(`first reports failed: ${JSON.stringify(first.outcomes)}`);
  } finally {
    client.close();
  }
  return lastAnswer;
}

/** A fleet set up once and shared by the scenarios that use it, with the server's last answer to it. */
export interface ReadyFleet extends Fleet {
  lastAnswer: string;
}

/**
 * One rollout reported on by `reporters` reporters (one service placed on that many clusters),
 * set up on first use — every reporter has reported once and the service carries a full status
 * history — and shared by the scenarios that ask for the same shape (the reporters curve, the open
 * loop, the bytes per report, the read path).
 */
export class RolloutFleets {
  readonly #ready = new Map<string, Promise<ReadyFleet>>();

  constructor (private readonly ctx: BenchContext) {}

  get (reporters: number, nodesPerReporter: number, replicasPerNode = 2): Promise<ReadyFleet> {
    const name = `ro${reporters}x${nodesPerReporter}x${replicasPerNode}`;
    let fleet = this.#ready.get(name);
    if (!fleet) {
      fleet = (async () => {
        this.ctx.opts.log(`one rollout, ${reporters} reporters × ${nodesPerReporter} nodes × ${replicasPerNode} replicas: setting up`);
        const set = await setupFleet(this.ctx, name, { reporters, nodesPerReporter, replicasPerNode, reportersPerService: reporters });
        const lastAnswer = await reportOnce(this.ctx, set);
        await seedStatusHistory(this.ctx, set.serviceIds);
        return { ...set, lastAnswer };
      })();
      this.#ready.set(name, fleet);
    }
    return fleet;
  }
}
