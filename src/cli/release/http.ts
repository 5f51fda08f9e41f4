import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, CliError, ExitCode } from './errors.js';
import type { ApiRequest } from './requests.js';

/**
 * The control plane's REST API over global fetch, with the retry policy CI needs:
 *
 * - retried (same request, same Idempotency-Key): network errors (refused, reset, the
 *   connection dropped before the answer arrived), request timeouts, 5xx, 408, 429 and
 *   409 `idempotency-request-in-progress`; the delay is exponential with jitter
 *   (base 500 ms, doubling, capped at 15 s, each delay drawn from [d/2, d]) and never
 *   shorter than the server's `Retry-After`;
 * - not retried: every other 4xx (ApiError, exit 1), including 409
 *   `rollout-generation-conflict`, which needs a decision, not a retry;
 * - after the last retry: CliError `unreachable` (exit 4).
 */

export interface ClientOptions {
  baseUrl: string;
  token: string;
  retries: number;
  requestTimeoutMs: number;
  /** One line of log (stderr). */
  log: (line: string) => void;
  /** For tests of the backoff; default Math.random. */
  random?: () => number;
}

export interface RequestOptions {
  /** Ends every attempt and the backoff sleeps (the `--timeout` of wait). */
  signal?: AbortSignal;
  /** Overrides the client's retry count (0: one attempt). */
  retries?: number;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;
/** A Retry-After beyond this is capped (the next attempt still goes through the server's checks). */
const MAX_RETRY_AFTER_MS = 60_000;

export class DeadlineError extends Error {
  constructor () {
    super('deadline reached');
    this.name = 'DeadlineError';
  }
}

/** Sleeps `ms`; rejects with DeadlineError when `signal` aborts first. */
export function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new DeadlineError());
      return;
    }
    const done = (): void => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new DeadlineError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After`: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs (value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Math.min(Number(value.trim()) * 1_000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

/** The delay before retry number `attempt` (0-based): exponential, capped, equal jitter. */
export function backoffMs (attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** A short description of a fetch failure: "ECONNRESET", "other side closed", "timed out after 30000 ms". */
export function describeNetworkError (err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'request timed out';
  let e: unknown = err;
  const parts: string[] = [];
  for (let depth = 0; e instanceof Error && depth < 4; depth++) {
    const code = (e as Error & { code?: unknown }).code;
    if (!(e instanceof TypeError && e.message === 'fetch failed')) parts.push(typeof code === 'string' ? `${code}: ${e.message}` : e.message);
    e = e.cause;
  }
  return parts.length > 0 ? parts.join(' ← ') : String(err);
}

/**
 * Works around a hang of the fetch that Node 20 and 22 bundle (undici 6): the first HTTP connection
 * of a process waits for undici's HTTP parser (WebAssembly) to compile AFTER its socket connected,
 * and only then listens for the socket's 'error' and 'close'. When the peer resets or closes the
 * connection in that window (a proxy or load balancer refusing work, a server restarting), those
 * events have already fired: the request never settles and hangs until its per-attempt timeout
 * (`--request-timeout`, 30 s) instead of failing at once and being retried. Fixed in undici 7
 * (nodejs/undici#3859, "fix: missing error handler"); not in its 6.x line.
 *
 * One request to a loopback server of this process compiles the parser before any real connection
 * is made. Best effort: if it cannot be done, the per-attempt timeout still bounds the hang.
 */
let parserReady: Promise<void> | undefined;
const PRIME_TIMEOUT_MS = 5_000;

export function primeFetch (): Promise<void> {
  const major = Number((process.versions['undici'] ?? '0').split('.')[0]);
  if (major >= 7) return Promise.resolve();
  parserReady ??= (async () => {
    // node:http answers only after it has read the request, i.e. after undici attached its listeners.
    const server: Server = createServer((_req, res) => { res.writeHead(204, { connection: 'close' }).end(); });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(PRIME_TIMEOUT_MS) });
      await res.body?.cancel();
    } catch {
      // nothing to do: see above
    } finally {
      server.close();
    }
  })();
  return parserReady;
}

/** Global fetch, once the parser is ready (see primeFetch). */
export async function safeFetch (url: string, init: RequestInit): Promise<Response> {
  await primeFetch();
  return await fetch(url, init);
}

const RETRYABLE_STATUS = new Set([408, 429]);

const parseBody = (text: string): unknown => {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class ApiClient {
  private readonly random: () => number;

  constructor (private readonly opts: ClientOptions) {
    this.random = opts.random ?? Math.random;
  }

  url (path: string): string {
    return `${this.opts.baseUrl}${path}`;
  }

  authHeaders (): Record<string, string> {
    return { authorization: `Bearer ${this.opts.token}` };
  }

  /** GET of a path (the rollout view, while following). */
  async get<T> (path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    return await this.send<T>({ method: 'GET', path }, opts);
  }

  /** One logical request: attempts until an answer that is not retryable, or the retries run out. */
  async send<T> (req: ApiRequest, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const { method, path } = req;
    const retries = opts.retries ?? this.opts.retries;
    const headers: Record<string, string> = { accept: 'application/json', ...this.authHeaders(), ...req.headers };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    let lastFailure = '';
    for (let attempt = 0; ; attempt++) {
      if (opts.signal?.aborted) throw new DeadlineError();
      let waitAtLeast = 0;
      try {
        const signals = [AbortSignal.timeout(this.opts.requestTimeoutMs), ...(opts.signal ? [opts.signal] : [])];
        const res = await safeFetch(this.url(path), {
          method,
          headers,
          ...(payload === undefined ? {} : { body: payload }),
          signal: AbortSignal.any(signals),
          // A redirect would drop the Authorization header on another origin: say so instead.
          redirect: 'manual',
        });
        const text = await res.text();
        const body = parseBody(text);
        if (res.ok) {
          if (body === undefined) {
            const message = `${method} ${path}: ${res.status} with a body that is not JSON`;
            throw new CliError({ exitCode: ExitCode.unreachable, code: 'bad-response', message });
          }
          return { status: res.status, headers: res.headers, body: body as T };
        }
        const problem = isObject(body) ? body : {};
        const code = typeof problem['code'] === 'string' ? problem['code'] : `http-${res.status}`;
        const location = res.headers.get('location');
        const detail = typeof problem['detail'] === 'string'
          ? problem['detail']
          : location !== null ? `redirected to ${location}: set CLOUDLY_URL to the final address` : (text.slice(0, 200) || res.statusText);
        const retryable = res.status >= 500 || RETRYABLE_STATUS.has(res.status) || code === 'idempotency-request-in-progress';
        if (!retryable) throw new ApiError({ status: res.status, code, message: `${code}: ${detail}`, problem });
        lastFailure = `${res.status} ${code}: ${detail}`;
        waitAtLeast = retryAfterMs(res.headers.get('retry-after')) ?? 0;
      } catch (err) {
        if (err instanceof CliError) throw err;
        if (opts.signal?.aborted) throw new DeadlineError();
        lastFailure = describeNetworkError(err);
      }
      if (attempt >= retries) {
        throw new CliError({
          exitCode: ExitCode.unreachable,
          code: 'unreachable',
          message: `${method} ${this.url(path)} failed after ${attempt + 1} ${attempt === 0 ? 'attempt' : 'attempts'}: ${lastFailure}`,
          details: { lastFailure, attempts: attempt + 1 },
        });
      }
      const delay = Math.max(waitAtLeast, backoffMs(attempt, this.random));
      this.opts.log(`${method} ${path}: ${lastFailure}; retry ${attempt + 1}/${retries} in ${(delay / 1000).toFixed(1)} s`);
      await sleep(delay, opts.signal);
    }
  }
}
