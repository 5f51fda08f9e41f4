import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got: its headers and raw body, and when. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  /** `webhook-id`. */
  id: string;
}

/** What the receiver does with a request: answer a status (and headers), or hang (never answer). */
export type Behaviour = (request: Received, index: number) => { status: number, headers?: Record<string, string>, body?: string, delayMs?: number } | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  /** Changes how it answers from now on. */
  behave(behaviour: Behaviour): void;
  close(): Promise<void>;
}

/** A real HTTP receiver on loopback (port 0): records every request, answers as told (200 by default). */
export async function startReceiver (behaviour: Behaviour = () => ({ status: 200 })): Promise<Receiver> {
  let current = behaviour;
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), id: String(req.headers['webhook-id']) };
      received.push(entry);
      const answer = current(entry, received.length - 1);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      const send = (): void => {
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? 'ok');
      };
      if (answer.delayMs === undefined) send();
      else setTimeout(send, answer.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    behave: (b) => { current = b; },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Server settings for webhook tests on a fleet of processes: the loopback receiver allowed, and polls,
 * leases (a killed holder's subscription taken over within 1.5 s) and retries quick enough for a test.
 */
export const webhookFleetEnv: Readonly<Record<string, string>> = {
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  WEBHOOK_POLL_INTERVAL_MS: '50',
  WEBHOOK_LEASE_MS: '1500',
  WEBHOOK_RETRY_BASE_MS: '50',
  WEBHOOK_RETRY_MAX_MS: '500',
};
