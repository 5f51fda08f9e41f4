import net from 'node:net';
import { BSON, type Document } from 'mongodb';

/**
 * A TCP proxy in front of the test database that decodes every command a process sends it
 * (OP_MSG: the body section and its document sequences), without touching the process: point the
 * app's MONGODB_URI at `uri` and read `commands`. Used to check what the server asks the database
 * to do — e.g. that every query of a hot path is one the database serves from an index.
 */
export interface WireTap {
  /** A MongoDB URI for the proxy (single host, direct connection). */
  uri: string;
  /** The commands seen since the last `clear`, in the order they were sent. */
  readonly commands: TappedCommand[];
  clear(): void;
  close(): Promise<void>;
}

/** One command: its name (`find`, `update`, …), its collection, and the whole document (sequences folded in). */
export interface TappedCommand {
  name: string;
  collection: string;
  body: Document;
}

const OP_MSG = 2013;
/** Commands of the driver's own housekeeping, not of the app. */
const HOUSEKEEPING = new Set(['hello', 'ismaster', 'isMaster', 'ping', 'buildInfo', 'endSessions', 'saslStart', 'saslContinue', 'getMore', 'killCursors']);

/** Decodes one OP_MSG (after its 16-byte header): the body document with each document sequence set as an array field. */
function decodeMessage (payload: Buffer): Document | undefined {
  const flags = payload.readUInt32LE(0);
  const end = payload.length - ((flags & 1) === 1 ? 4 : 0);
  let offset = 4;
  let body: Document | undefined;
  const sequences: Record<string, Document[]> = {};
  while (offset < end) {
    const kind = payload[offset];
    offset += 1;
    const size = payload.readInt32LE(offset);
    if (kind === 0) {
      body = BSON.deserialize(payload.subarray(offset, offset + size));
    } else {
      const nameEnd = payload.indexOf(0, offset + 4);
      const identifier = payload.toString('utf8', offset + 4, nameEnd);
      const docs: Document[] = [];
      for (let at = nameEnd + 1; at < offset + size;) {
        const docSize = payload.readInt32LE(at);
        docs.push(BSON.deserialize(payload.subarray(at, at + docSize)));
        at += docSize;
      }
      sequences[identifier] = docs;
    }
    offset += size;
  }
  return body ? { ...body, ...sequences } : undefined;
}

export async function startWireTap (databaseUri: string): Promise<WireTap> {
  const match = /^mongodb:\/\/([^/@,?]+):(\d+)\/?(\?.*)?$/.exec(databaseUri);
  if (!match?.[1] || !match[2]) throw new Error(`the wire tap needs a single-host mongodb:// URI, not ${databaseUri}`);
  const target = { host: match[1], port: Number(match[2]) };
  const commands: TappedCommand[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 16 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        if (pending.readInt32LE(12) === OP_MSG) {
          const body = decodeMessage(pending.subarray(16, length));
          const name = body ? Object.keys(body)[0] : undefined;
          if (body && name && !HOUSEKEEPING.has(name)) commands.push({ name, collection: String(body[name]), body });
        }
        pending = pending.subarray(length);
      }
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    commands,
    clear: () => { commands.length = 0; },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A query as the database receives it, and where it came from. */
export interface TappedQuery { command: string, collection: string, filter: Document }

/** Every filter the commands carry: find/count/distinct filters, update and delete statements, findAndModify queries. */
export function queriesOf (commands: readonly TappedCommand[]): TappedQuery[] {
  return commands.flatMap(({ name, collection, body }): TappedQuery[] => {
    const of = (filter: unknown): TappedQuery => ({ command: name, collection, filter: (filter ?? {}) as Document });
    switch (name) {
      case 'find': return [of(body['filter'])];
      case 'count': return [of(body['query'])];
      case 'aggregate': {
        const first = (body['pipeline'] as Document[] | undefined)?.[0];
        return first?.['$match'] === undefined ? [] : [of(first['$match'])];
      }
      case 'findAndModify': return [of(body['query'])];
      case 'update': return (body['updates'] as Document[]).map((u) => of(u['q']));
      case 'delete': return (body['deletes'] as Document[]).map((d) => of(d['q']));
      default: return [];
    }
  });
}
