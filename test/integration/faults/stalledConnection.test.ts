import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailableError } from '../../../src/store/driverErrors.js';
import { Database } from '../../../src/store/mongo.js';
import { freshDatabaseName } from '../../support/database.js';
import { startMisbehavingProxy, type MisbehavingProxy } from '../../support/misbehavingProxy.js';
import { eventually, within } from '../../support/wait.js';

/**
 * A command the driver could not write at once (the socket's buffer full: a large write, a
 * database that stopped reading) waits for the socket's 'drain'. When that connection is closed
 * meanwhile without a socket error — the driver's own socket timeout, a pool clear, a close the
 * database ended cleanly — driver 6.22 destroys the socket and the wait never ends: the request
 * behind it hangs for good and its connection stays checked out (seen in the outage suite: a
 * report sent as the database stopped never answered). The operation must fail like any other
 * lost connection: `database-unavailable`, retryable.
 */

describe('a command waiting to be written when its connection closes (src/store/mongo.ts)', () => {
  let proxy: MisbehavingProxy;
  let database: Database;

  beforeAll(async () => {
    proxy = await startMisbehavingProxy(inject('mongoUri'));
    // timeoutMs 500: server selection fails after 0.5 s, a command that hears nothing back after 5 s.
    database = new Database({ uri: proxy.uri, dbName: freshDatabaseName('stalled'), timeoutMs: 500 });
  });

  afterAll(async () => {
    await database?.db.dropDatabase().catch(() => undefined);
    await database?.close();
    await proxy?.close();
  });

  it('fails as database-unavailable instead of hanging, and the database is used again afterwards', async () => {
    const probes = database.db.collection<{ _id: string, blob?: string }>('probes');
    await probes.insertOne({ _id: 'warm' });

    proxy.stall();
    // 12 MiB: more than the loopback socket buffers take while nobody reads, so the write waits for 'drain'.
    const write = probes.insertOne({ _id: 'large', blob: 'x'.repeat(12 * 1024 * 1024) });
    // The driver's socket timeout (5 s here) closes the connection; the write must end with it.
    const outcome = await within(write, 20_000);
    expect(outcome.settled, 'the write still waited for its socket 20 s after the database stopped reading').toBe('rejected');
    expect(outcome.settled === 'rejected' && isDatabaseUnavailableError(outcome.error), String(outcome.settled === 'rejected' && outcome.error)).toBe(true);

    proxy.resume();
    await eventually('operations work again once the database reads again', async () => await database.ping(1_000), 80, 250);
    await probes.insertOne({ _id: 'after' });
    expect(await probes.countDocuments({ _id: { $in: ['warm', 'after'] } })).toBe(2);
  }, 60_000);
});

describe('a request waiting for a free connection of the pool (src/store/mongo.ts)', () => {
  let proxy: MisbehavingProxy;
  let database: Database;

  beforeAll(async () => {
    proxy = await startMisbehavingProxy(inject('mongoUri'));
    // One connection; timeoutMs 500: a command that hears nothing back, or waits for a connection, fails after 5 s.
    database = new Database({ uri: proxy.uri, dbName: freshDatabaseName('pool-wait'), timeoutMs: 500, maxPoolSize: 1 });
  });

  afterAll(async () => {
    proxy?.resume();
    await database?.db.dropDatabase().catch(() => undefined);
    await database?.close();
    await proxy?.close();
  });

  it('fails as database-unavailable once it has waited as long as a command may take, instead of queueing without bound', async () => {
    const probes = database.db.collection<{ _id: string }>('probes');
    await probes.insertOne({ _id: 'warm' });

    // A slow database: each command answered 2 s late (well inside the 5 s a command may take), its monitor on time.
    proxy.slow(2_000);
    const reads = [0, 1, 2, 3].map(async () => await probes.findOne({ _id: 'warm' }));
    const outcomes = await Promise.all(reads.map(async (read) => await within(read, 30_000)));
    // The first is served in about 2 s; the fourth would get the connection only after about 6 s.
    expect(outcomes[0]).toMatchObject({ settled: 'resolved', value: { _id: 'warm' } });
    const last = outcomes[3]!;
    expect(last.settled, JSON.stringify(last)).toBe('rejected');
    expect(last.settled === 'rejected' && isDatabaseUnavailableError(last.error), String(last.settled === 'rejected' && last.error)).toBe(true);

    proxy.resume();
    await eventually('operations work again once the database is quick again', async () => await database.ping(1_000), 80, 250);
    expect(await probes.findOne({ _id: 'warm' })).toEqual({ _id: 'warm' });
  }, 60_000);
});
