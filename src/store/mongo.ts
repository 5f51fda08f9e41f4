import {
  MongoClient, MongoNetworkError, MongoOperationTimeoutError, MongoServerSelectionError,
  MongoNotConnectedError, MongoTopologyClosedError, MongoError, MongoServerError,
  type Db, type IndexDescription,
} from 'mongodb';
import { indexPlan } from './indexPlan.js';

export interface DatabaseOptions {
  uri: string;
  dbName: string;
  /** Server selection / connect timeout: how long a request waits for an absent database. */
  timeoutMs: number;
  appName?: string;
  /** Told when the driver's server monitor hung and the client is reconnected (see `Database`). */
  onMonitorHung?: (info: { heartbeatStartedMsAgo: number }) => void;
}

/**
 * The one owner of the driver. Everything that talks to MongoDB gets its
 * collections from here. Connection timeouts are bounded so that a request
 * fails with `database-unavailable` in about `timeoutMs` instead of hanging.
 */
export class Database {
  readonly client: MongoClient;
  readonly db: Db;
  #indexesReady = false;
  /** When the driver's current server heartbeat started; undefined when none is in flight. */
  #heartbeatSince: number | undefined;
  #reconnectPending = false;
  #recovering = false;
  #closed = false;
  readonly #watchdog: NodeJS.Timeout;

  constructor (opts: DatabaseOptions) {
    this.client = new MongoClient(opts.uri, {
      appName: opts.appName ?? 'cloudly-release-control-plane',
      serverSelectionTimeoutMS: opts.timeoutMs,
      connectTimeoutMS: opts.timeoutMs,
      socketTimeoutMS: Math.max(10_000, opts.timeoutMs * 5),
      heartbeatFrequencyMS: 2_000,
      maxPoolSize: 50,
      // Writes are compare-and-swap or idempotent upserts: a driver retry of a
      // write whose reply was lost is safe (and exactly-once on replica sets).
      retryWrites: true,
    });
    this.db = this.client.db(opts.dbName);

    // Watchdog for a driver 6.22 hang: a server heartbeat written to a monitoring connection
    // whose socket the database closed a moment earlier (the database stopping) waits for a
    // 'drain' that never comes (`Connection.writeCommand`: a destroyed socket's write() returns
    // false without an 'error'). The monitor then stays "monitoring" forever, the server stays
    // Unknown and every operation fails server selection even after the database is back.
    // A legitimate heartbeat ends within about 2 × timeoutMs (connect + hello, each bounded);
    // one still running after hungAfterMs is hung: close the client and connect it again.
    const hungAfterMs = Math.max(10_000, opts.timeoutMs * 4);
    this.client.on('serverHeartbeatStarted', () => { this.#heartbeatSince ??= Date.now(); });
    this.client.on('serverHeartbeatSucceeded', () => { this.#heartbeatSince = undefined; });
    this.client.on('serverHeartbeatFailed', () => { this.#heartbeatSince = undefined; });
    this.#watchdog = setInterval(() => {
      const since = this.#heartbeatSince;
      if (since !== undefined && Date.now() - since > hungAfterMs && !this.#reconnectPending) {
        opts.onMonitorHung?.({ heartbeatStartedMsAgo: Date.now() - since });
        this.#heartbeatSince = undefined;
        this.#reconnectPending = true;
      }
      if (this.#reconnectPending) void this.#reconnect();
    }, 1_000);
    this.#watchdog.unref();
  }

  /** Closes the client (its hung monitor with it) and connects a fresh topology; retried every second until it succeeds. */
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
      list.push({
        key: entry.key,
        name: entry.name,
        ...(entry.unique ? { unique: true } : {}),
        ...(entry.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: entry.expireAfterSeconds }),
      });
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

/**
 * Socket errors that driver 6.22 lets through unwrapped: a command written to a
 * connection the server has just closed rejects with Node's plain `EPIPE`
 * ("This socket has been ended by the other party", from `Connection.writeCommand`
 * waiting for 'drain'), not a MongoNetworkError. Seen when the database stops under load.
 */
const SOCKET_ERROR_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN']);

/** MongoDB's duplicate key error code (E11000): a unique index refused a write. */
export const DUPLICATE_KEY = 11000;

export const isDuplicateKeyError = (err: unknown): boolean => err instanceof MongoServerError && err.code === DUPLICATE_KEY;

/**
 * Server errors that say "not now" about a write that had no effect, so a retry may succeed:
 * MongoDB's WriteConflict (112) and LockTimeout (24), and the PostgreSQL conditions that
 * MongoDB-compatible servers on PostgreSQL (FerretDB over DocumentDB) pass through with the
 * SQLSTATE packed into the code: deadlock_detected 40P01 (16908292), serialization_failure 40001
 * (16777220) — seen when concurrent writers contend for one document or unique key.
 */
const TRANSIENT_SERVER_CODES = new Set([24, 112, 16908292, 16777220]);

/**
 * Errors that mean "the database is not reachable right now" (as opposed to a
 * bug or a rejected write). They become `database-unavailable` + Retry-After.
 * A bulk write that lost its connection is a MongoBulkWriteError (a server error
 * class) carrying the MongoNetworkError as `errorResponse`: the wrapped error counts.
 */
export function isDatabaseUnavailableError (err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 3) return false;
  if (!(err instanceof MongoError)) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && SOCKET_ERROR_CODES.has(code);
  }
  if (err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoOperationTimeoutError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    // PoolClosedError (not exported): an operation caught by the watchdog's reconnect.
    err.name === 'MongoPoolClosedError' ||
    err.hasErrorLabel('RetryableWriteError') ||
    err.hasErrorLabel('TransientTransactionError') ||
    (err instanceof MongoServerError && typeof err.code === 'number' && TRANSIENT_SERVER_CODES.has(err.code))) return true;
  const wrapped = (err as { errorResponse?: unknown }).errorResponse ?? err.cause;
  return wrapped !== err && isDatabaseUnavailableError(wrapped, depth + 1);
}
