import net from 'node:net';
import { BSON } from 'mongodb';
import { sleep } from './wait.js';

/**
 * A TCP proxy in front of the test database that misbehaves on demand, as a database can:
 * - `stall()`: stops reading what its clients send (a database that hangs);
 * - `slow(ms)`: holds each command but the handshake and monitoring ones (`hello`, `ping`) that
 *   long before passing it on (a slow database whose monitor still answers);
 * - `refuseWrites()`: answers every write command itself with a WriteConflict (112) — reads and
 *   the monitor go on as usual (a database that refuses writes for now);
 * - `hideReads(collection)`: answers every `find` of that collection itself with no document, while
 *   writes reach the database (a read from a member that has not caught up yet).
 * It counts the commands its clients sent (by name, handshake and monitoring ones left out).
 */
export interface MisbehavingProxy {
  uri: string;
  stall(): void;
  slow(delayMs: number): void;
  refuseWrites(): void;
  hideReads(collection: string): void;
  /** Closes every connection stalled so far and forwards everything again at once. */
  resume(): void;
  /** Commands sent since the proxy started, by name (`find`, `update`, …), and how many writes it refused. */
  readonly sent: Map<string, number>;
  readonly refused: number;
  close(): Promise<void>;
}

const OP_MSG = 2013;
const PASSED_AT_ONCE = new Set(['hello', 'isMaster', 'ismaster', 'ping']);
const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);

/** The command name of one OP_MSG (header, flags, a kind-0 section: the BSON document's first key), or '' for anything else. */
function commandOf (message: Buffer): string {
  if (message.length < 27 || message.readInt32LE(12) !== OP_MSG || message[20] !== 0) return '';
  const end = message.indexOf(0, 26);
  return end < 0 ? '' : message.toString('utf8', 26, end);
}

/** An OP_MSG reply to `request` with `body` (no flags, one kind-0 section). */
function replyTo (request: Buffer, body: Record<string, unknown>): Buffer {
  const document = Buffer.from(BSON.serialize(body));
  const reply = Buffer.alloc(16 + 4 + 1 + document.length);
  reply.writeInt32LE(reply.length, 0);
  reply.writeInt32LE(0, 4);
  reply.writeInt32LE(request.readInt32LE(4), 8);
  reply.writeInt32LE(OP_MSG, 12);
  reply.writeUInt32LE(0, 16);
  reply[20] = 0;
  document.copy(reply, 21);
  return reply;
}

type Mode =
  | { kind: 'forward' } | { kind: 'stall' } | { kind: 'slow', delayMs: number } | { kind: 'refuse-writes' } | { kind: 'hide-reads', collection: string };

/** The collection and database a `find` names, or undefined for any other message. */
function findOf (message: Buffer): { collection: string, db: string } | undefined {
  if (commandOf(message) !== 'find') return undefined;
  const body = BSON.deserialize(message.subarray(21, 21 + message.readInt32LE(21)));
  return typeof body['find'] === 'string' && typeof body['$db'] === 'string' ? { collection: body['find'], db: body['$db'] } : undefined;
}

export async function startMisbehavingProxy (databaseUri: string): Promise<MisbehavingProxy> {
  const match = /^mongodb:\/\/([^/@,?]+):(\d+)/.exec(databaseUri);
  if (!match) throw new Error(`the proxy needs a single-host mongodb:// URI, got ${databaseUri}`);
  const [, host, port] = match;
  let mode: Mode = { kind: 'forward' };
  const sent = new Map<string, number>();
  let refused = 0;
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
    let queue = Promise.resolve();
    client.on('data', (chunk: Buffer) => {
      if (mode.kind === 'stall') {
        client.pause();
        return;
      }
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        const command = commandOf(message);
        const monitoring = PASSED_AT_ONCE.has(command);
        if (!monitoring) sent.set(command, (sent.get(command) ?? 0) + 1);
        const at = mode;
        queue = queue.then(async () => {
          if (at.kind === 'slow' && !monitoring) await sleep(at.delayMs);
          const find = at.kind === 'hide-reads' ? findOf(message) : undefined;
          if (at.kind === 'refuse-writes' && WRITES.has(command)) {
            refused++;
            client.write(replyTo(message, { ok: 0, code: 112, codeName: 'WriteConflict', errmsg: 'write conflict (refused by the test proxy)' }));
          } else if (at.kind === 'hide-reads' && find?.collection === at.collection) {
            client.write(replyTo(message, { ok: 1, cursor: { firstBatch: [], id: BSON.Long.fromNumber(0), ns: `${find.db}.${find.collection}` } }));
          } else {
            upstream.write(message);
          }
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    uri: `mongodb://127.0.0.1:${address.port}/?directConnection=true`,
    sent,
    get refused () { return refused; },
    stall () {
      mode = { kind: 'stall' };
      for (const socket of open) socket.pause();
    },
    slow (delayMs: number) {
      mode = { kind: 'slow', delayMs };
    },
    refuseWrites () {
      mode = { kind: 'refuse-writes' };
    },
    hideReads (collection: string) {
      mode = { kind: 'hide-reads', collection };
    },
    resume () {
      const wasStalled = mode.kind === 'stall';
      mode = { kind: 'forward' };
      if (wasStalled) for (const socket of open) socket.destroy();
    },
    async close () {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
