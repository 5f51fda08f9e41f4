import { randomBytes, randomUUID } from 'node:crypto';
import type { Collection, Db, Document } from 'mongodb';
import { httpLoop, measureTriple, probesFor, setCanned, type BenchContext, type Triple } from '../lib/context.js';
import { bearer, createServiceWithReleases, seedClusters } from '../lib/fixtures.js';
import { closedLoop } from '../lib/load.js';
import type { IImmutableImageDeploymentPlan, IService } from '../../src/contracts/index.js';
import { aggregateKey, aggregateOf, emptySummary, STATUS_EVENTS_KEPT, statusEventOf } from '../../src/domain/rolloutStatus.js';
import { isDuplicateKeyError } from '../../src/store/driverErrors.js';
import { STATUS_HEAD } from './reports.js';

/**
 * Promotion: POST …/promote with a fresh Idempotency-Key and the generation the caller last saw.
 * Uncontended: one writer, one promotion after the other (each one succeeds). Contended: 10
 * writers on the same service at once, each retrying with the generation its last answer named
 * (a 409 carries `currentGeneration`), so every generation has one winner and up to 9 losers.
 */

interface PromotionSetup {
  serviceId: string;
  releaseIds: string[];
  clusterIds: string[];
  apiToken: string;
}

interface Answer { status: number, generation: number }

const promotePath = (s: PromotionSetup, releaseId: string): string => `/v1/services/${s.serviceId}/image-releases/${releaseId}/promote`;

const generationOf = (status: number, body: string): number => {
  const json = JSON.parse(body) as { service?: IService, currentGeneration?: number };
  if (status === 200) return json.service?.data.imageDeployment?.rolloutGeneration ?? 0;
  return json.currentGeneration ?? 0;
};

/**
 * The floor's own service: a twin of the server's (same data, another id and name) with twins
 * of its releases, in the same database, so that both run against the same collections (whose
 * sizes matter on the development database, which scans where an index is not built).
 */
async function createTwin (ctx: BenchContext, s: PromotionSetup): Promise<PromotionSetup> {
  const services = ctx.db.collection('services') as Collection<Document>;
  const releases = ctx.db.collection('releases') as Collection<Document>;
  const original = await services.findOne({ _id: s.serviceId as never });
  if (!original) throw new Error('promotion service missing');
  const twinId = `${s.serviceId}_floor`;
  const data = original['data'] as Document;
  await services.insertOne({ ...original, _id: twinId as never, data: { ...data, name: `${data['name'] as string}-floor` } });
  const docs = await releases.find({ 'data.serviceId': s.serviceId }).toArray();
  await releases.insertMany(docs.map((d) => ({ ...d, _id: `${String(d['_id'])}_floor` as never, data: { ...(d['data'] as Document), serviceId: twinId } })));
  return { ...s, serviceId: twinId, releaseIds: s.releaseIds.map((id) => `${id}_floor`) };
}

/**
 * Floor (b) for one promotion: the database round trips of src/operations/issueRollout.ts and
 * the stores it calls, in the same order and with documents of the same size (the rollout
 * record and the stored outcome are built from a real one of the server's), on a twin of the
 * service in the same database — no HTTP, token, schemas, fingerprints or plan validation.
 *   success: insert idempotency → (findOne rollout by record ‖ findOne service ‖ findOne release)
 *     → (findOne rollout at the service's generation ‖ at the next: pending ones) → (find clusters ‖ find nodes) → insert rollout → findOne service
 *     (lifecycle of the previous rollout) → findOne service (revision) → updateOne service (CAS) →
 *     count promotions → updateOne release → updateOne previous rollout (ended) → updateOne rollout
 *     applied → [generation ≥ 3: find the rollout two back → deleteMany its reports ‖ its claims] →
 *     updateOne idempotency (outcome)
 *   stale generation: … (… ‖ findOne release) → updateOne idempotency (the stored 409)
 *   lost the insert race: … insert rollout (E11000) → findOne rollout by record → findOne service →
 *     [its generation still before the winner's: pending ones (as above) → finish each (as below) → findOne
 *     service] → updateOne idempotency (the stored 409)
 *   pending rollouts found by the first reads (another writer's, not yet finished): finish each
 *     (findOne service, updateOne service, count promotions, updateOne release, updateOne rollout),
 *     then findOne service ‖ findOne release again, as the server does
 */
/** What the lifecycle read of a promotion's finish fetches (src/store/serviceStore.ts `lifecycleProjection`). */
const LIFECYCLE = {
  'data.imageDeployment': 1,
  'data.rolloutPolicy': 1,
  ...STATUS_HEAD,
  automationHold: 1,
  automationQueue: 1,
  verifiedReleases: 1,
} as const;

function driverPromotion (db: Db, s: PromotionSetup, template: Document) {
  // s is the twin: its own service and releases, the server's cluster and nodes.
  const idempotency = db.collection('idempotency') as Collection<Document>;
  const rollouts = db.collection('rollouts') as Collection<Document>;
  const services = db.collection('services') as Collection<Document>;
  const releases = db.collection('releases') as Collection<Document>;
  const clusters = db.collection('clusters') as Collection<Document>;
  const nodes = db.collection('nodes') as Collection<Document>;
  const conflict = async (recordId: string, current: number): Promise<Answer> => {
    await idempotency.updateOne({ _id: recordId as never, state: 'in-progress' }, {
      $set: {
        state: 'completed',
        completedAt: Date.now(),
        outcome: {
          kind: 'error',
          code: 'rollout-generation-conflict',
          message: `expected rollout generation … but the service is at ${current}`,
          details: { currentGeneration: current, currentRolloutId: 'ro_x' },
        },
      },
    });
    return { status: 409, generation: current };
  };
  const headOf = (doc: Document | null): number =>
    ((doc?.['data'] as Document | undefined)?.['imageDeployment'] as Document | undefined)?.['rolloutGeneration'] as number | undefined ?? 0;
  // As RolloutStore.findPending: the rollouts at the service's generation and the next, by the unique (serviceId, generation) index.
  const pendingRollouts = async (generation: number) => (await Promise.all([generation, generation + 1].map(async (g) =>
    await rollouts.findOne({ serviceId: s.serviceId, generation: g })))).flatMap((doc) => (doc && doc['state'] === 'pending' ? [doc] : []));
  const readService = () => services.findOne({ _id: s.serviceId as never }, { projection: { data: 1, automationHold: 1, verifiedReleases: 1 } });
  const reports = db.collection('reports') as Collection<Document>;
  const claims = db.collection('reportClaims') as Collection<Document>;

  /**
   * The server's `finish` of a recorded rollout (src/operations/issueRollout.ts): the previous rollout's lifecycle (its
   * milestones: none here, no report ever lands), the plan onto the service (CAS), release counters, the previous rollout
   * ended, this one applied, the reports of the rollout two generations back removed.
   */
  const finish = async (rollout: Document): Promise<void> => {
    const generation = rollout['generation'] as number;
    const at = rollout['createdAt'] as number;
    const plan = rollout['plan'] as IImmutableImageDeploymentPlan;
    const previous = rollout['previous'] as Document | undefined;
    if (previous) await services.findOne({ _id: s.serviceId as never }, { projection: LIFECYCLE });
    // What ServiceStore.applyRollout writes: the plan, an empty status summary and its published state, the first status event.
    const summary = emptySummary(plan, at);
    const initial = aggregateOf(plan, summary);
    for (;;) {
      const head = await services.findOne({ _id: s.serviceId as never }, { projection: { statusRevision: 1, 'data.imageDeployment.rolloutGeneration': 1 } });
      if (headOf(head) >= generation) break;
      const revision = (head?.['statusRevision'] as number | undefined) ?? 0;
      const update: Document = {
        $set: {
          'data.immutableImageRequired': true,
          'data.imageDeployment': plan,
          rolloutStatus: summary,
          statusPublished: { rolloutId: plan.rolloutId, seq: 0, key: aggregateKey(initial) },
          updatedAt: at,
          statusRevision: revision + 1,
        },
        $unset: { 'data.imageRolloutStatus': '', rolloutEvidence: '', automationQueue: '' },
        $push: { statusEvents: { $each: [statusEventOf(initial, revision + 1, at)], $slice: -STATUS_EVENTS_KEPT } },
      };
      const applied = await services.updateOne(
        {
          _id: s.serviceId as never,
          ...(generation === 1 ? { 'data.imageDeployment': { $exists: false } } : { 'data.imageDeployment.rolloutGeneration': generation - 1 }),
          ...(revision === 0 ? { statusRevision: { $exists: false } } : { statusRevision: revision }),
        },
        update
      );
      if (applied.matchedCount === 1) break;
    }
    const releaseId = rollout['releaseId'] as string;
    const count = await rollouts.countDocuments({ releaseId, mode: { $in: ['promotion', 'automatic'] } });
    await releases.updateOne(
      { _id: releaseId as never },
      { $min: { 'data.acceptedAt': at }, $max: { 'data.lastPromotedAt': at, 'data.promotionCount': count } },
    );
    if (previous) {
      const ended = { at, by: 'superseded', rolloutId: rollout['_id'] };
      await rollouts.updateOne({ _id: previous['rolloutId'], ended: { $exists: false } }, { $set: { ended } });
    }
    await rollouts.updateOne({ _id: rollout['_id'] }, { $set: { state: 'applied' } });
    if (generation >= 3) {
      const old = await rollouts.findOne({ serviceId: s.serviceId, generation: generation - 2 }, { projection: { serviceAfter: 0 } });
      if (old) await Promise.all([reports.deleteMany({ rolloutId: old['_id'] }), claims.deleteMany({ rolloutId: old['_id'] })]);
    }
  };

  return async (expected: number, releaseId: string): Promise<Answer> => {
    const now = Date.now();
    const recordId = randomBytes(32).toString('hex');
    await idempotency.insertOne({
      _id: recordId as never,
      serviceId: s.serviceId,
      key: randomBytes(12).toString('hex'),
      operation: 'promotion',
      fingerprint: randomBytes(32).toString('hex'),
      state: 'in-progress',
      leaseOwner: randomUUID(),
      leaseUntil: now + 15_000,
      createdAt: now,
      expiresAt: new Date(now + 48 * 3600_000),
    });
    let [, service] = await Promise.all([
      rollouts.findOne({ idempotencyRecordId: recordId }),
      readService(),
      releases.findOne({ _id: releaseId as never }),
    ]);
    const pending = await pendingRollouts(headOf(service));
    // As the server: finish what another writer left pending, then read service and release again.
    if (pending.length > 0) {
      for (const rollout of pending) await finish(rollout);
      [service] = await Promise.all([readService(), releases.findOne({ _id: releaseId as never })]);
    }
    const current = headOf(service);
    if (current !== expected) return conflict(recordId, current);
    await Promise.all([
      clusters.find({ _id: { $in: s.clusterIds as never[] } }, { projection: { _id: 1, nodeNames: 1 } }).toArray(),
      nodes.find({ clusterId: { $in: s.clusterIds } }, { projection: { _id: 1, clusterId: 1 } }).sort({ clusterId: 1, _id: 1 }).toArray(),
    ]);
    const generation = expected + 1;
    const rolloutId = `ro_${randomUUID()}`;
    const plan = { ...(template['plan'] as Document), rolloutId, rolloutGeneration: generation, releaseId, createdAt: now };
    const afterData = (template['serviceAfter'] as Document)['data'] as Document;
    const status: Document = { ...(afterData['imageRolloutStatus'] as Document), rolloutId, rolloutGeneration: generation, updatedAt: now };
    const serviceAfter = { id: s.serviceId, data: { ...afterData, imageDeployment: plan, imageRolloutStatus: status } };
    const running = (service?.['data'] as Document | undefined)?.['imageDeployment'] as Document | undefined;
    const rollout: Document = {
      ...template,
      previous: running ? { rolloutId: running['rolloutId'], releaseId: running['releaseId'], requestedDigest: running['requestedDigest'] } : undefined,
      _id: rolloutId,
      serviceId: s.serviceId,
      generation,
      releaseId,
      plan,
      idempotencyRecordId: recordId,
      serviceAfter,
      state: 'pending',
      createdAt: now,
    };
    try {
      await rollouts.insertOne(rollout);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      // As the server: its own record? no; read the winner, finish its pending rollout, read the winner again.
      await rollouts.findOne({ idempotencyRecordId: recordId });
      let winner = headOf(await readService());
      if (winner < generation) {
        for (const rollout of await pendingRollouts(winner)) await finish(rollout);
        winner = headOf(await readService());
      }
      return conflict(recordId, winner);
    }
    await finish(rollout);
    await idempotency.updateOne(
      { _id: recordId as never, state: 'in-progress' },
      { $set: { state: 'completed', outcome: { kind: 'success', body: { service: serviceAfter } }, completedAt: Date.now() } },
    );
    return { status: 200, generation };
  };
}

export interface PromotionResult {
  uncontended: Triple;
  contended: Triple;
  writers: number;
  /** Successful promotions per second under contention (the rest are 409 conflicts). */
  contendedPromotionsPerSecond: Record<'server' | 'driver', number>;
}

export async function runPromotion (
  ctx: BenchContext, perBlock: { uncontended: number, contended: number }, rounds: number, warmMs: number,
): Promise<PromotionResult> {
  const { log } = ctx.opts;
  log('promotion: setting up (a service on one cluster of 3 nodes, 2 releases; a twin for the floor)');
  const clusterIds = ['promo-c1'];
  await seedClusters(ctx, [{ id: 'promo-c1', nodeNames: ['promo-n1', 'promo-n2', 'promo-n3'] }]);
  const service = await createServiceWithReleases(ctx, 'promo', 2, { clusterIds, replicasPerNode: 2 });
  const setup: PromotionSetup = { ...service, clusterIds, apiToken: await ctx.token({ subject: 'bench-ci', role: 'api' }) };
  const twin = await createTwin(ctx, setup);

  const headers = (): Record<string, string> => ({ ...bearer(setup.apiToken), 'idempotency-key': randomBytes(12).toString('hex') });
  const releaseFor = (i: number): string => setup.releaseIds[i % setup.releaseIds.length] as string;
  const writers = 10;
  // Each writer's view of the current generation (from its last answer).
  const seen = { server: new Array<number>(writers).fill(0), fastify: new Array<number>(writers).fill(0), driver: new Array<number>(writers).fill(0) };
  let lastAnswer = '';
  const httpBlock = async (subject: 'server' | 'fastify', concurrency: number, total: number, maxMs?: number) => {
    const view = seen[subject];
    const url = subject === 'server' ? ctx.server.url : ctx.fastify.url;
    return await httpLoop(ctx, subject, url, { concurrency, total, maxMs }, async (client, w, i) => {
      const body = JSON.stringify({ expectedRolloutGeneration: view[w] ?? 0, enableImmutableImage: true, reason: 'benchmark promotion' });
      const res = await client.request('POST', promotePath(setup, releaseFor(i)), headers(), body);
      if (res.status === 200 || res.status === 409) {
        view[w] = generationOf(res.status, res.body);
        if (subject === 'server' && res.status === 200) lastAnswer = res.body;
      }
      return String(res.status);
    });
  };
  const driverBlock = async (concurrency: number, total: number, maxMs?: number) => closedLoop({
    concurrency,
    total,
    ...(maxMs === undefined ? {} : { maxMs }),
    cpu: probesFor(ctx, 'driver'),
    op: async (w, i) => {
      const answer = await floorOp((seen.driver[w] ?? 0), twin.releaseIds[i % twin.releaseIds.length] as string);
      seen.driver[w] = answer.generation;
      return String(answer.status);
    },
  });

  // Warm-up by time: the server (its last rollout record is the floor's template), then the floors.
  const warm = await httpBlock('server', 1, Number.MAX_SAFE_INTEGER, warmMs);
  if ((warm.outcomes['200'] ?? 0) !== warm.ops) throw new Error(`warm-up promotions failed: ${JSON.stringify(warm.outcomes)}`);
  await setCanned(ctx, 'promote', 200, lastAnswer);
  const template = await ctx.db.collection('rollouts').findOne({ serviceId: setup.serviceId }, { sort: { generation: -1 } });
  if (!template) throw new Error('no rollout record to copy');
  const floorOp = driverPromotion(ctx.db, twin, template);
  await driverBlock(1, Number.MAX_SAFE_INTEGER, warmMs * 0.6);
  await httpBlock('fastify', 1, Number.MAX_SAFE_INTEGER, 500);

  const uncontended = await measureTriple(ctx, 'promotion, one writer', rounds, {
    server: () => httpBlock('server', 1, perBlock.uncontended),
    fastify: () => httpBlock('fastify', 1, perBlock.uncontended),
    driver: () => driverBlock(1, perBlock.uncontended),
  });
  for (const view of Object.values(seen)) view.fill(view[0] ?? 0);
  await httpBlock('server', writers, Number.MAX_SAFE_INTEGER, warmMs / 3);
  await driverBlock(writers, Number.MAX_SAFE_INTEGER, warmMs / 5);
  const contended = await measureTriple(ctx, `promotion, ${writers} contending writers`, rounds, {
    server: () => httpBlock('server', writers, perBlock.contended),
    fastify: () => httpBlock('fastify', writers, perBlock.contended),
    driver: () => driverBlock(writers, perBlock.contended),
  });
  const wins = (t: Triple['server']): number => ((t.outcomes['200'] ?? 0) * 1000) / t.elapsedMs;
  for (const [kind, triple, expected] of [['one writer', uncontended, ['200']], ['contended', contended, ['200', '409']]] as const) {
    for (const subject of ['server', 'fastify', 'driver'] as const) {
      const outcomes = triple[subject].outcomes;
      if (Object.keys(outcomes).some((k) => !(expected as readonly string[]).includes(k))) {
        log(`  WARNING promotion ${kind} (${subject}): unexpected outcomes ${JSON.stringify(outcomes)}`);
      }
    }
  }
  return { uncontended, contended, writers, contendedPromotionsPerSecond: { server: wins(contended.server), driver: wins(contended.driver) } };
}
