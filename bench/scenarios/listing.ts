import type { Collection, Document } from 'mongodb';
import { encodeCursor } from '../../src/domain/releases.js';
import { newestFirst, releasePageFilter } from '../../src/store/releaseStore.js';
import { httpLoop, measureTriple, probesFor, setCanned, type BenchContext, type Triple } from '../lib/context.js';
import { bearer, createServiceWithReleases, digestOf, registryHost } from '../lib/fixtures.js';
import { closedLoop, expectStatus } from '../lib/load.js';

/**
 * Listing: GET /v1/services/:serviceId/image-releases (default page of 50, newest observation
 * first) for one service holding n releases, n = 1 000 → 10 000 → 100 000 (the same service
 * and collection, grown between the stages; releases are seeded with the driver). "First" is
 * the first page; "deep" starts at 90 % of the listing (a cursor as the API hands them out).
 * One request at a time: these are latencies.
 */

export interface ListingStage {
  releases: number;
  first: Triple;
  deep: Triple;
  /** What the database says the query costs (explain), where it can say. */
  plan: { first: QueryCost, deep: QueryCost };
}

/**
 * The database's own account of one page's query: index keys and documents examined and
 * whether it sorted in memory (MongoDB's `explain('executionStats')`). A database that has no
 * explain (mongo-java-server) or answers in another shape gives `{ available: false, why }`.
 */
export type QueryCost =
  | { available: true, keysExamined: number, docsExamined: number, returned: number, sortedInMemory: boolean, indexes: string[] }
  | { available: false, why: string };

/** The store's own filter and order (src/store/releaseStore.ts): the floor runs the very query. */
const pageFilter = (serviceId: string, after?: { time: number, id: string }): Document => releasePageFilter(serviceId, after);
const NEWEST_FIRST = newestFirst;

/** Every `stage` value and index name in an explain plan tree. */
function planStages (node: unknown, out: { stages: string[], indexes: string[] } = { stages: [], indexes: [] }) {
  if (Array.isArray(node)) {
    for (const child of node) planStages(child, out);
  } else if (node !== null && typeof node === 'object') {
    const record = node as Record<string, unknown>;
    // MongoDB names stages `stage`/`indexName`; FerretDB hands through PostgreSQL's `Node Type`/`Index Name`.
    for (const key of ['stage', 'Node Type']) if (typeof record[key] === 'string') out.stages.push(record[key]);
    for (const key of ['indexName', 'Index Name']) if (typeof record[key] === 'string') out.indexes.push(record[key]);
    for (const value of Object.values(record)) planStages(value, out);
  }
  return out;
}

async function explainPage (releases: Collection<Document>, serviceId: string, after?: { time: number, id: string }): Promise<QueryCost> {
  try {
    const explained = await releases.find(pageFilter(serviceId, after)).sort(NEWEST_FIRST).limit(PAGE + 1).explain('executionStats');
    const stats = explained['executionStats'] as Record<string, unknown> | undefined;
    const keys = stats?.['totalKeysExamined'];
    const docs = stats?.['totalDocsExamined'];
    const { stages, indexes } = planStages(explained['queryPlanner']);
    if (typeof keys !== 'number' || typeof docs !== 'number') {
      const shape = stages.length > 0 ? `; planned: ${stages.join(' → ')}${indexes.length > 0 ? ` (index ${[...new Set(indexes)].join(', ')})` : ''}` : '';
      return { available: false, why: `explain has no executionStats counts${shape}` };
    }
    return {
      available: true,
      keysExamined: keys,
      docsExamined: docs,
      returned: Number(stats?.['nReturned'] ?? Number.NaN),
      sortedInMemory: stages.includes('SORT'),
      indexes: [...new Set(indexes)],
    };
  } catch (err) {
    return { available: false, why: `explain failed: ${(err as Error).message.slice(0, 200)}` };
  }
}

const PAGE = 50;
const BASE_TIME = Date.UTC(2026, 0, 1);

const releaseId = (i: number): string => `rel_${String(i).padStart(8, '0')}`;
const observedAt = (i: number): number => BASE_TIME + i * 1000;

/** The release documents an observation writes (src/store/releaseStore.ts), one per i, newer with i. */
function releaseDocument (serviceId: string, repository: string, i: number): Document {
  const digest = digestOf(`listing-${serviceId}-${i}`);
  return {
    _id: releaseId(i),
    data: {
      serviceId,
      imageId: 'img-bench',
      registryHost,
      repository,
      registryRootDigest: digest,
      digestPinnedImageReference: `${registryHost}/${repository}@${digest}`,
      manifestMediaType: 'application/vnd.oci.image.index.v1+json',
      observedTags: [`v1.${i}`, 'latest'],
      firstObservedAt: observedAt(i),
      lastObservedAt: observedAt(i),
      observationCount: 1,
    },
  };
}

/**
 * Floor (b) for one page: the round trips of getServiceImageReleasesPage
 * (src/domain/releases.ts, src/store/{serviceStore,releaseStore}.ts): findOne(service), then
 * find(releases of the service [after the cursor]).sort(lastObservedAt desc, _id desc).limit(51).
 */
function driverPage (ctx: BenchContext, serviceId: string) {
  const services = ctx.db.collection('services') as Collection<Document>;
  const releases = ctx.db.collection('releases') as Collection<Document>;
  return async (after?: { time: number, id: string }): Promise<string> => {
    await services.findOne({ _id: serviceId as never }, { projection: { data: 1 } });
    const docs = await releases.find(pageFilter(serviceId, after)).sort(NEWEST_FIRST).limit(PAGE + 1).toArray();
    return docs.length === PAGE + 1 ? '200' : `short-page-${docs.length}`;
  };
}

export async function runListing (ctx: BenchContext, stages: Array<{ releases: number, perBlock: number }>, rounds: number): Promise<ListingStage[]> {
  const { log } = ctx.opts;
  const service = await createServiceWithReleases(ctx, 'listing', 0);
  const repository = service.repository;
  const reader = await ctx.token({ subject: 'bench-reader', role: 'user' });
  const releases = ctx.db.collection('releases');
  const floorPage = driverPage(ctx, service.serviceId);
  const results: ListingStage[] = [];
  let seeded = 0;
  for (const stage of stages) {
    log(`listing: seeding releases ${seeded} → ${stage.releases}`);
    const t0 = Date.now();
    while (seeded < stage.releases) {
      const upTo = Math.min(stage.releases, seeded + 5_000);
      const docs = [];
      for (let i = seeded; i < upTo; i++) docs.push(releaseDocument(service.serviceId, repository, i));
      await releases.insertMany(docs, { ordered: false });
      seeded = upTo;
    }
    log(`listing: seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // Newest first: rank r (0-based) is release n-1-r. The deep page starts after rank 0.9·n − 1.
    const n = stage.releases;
    const lastBefore = n - Math.floor(0.9 * n);
    const deepAfter = { time: observedAt(lastBefore), id: releaseId(lastBefore) };
    const paths = {
      first: `/v1/services/${service.serviceId}/image-releases`,
      deep: `/v1/services/${service.serviceId}/image-releases?cursor=${encodeCursor(deepAfter)}`,
    };
    const firstAnswer = await expectStatus<{ releases: unknown[], nextCursor?: string }>([200], ctx.server.url, 'GET', paths.first, bearer(reader));
    if (firstAnswer.releases.length !== PAGE || firstAnswer.nextCursor === undefined) throw new Error('listing: the first page is not a full page');
    await setCanned(ctx, 'listing', 200, JSON.stringify(firstAnswer));

    const measure = async (kind: 'first' | 'deep'): Promise<Triple> => {
      const httpBlock = async (url: string, subject: 'server' | 'fastify', total: number) =>
        await httpLoop(ctx, subject, url, { concurrency: 1, total }, async (client) => {
          const res = await client.request('GET', paths[kind], bearer(reader));
          return String(res.status);
        });
      const driverBlock = (total: number) => closedLoop({
        concurrency: 1,
        total,
        cpu: probesFor(ctx, 'driver'),
        op: () => floorPage(kind === 'deep' ? deepAfter : undefined),
      });
      const warm = Math.max(3, Math.round(stage.perBlock / 5));
      await httpBlock(ctx.server.url, 'server', warm);
      await driverBlock(warm);
      return measureTriple(ctx, `listing ${kind} page, ${n} releases`, rounds, {
        server: () => httpBlock(ctx.server.url, 'server', stage.perBlock),
        fastify: () => httpBlock(ctx.fastify.url, 'fastify', stage.perBlock),
        driver: () => driverBlock(stage.perBlock),
      });
    };
    const first = await measure('first');
    const deep = await measure('deep');
    const plan = { first: await explainPage(releases, service.serviceId), deep: await explainPage(releases, service.serviceId, deepAfter) };
    log(`listing: query plan at ${n}: ${JSON.stringify(plan)}`);
    results.push({ releases: n, first, deep, plan });
  }
  return results;
}
