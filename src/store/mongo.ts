import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db, MongoClient, MongoClientOptions } from 'mongodb';
import type { ConformanceCheck, ConformanceReport, DatabaseHealth, IndexPlanOutcome } from '../domain/ports/database.js';
import { errors } from '../errors.js';
import { ConformanceTimeout, probeConformance } from './conformance.js';
import { clientFor } from './connectionString.js';
import { serverAnswer } from './conformanceChecks.js';
import { endWritesWithTheirConnection } from './driverConnection.js';
import { isDatabaseUnavailableError } from './driverErrors.js';
import { indexOptions, indexPlan } from './indexPlan.js';
import { runMigrations, type AppliedMigration } from './migrations.js';

export interface DatabaseOptions {
  uri: string;
  dbName: string;
  /** Server selection / connect timeout: how long a request waits for an absent database. */
  timeoutMs: number;
  appName?: string;
  /** Connections per process; default 50. */
  maxPoolSize?: number;
  /** Told when the driver's server monitor hung and the client is reconnected (see `Database`). */
  onMonitorHung?: (info: { heartbeatStartedMsAgo: number }) => void;
  /**
   * The database must pass the conformance check (./conformance.ts) before the repositories reach it
   * (src/store/index.ts gates them); default false (the tests' apps, on the suite's own database).
   */
  checkConformance?: boolean;
  /** Told which start-up migrations this process applied, with their counts (./migrations.ts), once they all are. */
  onMigrated?: (applied: AppliedMigration[]) => void;
}

/** How long the conformance check may take (connections included) before it counts as not concluded (a database that answers but hangs midway). */
export const conformanceBoundMs = (timeoutMs: number): number => Math.max(20_000, timeoutMs * 5);

export { InvalidConnectionString } from './connectionString.js';

/** The refusal of a check as the error every caller answers (`database-refused`): the guarantee and what the server did. */
export const conformanceRefusal = (check: ConformanceCheck): Error => errors.databaseRefused(check.guarantee, check.detail);

/**
 * The one owner of the driver. Everything that talks to MongoDB gets its
 * collections from here. Connection timeouts are bounded so that a request
 * fails with `database-unavailable` in about `timeoutMs` instead of hanging.
 */
export class Database implements DatabaseHealth {
  readonly client: MongoClient;
  readonly db: Db;
  #indexesReady = false;
  readonly #probe: { uri: string, dbName: string, clientOptions: MongoClientOptions, timeoutMs: number } | undefined;
  /** The report of the conformance check once it concluded (passed or refused: a server does not change its nature). */
  #conformance: ConformanceReport | undefined;
  #checking: Promise<ConformanceReport> | undefined;
  /** When each server's heartbeat in flight started, by server address (one monitor per member of a replica set). */
  readonly #heartbeatsSince = new Map<string, number>();
  #reconnectPending = false;
  #recovering = false;
  #closed = false;
  readonly #watchdog: NodeJS.Timeout;
  /** The start-up migrations are recorded applied (by this process or another). */
  #migrated = false;
  #migrating: Promise<void> | undefined;
  /** This process, as the owner of a migration's claim. */
  readonly #owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly #onMigrated: ((applied: AppliedMigration[]) => void) | undefined;

  constructor (opts: DatabaseOptions) {
    endWritesWithTheirConnection();
    // A command that hears nothing back for this long fails (503, retryable): a connection the database
    // dropped without a reset ends within a client's patience instead of holding its request for the
    // 10 s and more clients wait. So does a wait for a free connection of the pool (a slow database
    // under load): the request is answered 503 with Retry-After instead of queueing without bound
    // behind requests whose clients gave up long ago.
    const commandBoundMs = Math.max(5_000, Math.round(opts.timeoutMs * 2.5));
    const connection: MongoClientOptions = {
      appName: opts.appName ?? 'cloudly-release-control-plane',
      serverSelectionTimeoutMS: opts.timeoutMs,
      connectTimeoutMS: opts.timeoutMs,
      socketTimeoutMS: commandBoundMs,
    };
    this.client = clientFor(opts.uri, {
      ...connection,
      waitQueueTimeoutMS: commandBoundMs,
      heartbeatFrequencyMS: 2_000,
      maxPoolSize: opts.maxPoolSize ?? 50,
      // Writes are compare-and-swap or idempotent upserts: a driver retry of a
      // write whose reply was lost is safe (and exactly-once on replica sets).
      retryWrites: true,
      // Optional fields are written as absent, never as null: no `...(x ? { x } : {})` in the stores.
      ignoreUndefined: true,
    });
    this.db = this.client.db(opts.dbName);
    this.#onMigrated = opts.onMigrated;
    // Bounded: a database that answers but hangs midway is not checked for longer than this (then: not concluded, tried again).
    this.#probe = opts.checkConformance === true
      ? { uri: opts.uri, dbName: opts.dbName, clientOptions: connection, timeoutMs: conformanceBoundMs(opts.timeoutMs) }
      : undefined;

    // Watchdog for a driver 6.22 hang: a server heartbeat written to a monitoring connection
    // whose socket the database closed a moment earlier (the database stopping) waits for a
    // 'drain' that never comes (`Connection.writeCommand`: a destroyed socket's write() returns
    // false without an 'error'). The monitor then stays "monitoring" forever, the server stays
    // Unknown and every operation fails server selection even after the database is back.
    // ./driverConnection.ts now ends such a write with its connection; the watchdog stays for any
    // other way a heartbeat never ends. A legitimate heartbeat ends within about 2 × timeoutMs
    // (connect + hello, each bounded); one still running after hungAfterMs is hung: close the
    // client and connect it again. Each server's monitor is watched apart: another member's
    // heartbeats succeeding say nothing of this one's.
    const hungAfterMs = Math.max(10_000, opts.timeoutMs * 4);
    this.client.on('serverHeartbeatStarted', ({ connectionId }) => {
      if (!this.#heartbeatsSince.has(connectionId)) this.#heartbeatsSince.set(connectionId, Date.now());
    });
    this.client.on('serverHeartbeatSucceeded', ({ connectionId }) => { this.#heartbeatsSince.delete(connectionId); });
    this.client.on('serverHeartbeatFailed', ({ connectionId }) => { this.#heartbeatsSince.delete(connectionId); });
    // Driver 6.22 closes its topology when the first connect fails (the database not up yet at start-up)
    // and then keeps handing every operation that closed topology ("Topology is closed") for good: a
    // topology closed by anyone but this class is replaced by a fresh one, retried every second.
    this.client.on('topologyClosed', () => {
      if (!this.#closed && !this.#recovering) this.#reconnectPending = true;
    });
    this.#watchdog = setInterval(() => {
      const since = Math.min(...this.#heartbeatsSince.values());
      if (Date.now() - since > hungAfterMs && !this.#reconnectPending) {
        opts.onMonitorHung?.({ heartbeatStartedMsAgo: Date.now() - since });
        this.#heartbeatsSince.clear();
        this.#reconnectPending = true;
      }
      if (this.#reconnectPending) void this.#reconnect();
    }, 1_000);
    this.#watchdog.unref();
  }

  /** Closes the client (its hung monitor or closed topology with it) and connects a fresh topology; retried every second until it succeeds. */
  async #reconnect (): Promise<void> {
    if (this.#recovering || this.#closed) return;
    this.#recovering = true;
    try {
      await this.client.close();
      if (this.#closed) return;
      await this.client.connect();
      this.#reconnectPending = false;
      if (this.#closed) await this.client.close();
    } catch {
      // The database is away: operations fail with database-unavailable meanwhile; the next tick tries again.
    } finally {
      this.#recovering = false;
    }
  }

  get ready (): boolean {
    const conformant = this.#probe === undefined || (this.#conformance !== undefined && this.#conformance.refused === undefined);
    return this.#indexesReady && conformant;
  }

  /**
   * Undefined when the repositories may reach the database (the check passed, or is not required);
   * else the check under way, which rejects with why they may not.
   */
  conformanceGate (): Promise<unknown> | undefined {
    if (this.#probe === undefined || (this.#conformance !== undefined && this.#conformance.refused === undefined)) {
      // The read and report paths know the current shape of documents only: they wait for the migrations too.
      return this.#migrated ? undefined : this.migrate();
    }
    return this.verifyConformance().then(() => this.migrate());
  }

  /**
   * Runs the start-up migrations (./migrations.ts) not yet recorded applied, once per process: shared by
   * every caller that waits for them (start-up, /readyz, the repositories); a failure (the database away)
   * is not kept, the next caller tries again.
   */
  async migrate (): Promise<void> {
    if (this.#migrated) return;
    this.#migrating ??= runMigrations(this.db, { owner: this.#owner })
      .then((applied) => {
        this.#migrated = true;
        this.#onMigrated?.(applied);
      })
      .finally(() => { this.#migrating = undefined; });
    await this.#migrating;
  }

  async verifyConformance (): Promise<ConformanceReport | undefined> {
    const probe = this.#probe;
    if (probe === undefined) return undefined;
    if (this.#conformance === undefined) {
      // One check at a time, shared by every caller that waits for it (requests, /readyz, start-up).
      this.#checking ??= probeConformance(probe).finally(() => { this.#checking = undefined; });
      try {
        this.#conformance = await this.#checking;
      } catch (err) {
        if (err instanceof ConformanceTimeout) throw errors.databaseUnavailable(err);
        if (isDatabaseUnavailableError(err)) throw err;
        // A command of the check itself refused (no right to create a collection, say): told, not kept.
        throw errors.databaseRefused('the conformance check', serverAnswer(err));
      }
    }
    if (this.#conformance.refused !== undefined) throw conformanceRefusal(this.#conformance.refused);
    return this.#conformance;
  }

  /**
   * Runs the start-up migrations (./migrations.ts), then creates each index of the plan on its own (idempotent: re-creating an identical index is a no-op),
   * so that one refused index (a TTL option FerretDB does not implement) leaves the others created.
   */
  async ensureIndexes (): Promise<IndexPlanOutcome> {
    // The migrations first: the database counts as ready (`ready`) only once its documents have the current shape.
    await this.migrate();
    const outcome: IndexPlanOutcome = { created: 0, refused: [] };
    for (const entry of indexPlan) {
      const { collection, name, key, unique, expireAfterSeconds } = entry;
      try {
        await this.db.collection(collection).createIndex(key, indexOptions(entry));
        outcome.created++;
      } catch (err) {
        if (isDatabaseUnavailableError(err)) throw err;
        outcome.refused.push({ collection, name, unique: unique === true, ttl: expireAfterSeconds !== undefined, reason: serverAnswer(err) });
      }
    }
    const unique = outcome.refused.find((refusal) => refusal.unique);
    if (unique !== undefined) throw errors.databaseRefused(`createIndexes ${unique.name} on ${unique.collection}`, unique.reason);
    this.#indexesReady = true;
    return outcome;
  }

  async prepare (): Promise<void> {
    await this.verifyConformance();
    await this.ensureIndexes();
  }

  /** True when the database answers a ping within `timeoutMs`. Never throws. */
  async ping (timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), timeoutMs); });
    try {
      return await Promise.race([
        this.db.command({ ping: 1 }).then((reply) => reply['ok'] === 1, () => false),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Calls `listener` when the driver's server monitor fails a heartbeat (the
   * database is unreachable). Cheap: at most one event per heartbeat interval,
   * and no command monitoring needed.
   */
  onHeartbeatFailed (listener: () => void): void {
    this.client.on('serverHeartbeatFailed', listener);
  }

  async close (): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watchdog);
    await this.client.close();
  }
}
