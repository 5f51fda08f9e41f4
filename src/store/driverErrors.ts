import {
  BSON, MongoBulkWriteError, MongoClientClosedError, MongoError, MongoInvalidArgumentError, MongoNetworkError, MongoNotConnectedError,
  MongoOperationTimeoutError, MongoServerError,
  MongoServerSelectionError, MongoTopologyClosedError,
} from 'mongodb';
import { errors } from '../errors.js';

/**
 * The driver's errors, classified here and nowhere else: the store translates an unreachable
 * (or momentarily contended) database into the domain's `database-unavailable`, and answers
 * duplicate keys as typed results, so nothing outside src/store knows the driver's errors.
 */

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
 * A bulk write that failed only because a unique index refused some of its documents: the
 * indexes of the refused operations and the upserts that did happen (operation index → id);
 * undefined for any other error, which the caller rethrows.
 */
export function duplicateKeyRefusals (err: unknown): { refused: number[], upsertedIds: Record<number, unknown> } | undefined {
  if (!(err instanceof MongoBulkWriteError)) return undefined;
  const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  if (writeErrors.some((writeError) => writeError.code !== DUPLICATE_KEY)) return undefined;
  return { refused: writeErrors.map((writeError) => writeError.index), upsertedIds: err.result.upsertedIds };
}

/**
 * The operations of a bulk write that the server refused one by one (operation index → a duplicate
 * key, or the error of that operation alone), the others having been written; undefined when the
 * bulk write failed as a whole (no connection, a write concern error: nothing is known of any
 * operation), which the caller rethrows.
 */
export function refusedWrites (err: unknown): Map<number, 'duplicate-key' | Error> | undefined {
  if (!(err instanceof MongoBulkWriteError) || err.result?.getWriteConcernError() !== undefined) return undefined;
  const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  if (writeErrors.length === 0) return undefined;
  return new Map(writeErrors.map((writeError) => [
    writeError.index,
    writeError.code === DUPLICATE_KEY
      ? 'duplicate-key' as const
      : new MongoServerError({ message: writeError.errmsg ?? 'write refused', code: writeError.code }),
  ]));
}

/**
 * Errors the driver raises while building a command, before anything is sent (a document over the
 * size limit, a value BSON cannot hold): the command had no effect.
 */
export const isRefusedBeforeSending = (err: unknown): boolean =>
  err instanceof MongoInvalidArgumentError || err instanceof BSON.BSONError || err instanceof RangeError;

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
    // PoolClosedError (not exported), MongoClientClosedError: an operation caught by the watchdog's reconnect.
    err.name === 'MongoPoolClosedError' ||
    err instanceof MongoClientClosedError ||
    // WaitQueueTimeoutError (not exported): no connection of the pool came free within waitQueueTimeoutMS.
    err.name === 'MongoWaitQueueTimeoutError' ||
    err.hasErrorLabel('RetryableWriteError') ||
    err.hasErrorLabel('TransientTransactionError') ||
    (err instanceof MongoServerError && typeof err.code === 'number' && TRANSIENT_SERVER_CODES.has(err.code))) return true;
  const wrapped = (err as { errorResponse?: unknown }).errorResponse ?? err.cause;
  return wrapped !== err && isDatabaseUnavailableError(wrapped, depth + 1);
}

/** Rethrows a driver error as the domain error it means (`database-unavailable`), anything else as it is. */
export function translateDriverError (err: unknown): never {
  if (isDatabaseUnavailableError(err)) throw errors.databaseUnavailable(err);
  throw err;
}

/**
 * The repository with every method's driver errors translated (one mechanism for every store,
 * instead of a try/catch in each method).
 */
export function withDomainErrors<T extends object> (repository: T): T {
  return new Proxy(repository, {
    get (target, property) {
      // The target itself is the receiver: getters and methods may use private fields.
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        try {
          const result: unknown = value.apply(target, args);
          return result instanceof Promise ? result.catch(translateDriverError) : result;
        } catch (err) {
          return translateDriverError(err);
        }
      };
    },
  });
}
