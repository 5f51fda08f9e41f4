import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailableError } from '../../../src/store/driverErrors.js';
import { Database } from '../../../src/store/mongo.js';
import { freshDatabaseName } from '../../support/database.js';
import { eventually, sleep } from '../../support/wait.js';

/**
 * A command the driver could not write at once (the socket's buffer full: a large write, a
 * database that stopped reading) waits for the socket's 'drain'. When that connection is closed
 * meanwhile without a socket error — the driver's own socket timeout, a pool clear, a close the
 * database ended cleanly — driver 6.22 destroys the socket and the wait never ends: the request
 * behind it hangs for good and its connection stays checked out (seen in the outage suite: a
 * report sent as the database stopped never answered). The operation must fail like any other
 * lost connection: `database-unavailable`, retryable.
 */

/**
 * A TCP proxy in front of the test database that can stop reading what its clients send (a stalled
 * database), or hold each command but the handshake and monitoring ones (`hello`, `ping`) for a
 * while before passing it on (a slow database whose monitor still answers).
 */
interface MisbehavingProxy {
  uri: string;
  stall(): void;
  slow(delayMs: number): void;
  /** Closes every connection stalled so far and forwards new ones again at once. */
  resume(): void;
  close(): Promise<void>;
}

const OP_MSG = 2013;
const PASSED_AT_ONCE = new Set(['hello', 'isMaster', 'ismaster', 'ping']);

/** The command name of one OP_MSG (header, flags, a kind-0 section: the BSON document's first key), or '' for anything else. */
function commandOf (message: Buffer): string {
  if (message.length < 27 || message.readInt32LE(12) !== OP_MSG || message[20] !== 0) return '';
  const end = message.indexOf(0, 26);
  return end < 0 ? '' : message.toString('utf8', 26, end);
}

async function startMisbehavingProxy (databaseUri: string): Promise<MisbehavingProxy> {
  const match = /^mongodb:\/\/([^/@,?]+):(\d+)/.exec(databaseUri);
  if (!match) throw new Error(`the proxy needs a single-host mongodb:// URI, got ${databaseUri}`);
  const [, host, port] = match;
  let mode: { kind: 'forward' } | { kind: 'stall' } | { kind: 'slow', delayMs: number } = { kind: 'forward' };
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    if (mode.kind === 'stall') {
      client.pause();
      return;
    }
    const upstream = net.connect(Number(port), host);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.pipe(client);
    // Client → database message by message, in order: a held command holds the ones behind it.
    let pending = Buffer.alloc(0);
    let sent = Promise.resolve();
    client.on('data', (chunk: Buffer) => {
      if (mode.kind === 'stall') {
        client.pause();
        return;
      }
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        const delayMs = mode.kind === 'slow' && !PASSED_AT_ONCE.has(commandOf(message)) ? mode.delayMs : 0;
        sent = sent.then(async () => {
          if (delayMs > 0) await sleep(delayMs);
          upstream.write(message);
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    uri: `mongodb://127.0.0.1:${address.port}/?directConnection=true`,
    stall () {
      mode = { kind: 'stall' };
      for (const socket of open) socket.pause();
    },
    slow (delayMs: number) {
      mode = { kind: 'slow', delayMs };
    },
    resume () {
      mode = { kind: 'forward' };
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
