import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/**
 * Shared pieces of the fault suites (test/faults): raw HTTP over fresh connections (so that a
 * keep-alive pool never hides what the server did to a connection), process inspection through
 * /proc, and a bounded-concurrency runner. Polling (`eventually`) is in test/support/wait.ts.
 */

/** Resident set size of a process in KiB, from /proc/<pid>/status (Linux). */
export function vmRssKb (pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!match?.[1]) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]);
}

/** True while a process with this pid exists and is not a zombie. */
export function processExists (pid: number): boolean {
  const statFile = `/proc/${pid}/stat`;
  if (!existsSync(statFile)) return false;
  try {
    const stat = readFileSync(statFile, 'utf8');
    // Field 3, after the parenthesised command name, is the state; Z = zombie (exited, not reaped).
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Direct children of a process (every thread's `children` list in /proc). */
export function childPids (pid: number): number[] {
  const children: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const list = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (list !== '') children.push(...list.split(/\s+/).map(Number));
    }
  } catch {
    // The process is gone: no children to report.
  }
  return children;
}

/** The command line of a process, arguments joined by spaces ('' when it is gone). */
export function commandLine (pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Parsed body, `undefined` when it is not JSON. */
  json: any; // tests read fields of answers freely
}

/** What happened to one request: an answer, or the error code of the connection (ECONNREFUSED, ECONNRESET, TimeoutError, …). */
export type HttpResult = { kind: 'answer', answer: HttpAnswer } | { kind: 'error', error: string };

export interface OpenRequest {
  /** Sends the rest of the body (and ends the request). */
  sendRest(): void;
  /** Resolves once the request's first bytes were handed to the socket. */
  readonly written: Promise<void>;
  readonly result: Promise<HttpResult>;
}

export interface RawRequestOptions {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Bytes of the body sent at once; the rest waits for `sendRest()`. Default: the whole body. */
  firstBytes?: number;
  timeoutMs?: number;
  /** Send over this (keep-alive) agent instead of a fresh `Connection: close` connection. */
  agent?: Agent;
}

function errorName (err: unknown): string {
  const e = err as { code?: string, name?: string, message?: string };
  return e.code ?? e.name ?? e.message ?? String(err);
}

/**
 * One request over its own TCP connection (`Connection: close`, no pool) unless `agent` is given. The body can be held
 * back after `firstBytes`, which keeps the request in flight on the server for as long as the
 * test wants (the server has routed it, its handler waits for the body).
 */
export function openRequest (baseUrl: string, opts: RawRequestOptions): OpenRequest {
  const url = new URL(opts.path, baseUrl);
  const body = Buffer.from(opts.body ?? '', 'utf8');
  const first = Math.min(opts.firstBytes ?? body.length, body.length);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(body.length);
  }
  let markWritten!: () => void;
  const written = new Promise<void>((resolve) => { markWritten = resolve; });
  const req = httpRequest(url, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers,
    agent: opts.agent ?? false,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
  });
  const result = new Promise<HttpResult>((resolve) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (err) => resolve({ kind: 'error', error: errorName(err) }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text === '' ? undefined : JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ kind: 'answer', answer: { status: res.statusCode ?? 0, headers: res.headers, text, json } });
      });
    });
    req.on('error', (err) => resolve({ kind: 'error', error: errorName(err) }));
  });
  req.flushHeaders();
  if (first > 0) req.write(body.subarray(0, first), () => markWritten());
  else req.once('socket', (socket) => socket.once('connect', () => markWritten()));
  const sendRest = (): void => {
    if (first < body.length) req.write(body.subarray(first));
    req.end();
  };
  if (first >= body.length && opts.firstBytes === undefined) sendRest();
  return { sendRest, written, result };
}

/** One complete request over a fresh connection. */
export async function rawRequest (baseUrl: string, opts: RawRequestOptions): Promise<HttpResult> {
  const { result } = openRequest(baseUrl, { ...opts, firstBytes: undefined });
  return await result;
}

/** A raw TCP connection to the server, for clients that misbehave below HTTP. */
export interface RawConnection {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server (or the network) closed the connection. */
  readonly closed: Promise<void>;
  readonly isClosed: () => boolean;
}

export async function rawConnection (baseUrl: string): Promise<RawConnection> {
  const url = new URL(baseUrl);
  const socket = connect({ host: url.hostname, port: Number(url.port) });
  let text = '';
  let closedFlag = false;
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1'); });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => { closedFlag = true; resolve(); }));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return { socket, received: () => text, closed, isClosed: () => closedFlag };
}

/** Runs `task` for every item with at most `limit` in flight; results in item order. */
export async function mapLimit<T, R> (items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Counts of outcomes by label, printed in failure messages and the suite summaries. */
export class Tally {
  readonly counts = new Map<string, number>();
  add (label: string, n = 1): void { this.counts.set(label, (this.counts.get(label) ?? 0) + n); }
  get (label: string): number { return this.counts.get(label) ?? 0; }
  total (prefix = ''): number {
    let sum = 0;
    for (const [label, n] of this.counts) if (label.startsWith(prefix)) sum += n;
    return sum;
  }

  toString (): string {
    return [...this.counts].sort(([a], [b]) => a.localeCompare(b)).map(([label, n]) => `${label}: ${n}`).join(', ');
  }
}
