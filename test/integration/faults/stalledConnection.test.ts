import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailableError } from '../../../src/store/driverErrors.js';
import { Database } from '../../../src/store/mongo.js';
import { freshDatabaseName } from '../../support/database.js';
import { eventually } from '../../support/wait.js';

/**
 * A command the driver could not write at once (the socket's buffer full: a large write, a
 * database that stopped reading) waits for the socket's 'drain'. When that connection is closed
 * meanwhile without a socket error — the driver's own socket timeout, a pool clear, a close the
 * database ended cleanly — driver 6.22 destroys the socket and the wait never ends: the request
 * behind it hangs for good and its connection stays checked out (seen in the outage suite: a
 * report sent as the database stopped never answered). The operation must fail like any other
 * lost connection: `database-unavailable`, retryable.
 */

/** A TCP proxy in front of the test database that can stop reading what its clients send (a stalled database). */
interface StallingProxy {
  uri: string;
  stall(): void;
  /** Closes every connection stalled so far and forwards new ones again. */
  resume(): void;
  close(): Promise<void>;
}

async function startStallingProxy (databaseUri: string): Promise<StallingProxy> {
  const match = /^mongodb:\/\/([^/@,?]+):(\d+)/.exec(databaseUri);
  if (!match) throw new Error(`the stalling proxy needs a single-host mongodb:// URI, got ${databaseUri}`);
  const [, host, port] = match;
  let stalled = false;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    if (stalled) {
      client.pause();
      return;
    }
    const upstream = net.connect(Number(port), host);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('stall', () => {
      client.unpipe(upstream);
      client.pause();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    uri: `mongodb://127.0.0.1:${address.port}/?directConnection=true`,
    stall () {
      stalled = true;
      for (const socket of open) socket.emit('stall');
    },
    resume () {
      stalled = false;
      for (const socket of open) socket.destroy();
    },
    async close () {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** How a promise ended within `ms`: its value, its error, or still pending. */
type Settled<T> = { settled: 'resolved', value: T } | { settled: 'rejected', error: unknown } | { settled: 'pending' };

async function within<T> (promise: Promise<T>, ms: number): Promise<Settled<T>> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<{ settled: 'pending' }>((resolve) => { timer = setTimeout(() => resolve({ settled: 'pending' }), ms); });
  try {
    return await Promise.race([
      promise.then((value) => ({ settled: 'resolved' as const, value }), (error: unknown) => ({ settled: 'rejected' as const, error })),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a command waiting to be written when its connection closes (src/store/mongo.ts)', () => {
  let proxy: StallingProxy;
  let database: Database;

  beforeAll(async () => {
    proxy = await startStallingProxy(inject('mongoUri'));
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
