import { createRequire } from 'node:module';
import { MongoClientClosedError, MongoNetworkError, MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailableError } from '../../../src/store/driverErrors.js';

const serverError = (code: number, errmsg = 'x') => new MongoServerError({ ok: 0, code, errmsg });

describe('isDatabaseUnavailableError: what answers 503 database-unavailable (retry) rather than 500', () => {
  it('network and transient server conditions: write conflicts, lock timeouts, deadlocks and serialization failures of PostgreSQL-backed servers', () => {
    expect(isDatabaseUnavailableError(new MongoNetworkError('connection reset'))).toBe(true);
    for (const code of [112, 24, 16908292, 16777220]) expect(isDatabaseUnavailableError(serverError(code)), `code ${code}`).toBe(true);
    const labelled = serverError(1);
    labelled.addErrorLabel('TransientTransactionError');
    expect(isDatabaseUnavailableError(labelled)).toBe(true);
  });

  it('the pool had no connection in time, or the client was closed under the request (the watchdog reconnecting)', () => {
    // WaitQueueTimeoutError is not exported by the driver: its own class, from where the pool throws it.
    const { WaitQueueTimeoutError } = createRequire(import.meta.url)('mongodb/lib/cmap/errors.js') as {
      WaitQueueTimeoutError: new (message: string, address: string) => Error,
    };
    const waited = new WaitQueueTimeoutError('Timed out while checking out a connection from connection pool', '127.0.0.1:27017');
    expect(isDatabaseUnavailableError(waited)).toBe(true);
    expect(isDatabaseUnavailableError(new MongoClientClosedError())).toBe(true);
  });

  it('errors that a retry repeats stay what they are: duplicate keys, bad requests, programming errors', () => {
    for (const code of [11000, 2, 9, 13, 50]) expect(isDatabaseUnavailableError(serverError(code)), `code ${code}`).toBe(false);
    expect(isDatabaseUnavailableError(new TypeError('boom'))).toBe(false);
    expect(isDatabaseUnavailableError('not an error')).toBe(false);
  });
});
