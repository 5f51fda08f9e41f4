import net from 'node:net';

/**
 * A TCP proxy in front of the database that counts the bytes each way: what a process pointed at
 * it sends to the database (its commands: the documents it writes, its filters) and receives (the
 * documents it reads). Used to measure what one report writes, whatever the server does inside.
 */
export interface WireMeter {
  /** A MongoDB URI for a single host, through the proxy. */
  uri: string;
  /** Bytes since the last reset: to the database, from the database. */
  read(): { toDatabase: number, fromDatabase: number };
  reset(): void;
  close(): Promise<void>;
}

/** The single `host:port` of a plain `mongodb://` URI, or undefined (SRV, several hosts, credentials). */
export function singleHostOf (uri: string): { host: string, port: number } | undefined {
  const match = /^mongodb:\/\/([^/@,?]+):(\d+)\/?(\?.*)?$/.exec(uri);
  if (!match?.[1] || !match[2]) return undefined;
  return { host: match[1], port: Number(match[2]) };
}

export async function startWireMeter (target: { host: string, port: number }): Promise<WireMeter> {
  let toDatabase = 0;
  let fromDatabase = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.on('data', (chunk: Buffer) => { toDatabase += chunk.length; });
    upstream.on('data', (chunk: Buffer) => { fromDatabase += chunk.length; });
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
    read: () => ({ toDatabase, fromDatabase }),
    reset: () => { toDatabase = 0; fromDatabase = 0; },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
