import { MongoClient, type Db, type IndexDescription, type MongoClientOptions } from 'mongodb';
import type { DatabaseHealth } from '../domain/ports/index.js';
import { endWritesWithTheirConnection } from './driverConnection.js';
import { indexPlan } from './indexPlan.js';

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
}

/** A connection string the driver cannot use: why, without the string itself (it may hold a password). */
export class InvalidConnectionString extends Error {
  constructor (reason: string) {
    super(reason);
    this.name = 'InvalidConnectionString';
  }
}

/** The client for a connection string, or InvalidConnectionString (the driver parses it here, without connecting). */
function clientFor (uri: string, options: MongoClientOptions): MongoClient {
  try {
    return new MongoClient(uri, options);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    // Never the string itself, nor anything of its user info, whatever the driver's message quotes of it.
    const redacted = reason.split(uri).join('<the connection string>').replace(/\/\/[^@\s/]*@/g, '//<credentials>@').slice(0, 200);
    throw new InvalidConnectionString(`not a connection string the MongoDB driver can use (${redacted})`);
  }
}

/**
 * The one owner of the driver. Everything that talks to MongoDB gets its
 * collections from here. Connection timeouts are bounded so that a request
 * fails with `database-unavailable` in about `timeoutMs` instead of hanging.
 */
export class Database implements DatabaseHealth {
  readonly client: MongoClient;
  readonly db: Db;
  #indexesReady = false;
  /** When each server's heartbeat in flight started, by server address (one monitor per member of a replica set). */
  readonly #heartbeatsSince = new Map<string, number>();
  #reconnectPending = false;
  #recovering = false;
  #closed = false;
  readonly #watchdog: NodeJS.Timeout;

  constructor (opts: DatabaseOptions) {
    endWritesWithTheirConnection();
    // A command that hears nothing back for this long fails (503, retryable): a connection the database
    // dropped without a reset ends within a client's patience instead of holding its request for the
    // 10 s and more clients wait. So does a wait for a free connection of the pool (a slow database
    // under load): the request is answered 503 with Retry-After instead of queueing without bound
    // behind requests whose clients gave up long ago.
    const commandBoundMs = Math.max(5_000, Math.round(opts.timeoutMs * 2.5));
    this.client = clientFor(opts.uri, {
      appName: opts.appName ?? 'cloudly-release-control-plane',
      serverSelectionTimeoutMS: opts.timeoutMs,
      connectTimeoutMS: opts.timeoutMs,
      socketTimeoutMS: commandBoundMs,
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

  get indexesReady (): boolean {
    return this.#indexesReady;
  }

  /** Creates every index of the plan. Idempotent: re-creating an identical index is a no-op. */
  async ensureIndexes (): Promise<void> {
    const byCollection = new Map<string, IndexDescription[]>();
    for (const entry of indexPlan) {
      const list = byCollection.get(entry.collection) ?? [];
      list.push({ key: entry.key, name: entry.name, unique: entry.unique, sparse: entry.sparse, expireAfterSeconds: entry.expireAfterSeconds });
      byCollection.set(entry.collection, list);
    }
    for (const [collection, indexes] of byCollection) {
      await this.db.collection(collection).createIndexes(indexes);
    }
    this.#indexesReady = true;
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
