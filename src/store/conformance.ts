import { randomBytes } from 'node:crypto';
import type { Db, MongoClientOptions } from 'mongodb';
import type { ConformanceCheck, ConformanceReport } from '../domain/ports/database.js';
import {
  boundedPush, compareAndSwap, guardedUpdates, increments, indexPlanCreation, projectedFindOneAndUpdate, unorderedBulkWrite, unorderedReplacements,
  uniqueInserts, type ProbeContext, type ScratchDoc,
} from './conformanceChecks.js';
import { clientFor } from './connectionString.js';

/**
 * The database conformance check (issue 24, docs/operations.md "Database compatibility"): every
 * guarantee of the design rests on single-document atomicity and unique indexes, and the store uses a
 * few commands and options that MongoDB-compatible servers do not all implement. A bounded probe, in
 * scratch collections of the configured database that it creates and drops, tells a server that would
 * break a guarantee (refused: the service does not run on it) from one that lacks an optional feature
 * (degraded: TTL expiry, whose work the periodic sweep does anyway).
 */

export interface ProbeOptions {
  uri: string;
  dbName: string;
  /** The service's driver options (timeouts, appName); the probe sets its own pool. */
  clientOptions?: MongoClientOptions;
  /** Operations sent at once in each concurrency check; default 20. */
  concurrency?: number;
  /** How many times each concurrency check runs; default 3. */
  rounds?: number;
  /** The whole check's bound; default 20 s. */
  timeoutMs?: number;
}

/** The check did not finish within its bound: nothing is concluded (treated like a database that did not answer). */
export class ConformanceTimeout extends Error {
  constructor (readonly timeoutMs: number) {
    super(`the database conformance check did not finish within ${timeoutMs} ms`);
    this.name = 'ConformanceTimeout';
  }
}

const SCRATCH_PREFIX = 'conformance_check_';
/** A scratch collection this old was left by a check that was killed: the next check drops it. */
const ABANDONED_AFTER_MS = 10 * 60_000;
const POOL_WARM_MS = 3_000;

/**
 * Runs every check and answers the report; rejects when the database does not answer (or not within
 * `timeoutMs`: ConformanceTimeout), and with InvalidConnectionString for a URI the driver cannot use.
 */
export async function probeConformance (options: ProbeOptions): Promise<ConformanceReport> {
  const started = Date.now();
  const concurrency = options.concurrency ?? 20;
  const timeoutMs = options.timeoutMs ?? 20_000;
  // Its own client, with a connection per concurrent operation ready before the races start: with the
  // driver's defaults (2 connections opened at a time) the operations would queue for connections and
  // reach the server one after another, and a server that is not atomic would pass.
  const client = clientFor(options.uri, {
    ...options.clientOptions, maxPoolSize: concurrency, minPoolSize: concurrency, maxConnecting: concurrency,
  });
  const ready = new Map<string, number>();
  client.on('connectionReady', ({ address }) => { ready.set(address, (ready.get(address) ?? 0) + 1); });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new ConformanceTimeout(timeoutMs)), timeoutMs); });
  try {
    return await Promise.race([timeout, (async () => {
      await client.connect();
      const db = client.db(options.dbName);
      await warmPool(db, concurrency, () => Math.max(0, ...ready.values()));
      const checks = await runChecks(db, concurrency, options.rounds ?? 3);
      return { server: await serverName(db), checks, refused: checks.find((check) => check.outcome === 'refused'), elapsedMs: Date.now() - started };
    })()]);
  } finally {
    clearTimeout(timer);
    await client.close();
  }
}

async function runChecks (db: Db, concurrency: number, rounds: number): Promise<ConformanceCheck[]> {
  await dropAbandonedScratch(db);
  const base = `${SCRATCH_PREFIX}${Date.now()}_${randomBytes(3).toString('hex')}`;
  const used = new Set<string>();
  const ctx: ProbeContext = {
    db,
    concurrency,
    rounds,
    scratch: (suffix) => {
      used.add(`${base}_${suffix}`);
      return db.collection<ScratchDoc>(`${base}_${suffix}`);
    },
  };
  try {
    const checks: ConformanceCheck[] = [];
    const each = [compareAndSwap, guardedUpdates, increments, uniqueInserts, projectedFindOneAndUpdate, boundedPush, unorderedBulkWrite, unorderedReplacements];
    for (const check of each) {
      checks.push(await check(ctx));
    }
    checks.push(...await indexPlanCreation(ctx));
    return checks;
  } finally {
    // Dropped one by one: a failed drop (the database went away) leaves litter the next check removes.
    for (const name of used) await db.collection(name).drop().catch(() => undefined);
  }
}

/** Opens `concurrency` connections (minPoolSize fills the pool; a burst of pings hurries it), bounded by POOL_WARM_MS. */
async function warmPool (db: Db, concurrency: number, readyConnections: () => number): Promise<void> {
  const until = Date.now() + POOL_WARM_MS;
  await Promise.all(Array.from({ length: concurrency }, async () => await db.command({ ping: 1 })));
  while (readyConnections() < concurrency && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Scratch collections of checks that were killed midway (named with their start time). */
async function dropAbandonedScratch (db: Db): Promise<void> {
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((info) => info.name);
  for (const name of names) {
    const startedAt = Number(/^conformance_check_(\d+)_/.exec(name)?.[1]);
    if (startedAt > 0 && Date.now() - startedAt > ABANDONED_AFTER_MS) await db.collection(name).drop().catch(() => undefined);
  }
}

/** The server as it names itself: FerretDB says what it is beside the MongoDB version it reports. */
async function serverName (db: Db): Promise<string> {
  const info = await db.admin().command({ buildInfo: 1 }).catch(() => ({}) as Record<string, unknown>);
  const version = typeof info['version'] === 'string' ? info['version'] : 'unknown';
  const ferretdb = info['ferretdbVersion'];
  return typeof ferretdb === 'string' ? `FerretDB ${ferretdb} (reports MongoDB ${version})` : `reports MongoDB ${version}`;
}
