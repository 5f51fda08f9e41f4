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
  /** Stop starting operations after this long (ms): a warm-up by time (default: the measured-block cap, `capMeasuredBlocks`). */
  maxMs?: number;
  /** One operation; resolves to its outcome key (`200`, `409`, …). Worker w runs indexes w, w+c, … in order. */
  op: (worker: number, index: number) => Promise<string>;
  /** CPU time read before and after the block. */
  cpu?: CpuProbe[];
}

/**
 * How long a measured block (one given no `maxMs` of its own) keeps starting operations, at most: on a
 * machine shared with other work the same counts can take 5× longer, and the run must stay bounded.
 * A block cut short has fewer samples; its figures stay what they are (ops ÷ wall time, percentiles).
 */
let measuredBlockCapMs = Number.POSITIVE_INFINITY;
export function capMeasuredBlocks (ms: number): void {
  measuredBlockCapMs = ms;
}

export async function closedLoop (opts: LoopOptions): Promise<Samples> {
  const samples = emptySamples();
  const cpuBefore = (opts.cpu ?? []).map((probe) => probe.read());
  let next = 0;
  const t0 = performance.now();
  const deadline = t0 + (opts.maxMs ?? measuredBlockCapMs);
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

/**
 * An open loop: `senders` independent senders (agents), sender s sending at the fixed times
 * t0 + offsets[s] + i·periodMs for as long as `durationMs` lasts — arrival times fixed in
 * advance, whatever the answers. A sender has at most one request in flight (as an agent): when
 * its previous request is still running at the next scheduled time, the next one starts as soon
 * as it returns. Latency is measured from the SCHEDULED time, so time spent waiting behind a slow
 * answer counts (no coordinated omission).
 */
export interface OpenLoopOptions {
  senders: number;
  periodMs: number;
  durationMs: number;
  /** Per sender, its phase within the period (ms, 0 ≤ offset < periodMs). */
  offsets: readonly number[];
  op: (sender: number, index: number) => Promise<string>;
  cpu?: CpuProbe[];
}

export interface OpenLoopSamples extends Samples {
  /** Requests that started more than 10 ms after their scheduled time (the sender's previous one was still running). */
  late: number;
}

export async function openLoop (opts: OpenLoopOptions): Promise<OpenLoopSamples> {
  const samples: OpenLoopSamples = { ...emptySamples(), late: 0 };
  const cpuBefore = (opts.cpu ?? []).map((probe) => probe.read());
  const t0 = performance.now() + 20;
  const sender = async (s: number): Promise<void> => {
    const offset = opts.offsets[s] ?? 0;
    for (let i = 0; offset + i * opts.periodMs < opts.durationMs; i++) {
      const scheduled = t0 + offset + i * opts.periodMs;
      const wait = scheduled - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      else if (wait < -10) samples.late++;
      let outcome: string;
      try {
        outcome = await opts.op(s, i);
      } catch (err) {
        outcome = `error:${(err as NodeJS.ErrnoException).code ?? (err as Error).message.slice(0, 60)}`;
      }
      samples.latenciesMs.push(performance.now() - scheduled);
      samples.ops++;
      countOutcome(samples.outcomes, outcome);
    }
  };
  await Promise.all(Array.from({ length: opts.senders }, async (_, s) => await sender(s)));
  samples.elapsedMs = performance.now() - t0;
  (opts.cpu ?? []).forEach((probe, i) => {
    const before = cpuBefore[i];
    const after = probe.read();
    if (before !== undefined && Number.isFinite(before) && Number.isFinite(after)) samples.cpuMs[probe.name] = after - before;
  });
  return samples;
}

/** A small deterministic PRNG (mulberry32): the same "random" phases in every run. */
export function seededRandom (seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
