// A real HTTP front for the test registry that can be taken away and brought back on the same port:
// while down nothing listens there (connections are refused), as when a registry host is down.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SwitchableRegistry {
  url: string;
  /** Requests forwarded while up, `METHOD path`, in order. */
  requests: string[];
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

function forward (upstream: URL, req: IncomingMessage, res: ServerResponse): void {
  const { host: _host, ...headers } = req.headers;
  const sent = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  sent.on('error', (err) => res.writeHead(502).end(String(err)));
  req.pipe(sent);
}

export async function startSwitchableRegistry (upstreamUrl: string): Promise<SwitchableRegistry> {
  const upstream = new URL(upstreamUrl);
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method ?? 'GET'} ${req.url ?? '/'}`);
    forward(upstream, req, res);
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => { server.off('error', reject); resolve(); });
  });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  let listening = true;
  const down = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => { resolve(); }));
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    down,
    up: async () => {
      if (listening) return;
      await listen(port);
      listening = true;
    },
    stop: down,
  };
}
