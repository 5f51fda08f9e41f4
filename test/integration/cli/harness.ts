import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';

/**
 * Running the CLI as a CI job runs it: a child process (`node dist/src/cli/release.js`), no TTY,
 * configured by environment variables only. Network failures are injected by a TCP proxy
 * between the CLI and a server. TEST_LOG=1 prints every CLI run's exit code, stdout and stderr.
 */

export const cliEntry = join(import.meta.dirname, '..', '..', '..', 'dist', 'src', 'cli', 'release.js');

// ---------------------------------------------------------------------------------------
// Running the CLI: every child is bounded (killed on timeout) and killed when the file ends.
// ---------------------------------------------------------------------------------------

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document `--json` promises. */
  json: () => any; // the test reads fields freely
}

export interface CliChild {
  done: Promise<CliRun>;
  /** Resolves when stderr has a line matching `re` (the CLI is following). */
  waitForStderr(re: RegExp, timeoutMs?: number): Promise<void>;
}

const liveChildren = new Set<ChildProcess>();
process.on('exit', () => { for (const c of liveChildren) c.kill('SIGKILL'); });

let baseEnv: Record<string, string> = {};

/** The environment every CLI run starts from (CLOUDLY_URL, CLOUDLY_TOKEN of the file's fleet). */
export function setCliEnv (env: Record<string, string>): void {
  baseEnv = env;
}

/** Kills every CLI child still running (afterAll). */
export function killCliChildren (): void {
  for (const c of liveChildren) c.kill('SIGKILL');
}

/** `env` values of `undefined` remove a variable of the base environment. */
export function startCli (args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 30_000): CliChild {
  const merged: Record<string, string> = { PATH: process.env['PATH'] ?? '' };
  for (const [k, v] of Object.entries({ ...baseEnv, ...env })) if (v !== undefined) merged[k] = v;
  const child = spawn(process.execPath, [cliEntry, ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(child);
  let stdout = '';
  let stderr = '';
  const watchers = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const w of [...watchers]) w();
  });
  const done = new Promise<CliRun>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cloudly-release ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      liveChildren.delete(child);
      if (process.env['TEST_LOG']) console.log(`$ cloudly-release ${args.join(' ')}\n--- exit ${code}\n--- stdout\n${stdout}--- stderr\n${stderr}`);
      for (const w of [...watchers]) w();
      resolve({
        code,
        stdout,
        stderr,
        json: () => {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`stdout is not one JSON document:\n${stdout}\nstderr: ${stderr}`);
          }
        },
      });
    });
  });
  return {
    done,
    waitForStderr: (re, ms = 15_000) => new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (re.test(stderr)) {
          watchers.delete(check);
          clearTimeout(timer);
          resolve();
        } else if (child.exitCode !== null || child.signalCode !== null) {
          watchers.delete(check);
          clearTimeout(timer);
          reject(new Error(`the CLI exited before printing ${re}\nstdout: ${stdout}\nstderr: ${stderr}`));
        }
      };
      const timer = setTimeout(() => {
        watchers.delete(check);
        reject(new Error(`no ${re} on stderr within ${ms} ms\nstderr: ${stderr}`));
      }, ms);
      watchers.add(check);
      check();
    }),
  };
}

export const runCli = async (args: string[], env: Record<string, string | undefined> = {}, timeoutMs?: number): Promise<CliRun> =>
  await startCli(args, env, timeoutMs).done;

// ---------------------------------------------------------------------------------------
// A TCP proxy that injects failures between the CLI and one server process.
// ---------------------------------------------------------------------------------------

/** What the proxy does with one HTTP request (seen by its request line). */
export type Action =
  | 'pass'
  /** Forward the request, then destroy the client socket when the response starts: applied, never heard. */
  | 'drop-response'
  /** Forward the request, pass the first chunk of the response, then cut the connection (an SSE stream dropping). */
  | 'cut-after-first-chunk'
  /** Forward the request, pass the response up to its first SSE event, then cut the connection (a stream that drops at once). */
  | 'cut-after-first-event'
  /** Answer 404 itself (a gateway without the route). */
  | 'not-found'
  /** Answer this itself (a gateway in trouble, a login page, a redirect): the server never sees the request. */
  | { respond: { status: number, contentType?: string, body?: string, headers?: Record<string, string> } };

export interface ProxyOptions {
  /** Reset this many connections at once (RST), before any byte is read. */
  resetFirstConnections?: number;
  /** Reset every connection. */
  resetAll?: boolean;
  /** Accept every connection, read what comes, never answer (a server or proxy that went silent). */
  silent?: boolean;
  policy?: (req: { method: string, path: string }) => Action;
}

export interface Proxy {
  url: string;
  requests: Array<{ method: string, path: string, action: Action }>;
  connections: number;
  close(): Promise<void>;
}

/** `target`: the server's URL, or a function choosing it for each new connection. */
export async function startProxy (target: string | (() => string), opts: ProxyOptions = {}): Promise<Proxy> {
  const sockets = new Set<Socket>();
  const proxy: Proxy = { url: '', requests: [], connections: 0, close: async () => undefined };
  const server: Server = createServer((client) => {
    proxy.connections++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (opts.resetAll || proxy.connections <= (opts.resetFirstConnections ?? 0)) {
      client.resetAndDestroy();
      return;
    }
    if (opts.silent) {
      client.resume();
      return;
    }
    const { hostname, port } = new URL(typeof target === 'string' ? target : target());
    const upstream = connect(Number(port), hostname);
    sockets.add(upstream);
    upstream.on('close', () => { sockets.delete(upstream); client.destroy(); });
    upstream.on('error', () => undefined);
    client.on('close', () => upstream.destroy());
    let action: Action = 'pass';
    let passed = 0;
    client.on('data', (chunk: Buffer) => {
      for (const m of chunk.toString('latin1').matchAll(/^([A-Z]+) (\S+) HTTP\/1\.1\r$/gm)) {
        const req = { method: m[1]!, path: m[2]! };
        action = opts.policy?.(req) ?? 'pass';
        proxy.requests.push({ ...req, action });
        passed = 0;
      }
      if (action === 'not-found') action = { respond: { status: 404, body: JSON.stringify({ code: 'not-found', detail: 'no such route here' }) } };
      if (typeof action === 'object') {
        const { status, contentType = 'application/problem+json', body = '', headers = {} } = action.respond;
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
        client.end(`HTTP/1.1 ${status} Proxy Says\r\ncontent-type: ${contentType}\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n` +
          `connection: close\r\n\r\n${body}`);
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    client.on('end', () => upstream.end());
    upstream.on('data', (chunk: Buffer) => {
      if (action === 'drop-response') {
        client.destroy();
        upstream.destroy();
        return;
      }
      if (action === 'cut-after-first-chunk') {
        if (passed++ > 0) return;
        client.write(chunk);
        setTimeout(() => { client.destroy(); upstream.destroy(); }, 50);
        return;
      }
      if (action === 'cut-after-first-event') {
        if (passed < 0) return;
        client.write(chunk);
        if (/^data:/m.test(chunk.toString('latin1'))) {
          passed = -1;
          setTimeout(() => { client.destroy(); upstream.destroy(); }, 50);
        }
        return;
      }
      client.write(chunk);
    });
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return proxy;
}

// ---------------------------------------------------------------------------------------

/** The variables of one GitHub Actions job attempt. */
export const github = (runId: string, attempt = '1'): Record<string, string> => ({
  GITHUB_ACTIONS: 'true',
  GITHUB_REPOSITORY: 'acme/shop',
  GITHUB_RUN_ID: runId,
  GITHUB_RUN_ATTEMPT: attempt,
  GITHUB_JOB: 'deploy',
});
