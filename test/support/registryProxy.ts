// A tiny real HTTP front for the test registry (which has no auth of its own): Basic auth, or the
// distribution token-service flow (401 + `WWW-Authenticate: Bearer realm=…,service=…,scope=…`, a
// token endpoint that checks the basic credentials and issues scoped tokens), optionally over TLS,
// optionally without the referrers API (a registry that predates OCI 1.1). Plus a server that
// accepts connections and never answers.
import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';

export type ProxyAuth =
  | { kind: 'basic', username: string, password: string }
  | { kind: 'token', username: string, password: string };

export interface RegistryProxyOptions {
  upstream: string;
  auth?: ProxyAuth;
  hideReferrersApi?: boolean;
  tls?: { key: Buffer, cert: Buffer };
}

export interface RegistryProxy {
  url: string;
  port: number;
  /** `METHOD path` of every request, token requests included, in order. */
  requests: string[];
  tokensIssued: number;
  stop(): Promise<void>;
}

const SERVICE = 'cloudly-test-registry';

const basicOf = (header: string | undefined): { username: string, password: string } | undefined => {
  const match = /^Basic (.+)$/.exec(header ?? '');
  if (match?.[1] === undefined) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
};

/** The repository and action a registry request needs: `/v2/<name>/(manifests|blobs|referrers|tags)/…`. */
function needOf (req: IncomingMessage): { repository: string, action: 'pull' | 'push' } | undefined {
  const match = /^\/v2\/(.+?)\/(?:manifests|blobs|referrers|tags)\//.exec(new URL(req.url ?? '/', 'http://x').pathname);
  if (match?.[1] === undefined) return undefined;
  return { repository: match[1], action: ['GET', 'HEAD'].includes(req.method ?? 'GET') ? 'pull' : 'push' };
}

/** The request, without its credentials, to the registry; upload locations rewritten to stay on the front. */
function forward (req: IncomingMessage, res: ServerResponse, upstream: URL, base: string): void {
  const { authorization: _dropped, host: _host, ...headers } = req.headers;
  const forwarded = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
    const location = answer.headers.location;
    if (typeof location === 'string' && location.startsWith(upstream.origin)) answer.headers.location = `${base}${location.slice(upstream.origin.length)}`;
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  forwarded.on('error', (err) => res.writeHead(502).end(String(err)));
  req.pipe(forwarded);
}

export async function startRegistryProxy (options: RegistryProxyOptions): Promise<RegistryProxy> {
  const upstream = new URL(options.upstream);
  const tokens = new Map<string, Set<string>>();
  const state = { requests: [] as string[], tokensIssued: 0 };
  let base = '';

  const issueToken = (req: IncomingMessage, res: ServerResponse, auth: ProxyAuth): void => {
    const given = basicOf(req.headers.authorization);
    if (given?.username !== auth.username || given.password !== auth.password) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"errors":[{"code":"UNAUTHORIZED"}]}');
      return;
    }
    const scopes = new URL(req.url ?? '/', base).searchParams.getAll('scope');
    const token = randomBytes(16).toString('hex');
    tokens.set(token, new Set(scopes.flatMap((scope) => {
      const [, name, actions] = /^repository:(.+):([a-z,*]+)$/.exec(scope) ?? [];
      return name === undefined || actions === undefined ? [] : actions.split(',').map((action) => `${name}:${action}`);
    })));
    state.tokensIssued += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token, expires_in: 300 }));
  };

  const allowed = (req: IncomingMessage, auth: ProxyAuth | undefined): boolean => {
    if (auth === undefined) return true;
    if (auth.kind === 'basic') {
      const given = basicOf(req.headers.authorization);
      return given?.username === auth.username && given.password === auth.password;
    }
    const need = needOf(req);
    const granted = tokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (granted === undefined) return false;
    return need === undefined || granted.has(`${need.repository}:${need.action}`);
  };

  const challenge = (req: IncomingMessage, auth: ProxyAuth): string => {
    if (auth.kind === 'basic') return `Basic realm="${SERVICE}"`;
    const need = needOf(req);
    const scope = need === undefined ? '' : `,scope="repository:${need.repository}:${need.action === 'push' ? 'pull,push' : 'pull'}"`;
    return `Bearer realm="${base}/token",service="${SERVICE}"${scope}`;
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    state.requests.push(`${req.method ?? 'GET'} ${req.url ?? '/'}`);
    if (options.auth?.kind === 'token' && (req.url ?? '').startsWith('/token')) {
      issueToken(req, res, options.auth);
      return;
    }
    if (!allowed(req, options.auth)) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': challenge(req, options.auth as ProxyAuth), 'content-type': 'application/json' })
        .end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}');
      return;
    }
    if (options.hideReferrersApi === true && /^\/v2\/.+\/referrers\//.test(req.url ?? '')) {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"errors":[{"code":"NOT_FOUND"}]}');
      return;
    }
    forward(req, res, upstream, base);
  };

  const server = options.tls === undefined ? http.createServer(handle) : https.createServer(options.tls, handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  base = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`;
  return {
    url: base,
    port,
    get requests () { return state.requests; },
    get tokensIssued () { return state.tokensIssued; },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A server that accepts every connection and never says a word. */
export async function startSilentServer (): Promise<{ url: string, stop(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => { sockets.add(socket); socket.on('error', () => undefined); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on (taken, then given back). */
export async function closedPort (): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
