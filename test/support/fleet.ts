import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MongoClient, type Db } from 'mongodb';
import { inject } from 'vitest';
import { freshDatabaseName } from './database.js';
import { tokenMinter, type TokenMinter } from './tokens.js';

/**
 * Several real server processes (`node dist/src/server.js`) on one fresh database of the
 * test database server, for tests that need "more than one server process": concurrency
 * across processes, SIGKILL in the middle of a write, restart and retry.
 *
 * Each process listens on its own port (PORT=0, the port is read from its
 * "listening on http://…" line). Processes never outlive the test run: `close()` kills them,
 * a `process.on('exit')` handler kills what is left, and each child watches its stdin pipe
 * and SIGKILLs itself when the test process goes away without running exit handlers
 * (SIGTERM/SIGKILL of the vitest worker).
 */

export interface FleetOptions {
  /** How many server processes to start (in parallel). */
  processes: number;
  /** Database name; default a fresh `fleet_<random>`. */
  dbName?: string;
  /** HS256 secret shared by all processes; default random. */
  secret?: string;
  /**
   * Server LOG_LEVEL; default `info`. Must be `info` or more verbose: the start-up line that names
   * the port is logged at info. Lines are kept (last 200 per process), not printed, unless TEST_LOG is set.
   */
  logLevel?: 'info' | 'debug' | 'trace';
  /** Extra environment for every process (wins over the defaults above; a `MONGODB_URI` here is also what `db()` uses). */
  env?: Record<string, string>;
  /** How long one process may take to print its listening line; default 60 s. */
  startTimeoutMs?: number;
}

export interface ServerProcess {
  /** Index in `fleet.servers`, used as a log prefix. */
  readonly index: number;
  /** Base URL of the current process, `http://127.0.0.1:<port>`; changes on restart. */
  readonly url: string;
  /** PID of the current process. */
  readonly pid: number;
  /** Resolves with the exit code (`null` when ended by a signal) when the current process exits. */
  readonly exited: Promise<number | null>;
  /** True while the current process has not exited. */
  readonly running: boolean;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code; immediate when already exited. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /**
   * Starts a fresh process with the fleet's settings plus `env` (for this start only); a running
   * process is stopped with SIGTERM first. The new process gets a new port: read `url` again.
   */
  restart(env?: Record<string, string>): Promise<void>;
  /** The last 200 lines (stdout and stderr) of this slot, across restarts, for failure messages. */
  readonly logs: string[];
}

export interface Fleet {
  servers: ServerProcess[];
  dbName: string;
  secret: string;
  /** A valid HS256 token for the role (cluster tokens for cluster `c1` unless given). */
  token: TokenMinter;
  /** A driver handle on the fleet's database, for assertions; closed by `close()`. */
  db(): Promise<Db>;
  /** Starts one more process with the fleet's settings plus `env`. */
  add(env?: Record<string, string>): Promise<ServerProcess>;
  /** Every process's recent log lines, prefixed with its index, for a failure message. */
  logs(): string;
  /** Kills every process (SIGKILL), drops the database, closes the driver handle. */
  close(): Promise<void>;
}

/** The compiled server, what `npm start` runs (`npm run build` makes it). */
export const serverEntry = join(import.meta.dirname, '..', '..', 'dist', 'src', 'server.js');
const LOG_LINES_KEPT = 200;

/** What every server process inherits from the test process: no more (no MONGODB_URI, no secrets). */
export const inheritedEnv = (): Record<string, string> => ({ PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' });

/**
 * Loaded into each server process with `--import`: when the test process dies without killing it,
 * the parent's end of the stdin pipe closes and the server kills itself. `unref` keeps the watch
 * from holding the event loop open, so SIGTERM's drain-and-exit is unchanged.
 */
const orphanWatch = 'data:text/javascript,' + encodeURIComponent(
  'process.stdin.on("end",()=>process.kill(process.pid,"SIGKILL"));' +
  'process.stdin.on("error",()=>{});process.stdin.resume();process.stdin.unref();'
);

/** Every child this test process started and that has not exited: the exit handler's list. */
const liveChildren = new Set<ChildProcessWithoutNullStreams>();
let exitHandlerInstalled = false;

function installExitHandler (): void {
  if (exitHandlerInstalled) return;
  exitHandlerInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
  });
}

/** One started server process (`startServerProcess`). */
export interface StartedServer {
  child: ChildProcessWithoutNullStreams;
  /** `http://127.0.0.1:<port>`, from its "listening on" line. */
  url: string;
  /** Resolves with the exit code (`null` when ended by a signal). */
  exited: Promise<number | null>;
  /** Its recent output lines (stdout and stderr, the last 200). */
  logs: string[];
  /** Sends `signal` and resolves with the exit code; at once with the old code when already gone. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartServerOptions {
  /** Prefix of its lines under TEST_LOG and name in failure messages; default 0. */
  index?: number;
  /** Where its lines go (kept across restarts by a fleet); default a fresh list. */
  logs?: string[];
  /** How long it may take to print its listening line; default 60 s. */
  timeoutMs?: number;
}

/**
 * Starts `node dist/src/server.js` with exactly `env` (see `inheritedEnv`; PORT=0 picks a free port)
 * and resolves when it logs "listening on …". It is killed when this test process exits, and kills
 * itself when this process dies without exit handlers. Rejects, with its output, when it exits or
 * stays silent first.
 */
export async function startServerProcess (env: Record<string, string>, opts: StartServerOptions = {}): Promise<StartedServer> {
  if (!existsSync(serverEntry)) {
    throw new Error(`${serverEntry} does not exist. The tests run the compiled server: ` +
      'run `npm run build` first (`npm test` does it in pretest).');
  }
  installExitHandler();
  const index = opts.index ?? 0;
  const logs = opts.logs ?? [];
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const child = spawn(process.execPath, ['--import', orphanWatch, serverEntry], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  liveChildren.add(child);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => {
      liveChildren.delete(child);
      remember(logs, `[fleet] process ${index} (pid ${child.pid ?? '?'}) exited with ${code ?? signal}`);
      resolve(code);
    });
  });
  child.once('error', (err) => { remember(logs, `[fleet] process ${index} could not be spawned: ${err.message}`); });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return await exited;
    child.kill(signal);
    return await exited;
  };

  return await new Promise((resolve, reject) => {
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`fleet: server process ${index} ${why}. Its output:\n${logs.join('\n')}`));
    };
    const timer = setTimeout(() => fail(`printed no "listening on" line within ${timeoutMs} ms`), timeoutMs);
    const onLine = (line: string): void => {
      remember(logs, line);
      if (process.env['TEST_LOG']) process.stderr.write(`[server ${index}] ${line}\n`);
      if (settled) return;
      const match = /listening on (http:\/\/[^ "]+)/.exec(line);
      if (match?.[1]) {
        settled = true;
        clearTimeout(timer);
        resolve({ child, url: match[1], exited, logs, stop });
      }
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    void exited.then((code) => fail(`exited (${code ?? child.signalCode}) before listening`));
  });
}

export interface Exited { code: number | null, stdout: string, stderr: string }

/**
 * Runs `node <entry> [...args]` (default: the compiled server) with exactly `env` until it exits by
 * itself, for starts that must fail and one-shot commands; SIGKILL after `timeoutMs` (then code is null).
 */
export async function runToExit (env: Record<string, string>, entry = serverEntry, timeoutMs = 60_000, args: string[] = []): Promise<Exited> {
  const child = spawn(process.execPath, [entry, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

function remember (logs: string[], line: string): void {
  logs.push(line);
  if (logs.length > LOG_LINES_KEPT) logs.splice(0, logs.length - LOG_LINES_KEPT);
}

/** Starts `opts.processes` server processes in parallel on one fresh database. */
export async function startFleet (opts: FleetOptions): Promise<Fleet> {
  const dbName = opts.dbName ?? freshDatabaseName('fleet');
  const secret = opts.secret ?? randomBytes(32).toString('base64url');
  // `env.MONGODB_URI` points the processes at another server (fault tests); db() and close() follow it.
  const mongoUri = opts.env?.['MONGODB_URI'] || inject('mongoUri');
  const timeoutMs = opts.startTimeoutMs ?? 60_000;
  const baseEnv: Record<string, string> = {
    ...inheritedEnv(),
    MONGODB_URI: mongoUri,
    MONGODB_DB: dbName,
    AUTH_JWT_SECRET: secret,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: opts.logLevel ?? 'info',
    ...opts.env,
  };

  const servers: ServerProcess[] = [];
  let client: MongoClient | undefined;

  const launch = async (index: number, env: Record<string, string> = {}): Promise<ServerProcess> => {
    const logs: string[] = [];
    let current = await startServerProcess({ ...baseEnv, ...env }, { index, logs, timeoutMs });
    const server: ServerProcess = {
      index,
      get url () { return current.url; },
      get pid () { return current.child.pid ?? -1; },
      get exited () { return current.exited; },
      get running () { return current.child.exitCode === null && current.child.signalCode === null; },
      logs,
      kill: async (signal = 'SIGTERM') => await current.stop(signal),
      restart: async (restartEnv = {}) => {
        await current.stop('SIGTERM');
        remember(logs, `[fleet] restarting process ${index}`);
        current = await startServerProcess({ ...baseEnv, ...restartEnv }, { index, logs, timeoutMs });
      },
    };
    return server;
  };

  const fleet: Fleet = {
    servers,
    dbName,
    secret,
    token: tokenMinter(secret, 'fleet'),
    db: async () => {
      client ??= await new MongoClient(mongoUri, { serverSelectionTimeoutMS: 5_000 }).connect();
      return client.db(dbName);
    },
    add: async (env) => {
      const server = await launch(servers.length, env);
      servers.push(server);
      return server;
    },
    logs: () => servers.map((s) => s.logs.map((line) => `[server ${s.index}] ${line}`).join('\n')).join('\n'),
    close: async () => {
      await Promise.all(servers.map(async (s) => await s.kill('SIGKILL')));
      try {
        const db = await fleet.db();
        await db.dropDatabase();
      } finally {
        await client?.close();
        client = undefined;
      }
    },
  };

  const started = await Promise.allSettled(Array.from({ length: opts.processes }, async (_, i) => await launch(i)));
  for (const result of started) if (result.status === 'fulfilled') servers.push(result.value);
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await fleet.close().catch(() => undefined);
    throw failed.reason;
  }
  return fleet;
}

export interface RequestOptions {
  method?: string;
  /** Appended to the base URL, e.g. `/v1/services`. */
  path?: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Default 10 s; the request fails (AbortSignal timeout) instead of hanging a test. */
  timeoutMs?: number;
}

export interface Response<T> {
  status: number;
  headers: Record<string, string>;
  /** The parsed body; `undefined` when the body is empty or not JSON (then see `text`). */
  json: T;
  text: string;
}

/** One HTTP request to a real port with global fetch. The JSON type is the caller's claim. */
export async function request<T = Record<string, unknown>> (url: string, opts: RequestOptions = {}): Promise<Response<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers['authorization'] = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${url}${opts.path ?? ''}`, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: Object.fromEntries(res.headers), json: json as T, text };
}
