import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { startLocalMongo } from '../../tools/dev-database/localMongo.js';
import { mintToken, type MintOptions } from '../../src/domain/tokens.js';
import { HttpClient, closedLoop } from './load.js';
import { distDir, findLocalMongoPid, procCpuProbe, selfCpuProbe, startNode, type Child, type CpuProbe } from './processes.js';
import { emptySamples, merge, summarize, type Samples, type Summary } from './stats.js';

export type Subject = 'server' | 'fastify' | 'driver';

export interface BenchOptions {
  /** Smaller counts everywhere (a smoke run; figures are noisier). */
  quick: boolean;
  /** Start the server under --cpu-prof and run only ingestion and promotion. */
  profileDir?: string;
  log: (line: string) => void;
}

/**
 * Everything a scenario needs: the database (MONGODB_URI, or the local development database,
 * memory backend, started here), the real server process, the plain-Fastify floor process,
 * a driver client for seeding and for the bare-driver floor, and tokens.
 */
export interface BenchContext {
  opts: BenchOptions;
  databaseKind: 'MONGODB_URI' | 'local development database (mongo-java-server, memory)';
  mongoUri: string;
  client: MongoClient;
  /** The server process's database. */
  db: Db;
  server: Child;
  fastify: Child;
  /** The database name the server uses (a floor or another server process can be pointed at it). */
  dbName: string;
  /**
   * Starts another process of the real server (same secret, same database name) on `mongoUri`
   * (e.g. through a byte-counting proxy); the caller stops it.
   */
  startServer(name: string, mongoUri: string, env?: Record<string, string>): Promise<Child>;
  /** Starts a floor process of dist/bench/floors/ with the database's URI and name in its environment; the caller stops it. */
  startFloor(name: string, file: string): Promise<Child>;
  /** CPU probes: the server process, the plain-Fastify process, the database JVM (local only), this process. */
  probes: { server: CpuProbe, fastify: CpuProbe, db: CpuProbe | undefined, self: CpuProbe };
  token(options: MintOptions): Promise<string>;
  close(): Promise<void>;
}

export async function createContext (opts: BenchOptions): Promise<BenchContext> {
  const { log } = opts;
  const fromEnv = process.env['MONGODB_URI'];
  let stopDb = async (): Promise<void> => {};
  let mongoUri: string;
  let databaseKind: BenchContext['databaseKind'];
  let dbProbe: CpuProbe | undefined;
  if (fromEnv !== undefined && fromEnv !== '') {
    mongoUri = fromEnv;
    databaseKind = 'MONGODB_URI';
    log('database: MONGODB_URI');
  } else {
    log('database: starting the local development database (mongo-java-server, memory backend)');
    const local = await startLocalMongo({ backend: 'memory', port: 0, log: (line) => log(line) });
    mongoUri = local.uri;
    databaseKind = 'local development database (mongo-java-server, memory)';
    stopDb = local.stop;
    const pid = findLocalMongoPid();
    dbProbe = pid === undefined ? undefined : procCpuProbe('db', pid);
  }

  const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const dbName = `bench_${suffix}`;
  const secret = randomBytes(32).toString('base64url');
  // The same pool settings as the service's own client (src/store/mongo.ts).
  const client = await new MongoClient(mongoUri, { serverSelectionTimeoutMS: 10_000, maxPoolSize: 50, retryWrites: true }).connect();

  const startServer = (name: string, uri: string, nodeArgs: string[] = [], env: Record<string, string> = {}): Promise<Child> => startNode({
    name,
    entry: path.join(distDir, 'src', 'server.js'),
    env: { MONGODB_URI: uri, MONGODB_DB: dbName, AUTH_JWT_SECRET: secret, LOG_LEVEL: 'warn', NODE_ENV: 'production', ...env },
    nodeArgs,
    readyPath: '/readyz',
    log,
  });
  const server = await startServer('server', mongoUri, [
    ...(opts.profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', opts.profileDir]),
    ...(process.env['BENCH_SERVER_NODE_ARGS']?.split(' ').filter((a) => a !== '') ?? []),
  ]);
  const fastify = await startNode({
    name: 'plain-fastify floor',
    entry: path.join(distDir, 'bench', 'floors', 'plainFastify.js'),
    env: { NODE_ENV: 'production' },
    readyPath: '/healthz',
    log,
  });

  return {
    opts,
    databaseKind,
    mongoUri,
    client,
    db: client.db(dbName),
    server,
    fastify,
    dbName,
    startServer: (name, uri, env) => startServer(name, uri, [], env),
    startFloor: (name, file) => startNode({
      name,
      entry: path.join(distDir, 'bench', 'floors', file),
      env: { MONGODB_URI: mongoUri, MONGODB_DB: dbName, NODE_ENV: 'production' },
      readyPath: '/healthz',
      log,
    }),
    probes: { server: server.cpu, fastify: fastify.cpu, db: dbProbe, self: selfCpuProbe('self') },
    token: (options) => mintToken({ kind: 'secret', secret }, { ttlSeconds: 6 * 3600, ...options }),
    close: async () => {
      await Promise.allSettled([server.stop(), fastify.stop()]);
      await client.db(dbName).dropDatabase().catch(() => undefined);
      await client.close();
      await stopDb();
    },
  };
}

/** Sets the plain-Fastify floor's answer for a route: the real service's answer, same status, same body. */
export async function setCanned (ctx: BenchContext, route: 'report' | 'promote' | 'listing' | 'rollout', status: number, body: string): Promise<void> {
  const client = new HttpClient(ctx.fastify.url, 1);
  try {
    const res = await client.request('PUT', `/__bench/canned/${route}`, {}, JSON.stringify({ status, body: JSON.parse(body) }));
    if (res.status !== 200) throw new Error(`setting the canned ${route} answer: ${res.status} ${res.body}`);
  } finally {
    client.close();
  }
}

/** The CPU probes of a block: the process that does the work, the database, and this process. */
export function probesFor (ctx: BenchContext, subject: Subject): CpuProbe[] {
  const list: CpuProbe[] = [];
  if (subject === 'server') list.push({ ...ctx.probes.server, name: 'service' });
  if (subject === 'fastify') list.push({ ...ctx.probes.fastify, name: 'service' });
  if (subject === 'driver') list.push({ ...ctx.probes.self, name: 'service' });
  if (ctx.probes.db) list.push(ctx.probes.db);
  if (subject !== 'driver') list.push({ ...ctx.probes.self, name: 'client' });
  return list;
}

/**
 * A closed loop of HTTP requests to `url` — the server or the plain-Fastify floor — over an HTTP
 * client of its own (closed afterwards), with that subject's CPU probes (or `cpu`: a floor process's).
 */
export async function httpLoop (
  ctx: BenchContext,
  subject: 'server' | 'fastify',
  url: string,
  loop: { concurrency: number, total: number, maxMs?: number | undefined },
  op: (client: HttpClient, worker: number, index: number) => Promise<string>,
  cpu: CpuProbe[] = probesFor(ctx, subject),
): Promise<Samples> {
  const client = new HttpClient(url, loop.concurrency);
  try {
    return await closedLoop({
      concurrency: loop.concurrency,
      total: loop.total,
      ...(loop.maxMs === undefined ? {} : { maxMs: loop.maxMs }),
      cpu,
      op: async (worker, index) => await op(client, worker, index),
    });
  } finally {
    client.close();
  }
}

/** The three subjects' merged figures, and each round's (to show how much they moved); `extra`: other blocks measured in the same rounds. */
export type Triple = Record<Subject, Summary> & { rounds: RoundFigures[], extra?: Record<string, Summary> };

/** One round's figures of the three subjects, and of the extra blocks measured in that round. */
export type RoundFigures = Record<Subject, Summary> & { extra?: Record<string, Summary> };

/**
 * Runs the three subjects in `rounds` interleaved rounds (server, plain Fastify, bare driver;
 * the next round in reverse order; …) so that drift (JIT, GC, collection growth, other load on
 * the machine) hits all three alike, and merges each subject's blocks. `extra` blocks (another
 * floor) run in the same rounds, after the three (before them in the reversed rounds).
 */
export async function measureTriple (
  ctx: BenchContext, label: string, rounds: number, blocks: Record<Subject, () => Promise<Samples>>, extra: Record<string, () => Promise<Samples>> = {},
): Promise<Triple> {
  const triples = await measureTriples(ctx, () => label, rounds, [0], () => blocks, () => extra);
  return triples.get(0) as Triple;
}

/**
 * Several triples (e.g. the levels of a curve) measured in the same rounds: in every round each
 * key in turn (the order of the keys alternates too), and for each key its three subjects and
 * extra blocks as in `measureTriple`; `before(key)` runs before a key's blocks (not measured).
 * The levels of a curve are then compared under the same drift and the same other load.
 */
export async function measureTriples<K> (
  ctx: BenchContext,
  label: (key: K) => string,
  rounds: number,
  keys: readonly K[],
  blocks: (key: K) => Record<Subject, () => Promise<Samples>>,
  extra: (key: K) => Record<string, () => Promise<Samples>> = () => ({}),
  before: (key: K) => Promise<void> = async () => {},
): Promise<Map<K, Triple>> {
  const merged = new Map<K, { subjects: Record<Subject, Samples>, extra: Record<string, Samples>, rounds: RoundFigures[] }>();
  for (const key of keys) {
    merged.set(key, { subjects: { server: emptySamples(), fastify: emptySamples(), driver: emptySamples() }, extra: {}, rounds: [] });
  }
  for (let round = 1; round <= rounds; round++) {
    const forward = round % 2 === 1;
    for (const key of forward ? keys : [...keys].reverse()) {
      const into = merged.get(key);
      if (!into) continue;
      await before(key);
      const extraOfRound: Record<string, Summary> = {};
      const runExtra = async (): Promise<void> => {
        for (const [name, block] of Object.entries(extra(key))) {
          const samples = await block();
          extraOfRound[name] = summarize(samples);
          into.extra[name] = merge(into.extra[name] ?? emptySamples(), samples);
        }
      };
      const order: Subject[] = forward ? ['server', 'fastify', 'driver'] : ['driver', 'fastify', 'server'];
      const these: Partial<Record<Subject, Summary>> = {};
      if (!forward) await runExtra();
      for (const subject of order) {
        const block = await blocks(key)[subject]();
        these[subject] = summarize(block);
        merge(into.subjects[subject], block);
      }
      if (forward) await runExtra();
      const r = these as Record<Subject, Summary>;
      into.rounds.push(Object.keys(extraOfRound).length > 0 ? { ...r, extra: extraOfRound } : r);
      ctx.opts.log(`  ${label(key)}: round ${round}/${rounds}: server ${r.server.throughput.toFixed(0)}/s p50 ${r.server.p50.toFixed(1)} ms, ` +
        `bare driver ${r.driver.throughput.toFixed(0)}/s p50 ${r.driver.p50.toFixed(1)} ms, plain Fastify ${r.fastify.throughput.toFixed(0)}/s`);
    }
  }
  const out = new Map<K, Triple>();
  for (const [key, m] of merged) {
    const { server, fastify, driver } = m.subjects;
    const triple: Triple = { server: summarize(server), fastify: summarize(fastify), driver: summarize(driver), rounds: m.rounds };
    if (Object.keys(m.extra).length > 0) triple.extra = Object.fromEntries(Object.entries(m.extra).map(([k, v]) => [k, summarize(v)]));
    out.set(key, triple);
  }
  return out;
}

/**
 * A counter from the server's GET /metrics (Prometheus text), e.g. the status CAS conflicts;
 * undefined when the server has no such endpoint or series (then the figure is not shown).
 */
export async function serverCounter (ctx: BenchContext, series: string): Promise<number | undefined> {
  const client = new HttpClient(ctx.server.url, 1);
  try {
    const res = await client.request('GET', '/metrics', {});
    if (res.status !== 200) return undefined;
    let total: number | undefined;
    for (const line of res.body.split('\n')) {
      if (line.startsWith(series)) total = (total ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return total;
  } catch {
    return undefined;
  } finally {
    client.close();
  }
}
