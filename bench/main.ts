// `npm run bench`: builds (tsc -p bench/tsconfig.json), then runs this. See docs/benchmarks.md.
//   --quick     smaller counts (a smoke run: same figures, noisier)
//   --profile   run the server under --cpu-prof (ingestion and promotion, or the parts --only names),
//               and print the functions with the most self time (profiles kept in bench/results/profiles/)
//   --only=promotion,trust,ingestion,scaling,reporters,open-loop,report-size,read-path,listing,fleet
//               run only these parts (ingestion = the headline fleet)
//   BENCH_FLEET_SCALE=0.1   the large fleet of `fleet` at a tenth (default 1; 0.1 with --quick)
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createContext, type BenchContext, type Triple } from './lib/context.js';
import type { Summary } from './lib/stats.js';
import { chartSvg, criteriaList, latencyFigures, markdownTable, ratio, type ChartPanel, type Criterion, type Figure } from './lib/output.js';
import { machineBusyMs, projectDir } from './lib/processes.js';
import { formatProfile, profilesIn, summarizeProfile } from './lib/profile.js';
import { RolloutFleets } from './lib/fleet.js';
import { capMeasuredBlocks } from './lib/load.js';
import {
  openLoopTable, readPathFigures, reportersFigures, reportersTable, reportSizeFigures, reportSizeTable, rolloutCriteria, roundTripsTable,
} from './lib/rolloutOutput.js';
import { runIngestion, type FleetShape, type IngestionResult } from './scenarios/reports.js';
import { runListing, type ListingStage } from './scenarios/listing.js';
import { runPromotion, type PromotionResult } from './scenarios/promotion.js';
import { runReadPath, type ReadPathResult } from './scenarios/readPath.js';
import { runOpenLoop, runReportersCurve, type OpenLoopLevel, type ReportersLevel } from './scenarios/reporters.js';
import { runReportSize, type ReportSizeResult } from './scenarios/reportSize.js';
import { runTrustPromotion, type TrustResult } from './scenarios/trust.js';
import { fleetCriteria, fleetQueriesTable, fleetSizesLine, fleetTable, runFleet, type FleetResult } from './scenarios/fleet.js';

const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');
const profiling = args.has('--profile');
const onlyArg = [...args].find((a) => a.startsWith('--only='));
const PARTS = ['promotion', 'trust', 'ingestion', 'scaling', 'reporters', 'open-loop', 'report-size', 'read-path', 'listing', 'fleet'];
// A profile run without --only profiles ingestion and promotion (the headline figures).
const only = new Set(onlyArg !== undefined ? onlyArg.slice('--only='.length).split(',') : profiling ? ['promotion', 'ingestion'] : PARTS);
const unknown = [...only].filter((p) => !PARTS.includes(p));
if (unknown.length > 0) {
  process.stderr.write(`unknown part(s) ${unknown.join(', ')}; the parts are ${PARTS.join(', ')}\n`);
  process.exit(2);
}
const started = performance.now();
const elapsed = (): string => `${((performance.now() - started) / 1000).toFixed(0)} s`;
const log = (line: string): void => { process.stderr.write(`[bench ${elapsed().padStart(5)}] ${line}\n`); };

const resultsDir = path.join(projectDir, 'bench', 'results');
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const profileDir = path.join(resultsDir, 'profiles', stamp);
mkdirSync(resultsDir, { recursive: true });
if (profiling) mkdirSync(profileDir, { recursive: true });

/** How much of everything: the full run stays well under 10 minutes on 2 cores. */
const plan = quick
  ? {
      rounds: 2,
      scalingRounds: 2,
      listingRounds: 2,
      firstWarmMs: 3_000,
      warmMs: 1_000,
      reportsPerBlock: 60,
      headlinePerBlock: 120,
      promotionPerBlock: { uncontended: 60, contended: 60 },
      listing: [{ releases: 1_000, perBlock: 20 }, { releases: 10_000, perBlock: 10 }, { releases: 100_000, perBlock: 4 }],
      reporters: { rounds: 1, perBlock: (r: number) => Math.max(30, 2 * r), warmMs: 500, roundTrips: 30 },
      openLoop: { rounds: 1, durationMs: () => 3_000, warmMs: 500 },
      reportSize: { rounds: 1, perBlock: (n: number) => (n <= 10 ? 15 : n <= 100 ? 8 : 3), warmMs: 500, bytesReports: 5 },
      readPath: { connections: 50, perBlock: 50, rounds: 1, warmMs: 500 },
      fleet: { rounds: 2, perBlock: 40, blockMs: 1_000, warmPerPath: 5, queryTimes: 10 },
      blockCapMs: 2_500,
    }
  : {
      rounds: 5,
      scalingRounds: 3,
      listingRounds: 3,
      firstWarmMs: 10_000,
      warmMs: 3_000,
      reportsPerBlock: 120,
      headlinePerBlock: 250,
      promotionPerBlock: { uncontended: 200, contended: 150 },
      listing: [{ releases: 1_000, perBlock: 50 }, { releases: 10_000, perBlock: 25 }, { releases: 100_000, perBlock: 8 }],
      reporters: { rounds: 3, perBlock: (r: number) => (r === 1 ? 60 : 20 * r), warmMs: 1_500, roundTrips: 150 },
      // R = 10 runs longest: its p99 is the open-loop criterion's denominator (≥ 160 samples).
      openLoop: { rounds: 2, durationMs: (r: number) => (r === 1 ? 2_000 : r === 10 ? 8_000 : 4_000), warmMs: 1_500 },
      reportSize: { rounds: 3, perBlock: (n: number) => (n <= 10 ? 60 : n <= 100 ? 30 : n <= 500 ? 6 : 4), warmMs: 1_500, bytesReports: 20 },
      readPath: { connections: 50, perBlock: 35, rounds: 3, warmMs: 1_500 },
      // Each path at each size: one request at a time, 5 rounds of 1 s each (a block of 150 requests of a fast path
      // lasted 0.2 s: one sweep of the server or one pause of the database decided its round).
      fleet: { rounds: 5, perBlock: 1_000_000, blockMs: 1_000, warmPerPath: 20, queryTimes: 30 },
      // A measured block stops starting operations after this long even if its count is not reached (a loaded machine).
      blockCapMs: 5_000,
    };
/** The one-rollout parts: reporters per rollout (4 nodes × 2 replicas each), report sizes (nodes of one reporter). */
const REPORTERS = process.env['BENCH_REPORTERS'] ? process.env['BENCH_REPORTERS'].split(',').map(Number) : [1, 10, 50, 150];
const SIZES = [10, 100, 500, 1000];
const READ_PATH_REPORTERS = 150;

/** The headline fleet: 100 reporters (clusters) × 10 nodes × 2 replicas, 10 services of 10 reporters each. */
const HEADLINE_REPORTERS = 100;
const shapeFor = (reporters: number): FleetShape => ({ reporters, nodesPerReporter: 10, replicasPerNode: 2, reportersPerService: 10 });
const SCALING = [1, 10, 100, 1000].filter((r) => only.has('scaling') || (r === HEADLINE_REPORTERS && only.has('ingestion')));

capMeasuredBlocks(plan.blockCapMs);
const ctx: BenchContext = await createContext({ quick, log, ...(profiling ? { profileDir } : {}) });
// Other processes on the machine (CPU the machine spent that none of the bench's processes did).
const ours = (): number => [ctx.probes.server, ctx.probes.fastify, ctx.probes.db, ctx.probes.self].reduce((sum, p) => sum + (p ? p.read() : 0), 0);
const busyAtStart = machineBusyMs();
const oursAtStart = ours();
const wallAtStart = performance.now();
let otherLoad = Number.NaN;
const fleets: IngestionResult[] = [];
let promotion: PromotionResult | undefined;
let trust: TrustResult | undefined;
let listing: ListingStage[] = [];
let reportersCurve: ReportersLevel[] = [];
let openLoop: OpenLoopLevel[] = [];
let reportSize: ReportSizeResult | undefined;
let readPath: ReadPathResult | undefined;
let fleet: FleetResult | undefined;
/** The large fleet's scale (`fleet`): 1 is 10,000 services, 100,000 nodes, 50,000 releases and push events, 2,000 rollouts of one service. */
const FLEET_SCALE = Number(process.env['BENCH_FLEET_SCALE'] ?? (quick ? 0.1 : 1));
const rolloutFleets = new RolloutFleets(ctx);
/** Parts that failed (an error in setup or measurement): the run goes on with the others and reports them. */
const failedParts: Array<{ part: string, error: string }> = [];
const part = async (name: string, run: () => Promise<void>): Promise<void> => {
  try {
    await run();
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    log(`PART FAILED: ${name}: ${error}`);
    failedParts.push({ part: name, error: error.slice(0, 300) });
  }
};
try {
  // Promotion first, on a database that holds nothing else yet: the service's own overhead shows
  // most clearly there (later, the fleets' 11 000 nodes are scanned by every promotion on the
  // development database). Its warm-up also warms up the processes and the database (JIT).
  if (only.has('promotion')) {
    await part('promotion', async () => { promotion = await runPromotion(ctx, plan.promotionPerBlock, plan.rounds, plan.firstWarmMs); });
  }
  // Promotion with a trust policy next to promotion without, on a server of its own with the real registry (docs/trust.md).
  if (only.has('trust')) {
    await part('trust', async () => { trust = await runTrustPromotion(ctx, plan.promotionPerBlock.uncontended, plan.rounds); });
  }
  // The one-rollout parts next, on a database that holds nothing but their own fleets yet: on the development database a
  // filter of `_id` AND another field (the report path's compare-and-swap writes, the claims) scans the whole collection,
  // so other fleets' documents would add a cost that grows with them (the 1000-reporter fleet: seconds per claim batch).
  // Before the listing's 100 000 releases grow the database's heap, too.
  const cold = (): boolean => promotion === undefined && fleets.length === 0 && reportersCurve.length === 0 && reportSize === undefined;
  if (only.has('reporters')) {
    const firstWarmMs = cold() ? plan.firstWarmMs : plan.reporters.warmMs;
    await part('reporters', async () => { reportersCurve = await runReportersCurve(ctx, rolloutFleets, REPORTERS, { ...plan.reporters, firstWarmMs }); });
  }
  if (only.has('open-loop')) {
    const warmMs = cold() ? plan.firstWarmMs : plan.openLoop.warmMs;
    await part('open-loop', async () => { openLoop = await runOpenLoop(ctx, rolloutFleets, REPORTERS, { ...plan.openLoop, warmMs }); });
  }
  if (only.has('report-size')) {
    const firstWarmMs = cold() ? plan.firstWarmMs : plan.reportSize.warmMs;
    await part('report-size', async () => { reportSize = await runReportSize(ctx, rolloutFleets, SIZES, [1, 150], { ...plan.reportSize, firstWarmMs }); });
  }
  if (only.has('read-path')) {
    const warmMs = cold() ? plan.firstWarmMs : plan.readPath.warmMs;
    await part('read-path', async () => { readPath = await runReadPath(ctx, rolloutFleets, READ_PATH_REPORTERS, { ...plan.readPath, warmMs }); });
  }
  for (const reporters of SCALING) {
    const warmMs = fleets.length === 0 && promotion === undefined ? plan.firstWarmMs : fleets.length === 0 ? plan.firstWarmMs / 2 : plan.warmMs;
    const levels = only.has('scaling') ? [{ concurrency: 1, perBlock: plan.reportsPerBlock, warmMs }] : [];
    if (reporters === HEADLINE_REPORTERS && only.has('ingestion')) {
      levels.push({ concurrency: 10, perBlock: plan.headlinePerBlock, warmMs: levels.length === 0 ? warmMs : plan.warmMs });
    }
    await part(`ingestion f${reporters}`, async () => {
      fleets.push(await runIngestion(ctx, `f${reporters}`, shapeFor(reporters), levels, { 1: plan.scalingRounds, 10: plan.rounds }));
    });
  }
  if (only.has('listing')) await part('listing', async () => { listing = await runListing(ctx, plan.listing, plan.listingRounds); });
  // Last: the largest data of the run, in databases of its own (dropped when it is done), each with a server process of its own.
  if (only.has('fleet')) await part('fleet', async () => { fleet = await runFleet(ctx, plan.fleet, FLEET_SCALE); });
} finally {
  otherLoad = (machineBusyMs() - busyAtStart - (ours() - oursAtStart)) / ((performance.now() - wallAtStart) * os.cpus().length);
  await ctx.close();
}
log(`measurements done in ${elapsed()}`);

// Figures ---------------------------------------------------------------------------------------

const figures: Figure[] = [];
/** min–max of server ÷ bare-driver floor over the rounds (each round measures both back to back). */
const roundSpread = (t: Triple, pick: (s: Summary) => number): string => {
  const ratios = t.rounds.map((r) => pick(r.server) / pick(r.driver)).filter(Number.isFinite);
  return ratios.length === 0 ? '' : ` (per round ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
};
const criteria: Criterion[] = [];
const headline = fleets.find((f) => f.shape.reporters === HEADLINE_REPORTERS);
const headlineBusy = headline?.measurements.find((m) => m.concurrency === 10);
if (headline && headlineBusy) {
  const t = headlineBusy.triple;
  const replicas = headline.shape.nodesPerReporter * headline.shape.replicasPerNode;
  const group = `Report ingestion — ${headline.shape.reporters} reporters × ${replicas} replicas (${headline.services} services), ` +
    `${headlineBusy.concurrency} reports in flight`;
  figures.push({ group, label: 'throughput', unit: 'reports/s', server: t.server.throughput, fastify: t.fastify.throughput, driver: t.driver.throughput });
  figures.push(...latencyFigures(group, 'latency', t));
  const r = ratio(t.server.throughput, t.driver.throughput);
  criteria.push({
    name: 'report ingestion reaches at least 0.6 of its floor',
    measured: `${t.server.throughput.toFixed(1)} ÷ ${t.driver.throughput.toFixed(1)} reports/s (bare driver) = ` +
      `${r.toFixed(2)}${roundSpread(t, (x) => x.throughput)} ≥ 0.6`,
    holds: r >= 0.6,
  });
}
if (promotion) {
  const p = promotion;
  figures.push(...latencyFigures('Promotion — one writer', 'latency', p.uncontended));
  const group = `Promotion — ${p.writers} contending writers on one service`;
  figures.push(...latencyFigures(group, 'latency (winners and 409 losers)', p.contended));
  const perSecond = p.contendedPromotionsPerSecond;
  figures.push({ group, label: 'successful promotions', unit: 'promotions/s', server: perSecond.server, fastify: Number.NaN, driver: perSecond.driver });
  const r = ratio(p.uncontended.server.p99, p.uncontended.driver.p99);
  criteria.push({
    name: 'promotion p99, uncontended, is at most 3× its floor',
    measured: `${p.uncontended.server.p99.toFixed(1)} ms ÷ ${p.uncontended.driver.p99.toFixed(1)} ms (bare driver) = ` +
      `${r.toFixed(2)}${roundSpread(p.uncontended, (x) => x.p99)} ≤ 3`,
    holds: r <= 3,
  });
}
if (trust) {
  const group = 'Promotion with a trust policy (registry on loopback, verdicts cached) — one writer; "fastify" column: the same server without a trust policy';
  for (const [label, pick] of [['p50', (x: Summary) => x.p50], ['p99', (x: Summary) => x.p99]] as const) {
    figures.push({ group, label: `latency ${label}`, unit: 'ms', server: pick(trust.trusted), fastify: pick(trust.plain), driver: Number.NaN });
  }
  const r = ratio(trust.trusted.p99, trust.plain.p99);
  const spread = trust.rounds.map((x) => x.trusted.p99 / x.plain.p99).filter(Number.isFinite);
  criteria.push({
    name: 'promotion p99 with signature verification is at most 1.5× promotion p99 without a trust policy',
    measured: `${trust.trusted.p99.toFixed(1)} ms ÷ ${trust.plain.p99.toFixed(1)} ms = ${r.toFixed(2)}` +
      `${spread.length > 0 ? ` (per round ${Math.min(...spread).toFixed(2)}–${Math.max(...spread).toFixed(2)})` : ''} ≤ 1.5`,
    holds: r <= 1.5,
  });
}
const LOG_BOUND = Math.log(100_000) / Math.log(1_000);
const overhead = (ms: number): string => (ms >= 0 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(1)} ms, i.e. none beyond noise`);
if (listing.length > 0) {
  for (const stage of listing) {
    const group = `Listing (scaling: cost per listing) — one service with ${stage.releases.toLocaleString('en-US')} releases, one request at a time`;
    figures.push(...latencyFigures(group, 'first page', stage.first));
    figures.push(...latencyFigures(group, 'deep page (at 90 %)', stage.deep));
  }
  const small = listing.find((s) => s.releases === 1_000);
  const large = listing.find((s) => s.releases === 100_000);
  if (small && large) {
    for (const kind of ['first', 'deep'] as const) {
      const gServer = large[kind].server.p50 / small[kind].server.p50;
      const gDriver = large[kind].driver.p50 / small[kind].driver.p50;
      const absolute = gServer <= LOG_BOUND;
      const rSmall = ratio(small[kind].server.p50, small[kind].driver.p50);
      const rLarge = ratio(large[kind].server.p50, large[kind].driver.p50);
      const dbIsScan = gDriver > LOG_BOUND;
      criteria.push({
        name: `listing (${kind} page) grows no more than logarithmically from 1k to 100k releases`,
        measured: `p50 ${small[kind].server.p50.toFixed(1)} → ${large[kind].server.p50.toFixed(1)} ms = ×${gServer.toFixed(2)} ` +
          `(log bound ln 100000 ÷ ln 1000 = ×${LOG_BOUND.toFixed(2)}); the bare-driver floor doing the same query: ×${gDriver.toFixed(2)}`,
        holds: absolute,
        ...(!absolute && dbIsScan
          ? {
              note: `The database itself grows ×${gDriver.toFixed(2)} (${ctx.databaseKind === 'MONGODB_URI'
                ? 'see the floor'
                : 'mongo-java-server has no ordered index scans: it reads and sorts every release of the service'}). ` +
                `Judged on the ratio to the floor instead: server ÷ floor ${rSmall.toFixed(2)} at 1k → ${rLarge.toFixed(2)} at 100k = ` +
                `×${(rLarge / rSmall).toFixed(2)} — ${rLarge / rSmall <= LOG_BOUND ? 'holds' : 'does not hold'} ` +
                `(server − floor: ${overhead(small[kind].server.p50 - small[kind].driver.p50)} at 1k, ` +
                `${overhead(large[kind].server.p50 - large[kind].driver.p50)} at 100k)`,
            }
          : {}),
      });
      const [planSmall, planLarge] = [small.plan[kind], large.plan[kind]];
      if (planSmall.available && planLarge.available) {
        const work = (c: typeof planSmall & { available: true }): number => c.keysExamined + c.docsExamined;
        const gWork = work(planLarge) / Math.max(1, work(planSmall));
        criteria.push({
          name: `listing (${kind} page): the database's work (explain: index keys + documents examined) ` +
            'grows no more than logarithmically from 1k to 100k releases',
          measured: `keys ${planSmall.keysExamined} → ${planLarge.keysExamined}, documents ${planSmall.docsExamined} → ${planLarge.docsExamined} ` +
            `(×${gWork.toFixed(2)}), returned ${planLarge.returned}; index ${planLarge.indexes.join(', ') || 'none'}; ` +
            `sorted in memory: ${planLarge.sortedInMemory ? 'yes' : 'no'}`,
          holds: gWork <= LOG_BOUND && !planLarge.sortedInMemory,
        });
      }
    }
  }
}
for (const f of fleets) {
  const m = f.measurements.find((x) => x.concurrency === 1);
  if (!m) continue;
  const group = 'Scaling — cost per report (mean latency, one report in flight) by fleet size';
  const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const label = `${plural(f.shape.reporters, 'reporter')} (${plural(f.services, 'service')}, ` +
    `${f.reportRecords.toLocaleString('en-US')} report records)`;
  figures.push({ group, label, unit: 'ms', server: m.triple.server.mean, fastify: m.triple.fastify.mean, driver: m.triple.driver.mean });
}

figures.push(...reportersFigures(reportersCurve));
if (reportSize) figures.push(...reportSizeFigures(reportSize.levels));
if (readPath) figures.push(...readPathFigures(readPath));
criteria.push(...rolloutCriteria({ reporters: reportersCurve, openLoop, reportSize, readPath }));
if (fleet) criteria.push(...fleetCriteria(fleet));
for (const f of failedParts) criteria.push({ name: `part '${f.part}' ran to the end`, measured: `failed: ${f.error}`, holds: false });

// Output ----------------------------------------------------------------------------------------

const environment = {
  node: process.version,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  database: ctx.databaseKind,
  mode: profiling ? 'profile' : quick ? 'quick' : 'full',
  /** Share of the machine's CPU that other processes used while the bench measured (0–1). */
  otherLoad,
};
const heading = `Benchmarks ${new Date().toISOString()} — ${environment.mode} run, ${environment.cpus} × ${environment.cpuModel}, ` +
  `Node ${environment.node}, database: ${environment.database}`;
const table = markdownTable(figures);

/** CPU per operation by process, for the main scenarios (from /proc; the database only when it is the local one). */
const cpuRows: Array<[string, Triple | undefined]> = [
  ['report ingestion (headline)', headlineBusy?.triple],
  ['promotion, one writer', promotion?.uncontended],
  ['promotion, 10 writers', promotion?.contended],
  ['listing, first page, 100k releases', listing.find((s) => s.releases === 100_000)?.first],
  ['one rollout, 150 reporters in flight (floor: one upsert)', reportersCurve.find((l) => l.reporters === 150)?.triple],
  ['report of 1,000 nodes × 2 replicas (floor: one upsert)', reportSize?.levels.find((l) => l.nodes === 1000)?.triple],
  ['read path, 150 reporters, 50 connections (floor: its process)', readPath?.triple],
];
const cpuMs = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(2));
const cpuTable = [
  '| scenario | server process | its database work | bare-driver process | its database work | plain-Fastify process | load generator (HTTP) |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...cpuRows.filter(([, t]) => t !== undefined).map(([name, t]) => {
    const x = t as Triple;
    const cells = [
      x.server.cpuPerOpMs['service'], x.server.cpuPerOpMs['db'], x.driver.cpuPerOpMs['service'], x.driver.cpuPerOpMs['db'],
      x.fastify.cpuPerOpMs['service'], x.server.cpuPerOpMs['client'],
    ];
    return `| ${name} | ${cells.map(cpuMs).join(' | ')} |`;
  }),
].join('\n');
const checks = criteriaList(criteria);
const roundTrips = roundTripsTable(reportersCurve);

let profileText = '';
if (profiling) {
  for (const file of profilesIn(profileDir)) profileText += `${formatProfile(summarizeProfile(file, 30))}\n\n`;
}

const jsonFile = path.join(resultsDir, `${stamp}.json`);
const json = {
  environment, plan, failedParts, figures, criteria, fleets, promotion, trust, listing, reportersCurve, openLoop, reportSize, readPath, fleetSize: fleet,
};
writeFileSync(jsonFile, `${JSON.stringify(json, null, 2)}\n`);
if (!profiling && (fleets.length > 0 || listing.length > 0)) {
  const panels: ChartPanel[] = [];
  const scaling = fleets.map((f) => ({ x: f.shape.reporters, m: f.measurements.find((m) => m.concurrency === 1) })).filter((p) => p.m !== undefined);
  if (scaling.length > 0) {
    panels.push({
      title: 'Cost per report by fleet size',
      xLabel: 'reporters (log scale; 10 per service, 20 replicas each)',
      yLabel: 'ms per report (mean, one in flight)',
      series: [
        { name: 'server', style: 'server', points: scaling.map((p) => [p.x, p.m?.triple.server.mean ?? Number.NaN]) },
        { name: 'bare-driver floor', style: 'driver', points: scaling.map((p) => [p.x, p.m?.triple.driver.mean ?? Number.NaN]) },
        { name: 'plain Fastify floor', style: 'fastify', points: scaling.map((p) => [p.x, p.m?.triple.fastify.mean ?? Number.NaN]) },
      ],
    });
  }
  if (listing.length > 0) {
    const first = listing[0] as ListingStage;
    panels.push({
      title: 'Cost per listing by releases of the service',
      xLabel: 'releases of the service (log scale)',
      yLabel: 'ms per page (p50, one at a time)',
      series: [
        { name: 'server, first page', style: 'server', points: listing.map((s) => [s.releases, s.first.server.p50]) },
        { name: 'server, deep page', style: 'server-alt', points: listing.map((s) => [s.releases, s.deep.server.p50]) },
        { name: 'bare-driver floor, first page', style: 'driver', points: listing.map((s) => [s.releases, s.first.driver.p50]) },
        { name: 'bare-driver floor, deep page', style: 'driver-alt', points: listing.map((s) => [s.releases, s.deep.driver.p50]) },
        { name: 'plain Fastify floor', style: 'fastify', points: listing.map((s) => [s.releases, s.first.fastify.p50]) },
        {
          name: 'log growth from server at 1k',
          style: 'reference',
          points: listing.map((s) => [s.releases, first.first.server.p50 * Math.log(s.releases) / Math.log(first.releases)]),
        },
      ],
    });
  }
  const subtitle = `${environment.cpus} × ${environment.cpuModel}, ${environment.database}, ${new Date().toISOString().slice(0, 16)}Z`;
  writeFileSync(path.join(resultsDir, 'latest.svg'), chartSvg('Cloudly image-release control plane — scaling', subtitle, panels));
}

const output = [
  `## ${heading}`,
  '',
  'Every figure of the server next to the same figure of both floors, measured in this run, and the ratio server ÷ floor',
  '(throughput: the closer to 1 from below the better; latency: the closer to 1 from above the better).',
  ...(Number.isFinite(otherLoad)
    ? [`Other processes used ${(100 * otherLoad).toFixed(0)} % of the machine's CPU while this ran${otherLoad > 0.1
      ? ' — absolute figures are depressed and noisier than on an idle machine; the ratios (floors measured in the same rounds) much less so'
      : ''}.`]
    : []),
  '',
  table,
  '',
  '### Acceptance criteria',
  '',
  checks,
  '',
  ...(reportersCurve.length > 0 ? ['### Reporters curve (one rollout, closed loop)', '', reportersTable(reportersCurve), ''] : []),
  ...(roundTrips !== '' ? ['### A report\'s round trips, one at a time (twins of the rollout\'s documents)', '', roundTrips, ''] : []),
  ...(openLoop.length > 0 ? ['### Open loop (each reporter once per second, latency from the scheduled time)', '', openLoopTable(openLoop), ''] : []),
  ...(reportSize ? ['### Report size (one reporter, one report in flight) and bytes per report', '', reportSizeTable(reportSize), ''] : []),
  ...(fleet
    ? [`### Fleet size: every request path at a small and a large fleet (scale ${FLEET_SCALE}; one request at a time)`, '',
        `${fleetSizesLine(fleet)}.`, '', fleetTable(fleet), '',
        'The stores\' queries behind the paths, each alone with the driver, one at a time:', '', fleetQueriesTable(fleet), '']
    : []),
  '### CPU per operation (ms, user + system, from /proc)',
  '',
  cpuTable,
  '',
  ...(profiling ? [`### CPU profile of the server (${[...only].join(', ')})`, '', profileText] : []),
  `Run time ${elapsed()}. JSON: ${path.relative(projectDir, jsonFile)}` +
    (profiling ? `; profiles: ${path.relative(projectDir, profileDir)}` : '; chart: bench/results/latest.svg'),
  '',
].join('\n');
process.stdout.write(output);
