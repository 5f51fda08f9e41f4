import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { countOutcome, emptySamples, type Samples } from './stats.js';
import type { CpuProbe } from './processes.js';

/**
 * A small, bounded, closed-loop load generator: `concurrency` workers, each running one
 * operation at a time until `total` operations have started. Every operation's latency is
 * recorded (no sampling, no coordinated-omission correction: it is a closed loop, so the
 * figures are "latency at this concurrency", and throughput is completed ops / wall time).
 * The same runner drives HTTP requests and bare-driver operations, so both are timed alike.
 */
export interface LoopOptions {
  concurrency: number;
  /** Operations to start (at most). */
  total: number;
  /** Stop starting operations after this long (ms): a warm-up by time. */
  maxMs?: number;
  /** One operation; resolves to its outcome key (`200`, `409`, …). Worker w runs indexes w, w+c, … in order. */
  op: (worker: number, index: number) => Promise<string>;
  /** CPU time read before and after the block. */
  cpu?: CpuProbe[];
}

export async function closedLoop (opts: LoopOptions): Promise<Samples> {
  const samples = emptySamples();
  const cpuBefore = (opts.cpu ?? []).map((probe) => probe.read());
  let next = 0;
  const t0 = performance.now();
  const deadline = opts.maxMs === undefined ? Number.POSITIVE_INFINITY : t0 + opts.maxMs;
  const worker = async (w: number): Promise<void> => {
    for (;;) {
      if (performance.now() > deadline) return;
      const index = next++;
      if (index >= opts.total) return;
      const start = performance.now();
      let outcome: string;
      try {
        outcome = await opts.op(w, index);
      } catch (err) {
        outcome = `error:${(err as NodeJS.ErrnoException).code ?? (err as Error).message.slice(0, 60)}`;
      }
      samples.latenciesMs.push(performance.now() - start);
      samples.ops++;
      countOutcome(samples.outcomes, outcome);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, opts.total) }, async (_, w) => await worker(w)));
  samples.elapsedMs = performance.now() - t0;
  (opts.cpu ?? []).forEach((probe, i) => {
    const before = cpuBefore[i];
    const after = probe.read();
    if (before !== undefined && Number.isFinite(before) && Number.isFinite(after)) samples.cpuMs[probe.name] = after - before;
  });
  return samples;
}

export interface HttpAnswer {
  status: number;
  body: string;
}

/** Keep-alive HTTP/1.1 over loopback with node:http; one agent per measured block (no stale sockets between blocks). */
export class HttpClient {
  readonly #agent: http.Agent;
  readonly #host: string;
  readonly #port: number;

  constructor (baseUrl: string, maxSockets: number) {
    const url = new URL(baseUrl);
    this.#host = url.hostname;
    this.#port = Number(url.port);
    this.#agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  request (method: string, path: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
    return new Promise((resolve, reject) => {
      const allHeaders: Record<string, string | number> = { ...headers };
      if (body !== undefined) {
        allHeaders['content-type'] = 'application/json';
        allHeaders['content-length'] = Buffer.byteLength(body);
      }
      const req = http.request({ host: this.#host, port: this.#port, method, path, headers: allHeaders, agent: this.#agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.setTimeout(60_000, () => req.destroy(new Error('request timed out after 60 s')));
      req.on('error', reject);
      req.end(body);
    });
  }

  close (): void {
    this.#agent.destroy();
  }
}

/** One request on a short-lived client (setup steps, not measured). */
export async function once (baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<HttpAnswer> {
  const client = new HttpClient(baseUrl, 1);
  try {
    return await client.request(method, path, headers, body === undefined ? undefined : JSON.stringify(body));
  } finally {
    client.close();
  }
}

/** Like `once`, but any status other than `expected` is an error naming the answer. */
export async function expectStatus<T> (
  expected: number[], baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: unknown,
): Promise<T> {
  const answer = await once(baseUrl, method, path, headers, body);
  if (!expected.includes(answer.status)) {
    throw new Error(`${method} ${path}: expected ${expected.join('/')}, got ${answer.status} ${answer.body.slice(0, 500)}`);
  }
  return JSON.parse(answer.body) as T;
}
