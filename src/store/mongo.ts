import {
  MongoClient, MongoNetworkError, MongoOperationTimeoutError, MongoServerSelectionError,
  MongoNotConnectedError, MongoTopologyClosedError, MongoError,
  type Db, type IndexDescription,
} from 'mongodb';
import { indexPlan } from './indexPlan.js';

export interface DatabaseOptions {
  uri: string;
  dbName: string;
  /** Server selection / connect timeout: how long a request waits for an absent database. */
  timeoutMs: number;
  appName?: string;
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
    err.hasErrorLabel('RetryableWriteError') ||
    err.hasErrorLabel('TransientTransactionError')) return true;
  const wrapped = (err as { errorResponse?: unknown }).errorResponse ?? err.cause;
  return wrapped !== err && isDatabaseUnavailableError(wrapped, depth + 1);
}
