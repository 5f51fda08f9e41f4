// The local OCI registry for the tests (issue 21): go-containerregistry's registry — the one
// `crane registry serve` runs — with the OCI 1.1 referrers API on (tools/oci-registry/main.go),
// built once with the machine's `go` and started as a child process, as the local development
// database is (tools/dev-database/localMongo.ts). Development tooling: nothing under src/ imports it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export type LogLine = (line: string) => void;

export interface LocalRegistry {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Ends the process (SIGTERM, then SIGKILL) and waits for it. */
  stop(): Promise<void>;
}

const BUILD_TIMEOUT_MS = 10 * 60_000;
const START_TIMEOUT_MS = 15_000;
const SOURCES = ['go.mod', 'go.sum', 'main.go'];

/** Walks up from this module until tools/oci-registry is found: works from the sources and from dist/. */
export function projectRoot (): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'tools', 'oci-registry', 'main.go'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`tools/oci-registry/main.go not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

async function sourceHash (toolDir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const file of SOURCES) hash.update(`${file}\0`).update(await readFile(path.join(toolDir, file))).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/**
 * The registry binary, built with `go build` into `.data/tools/oci-registry-<hash of its sources>`
 * unless that file exists: a fresh machine builds it once (Go fetches go-containerregistry v0.22.1
 * from the module proxy), every later run reuses it. Built to a private name and renamed into
 * place, so two runs building at once never see half a binary.
 */
export async function ensureRegistryBuilt (opts: { log?: LogLine } = {}): Promise<string> {
  const root = projectRoot();
  const toolDir = path.join(root, 'tools', 'oci-registry');
  const binDir = path.join(root, '.data', 'tools');
  const binary = path.join(binDir, `oci-registry-${await sourceHash(toolDir)}`);
  if (existsSync(binary)) return binary;
  await mkdir(binDir, { recursive: true });
  const temp = `${binary}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  opts.log?.('building the test registry (tools/oci-registry) with go; the first build downloads go-containerregistry');
  try {
    await runGo(toolDir, ['build', '-trimpath', '-o', temp, '.']);
    await rename(temp, binary);
  } catch (err) {
    await rm(temp, { force: true });
    if (existsSync(binary)) return binary; // another run finished the same build first
    throw err;
  }
  return binary;
}

async function runGo (cwd: string, args: string[]): Promise<void> {
  const child = spawn('go', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GOFLAGS: '-mod=mod' } });
  let output = '';
  const keep = (chunk: Buffer): void => { output = (output + chunk.toString('utf8')).slice(-4000); };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const timer = setTimeout(() => child.kill('SIGKILL'), BUILD_TIMEOUT_MS);
  try {
    const exit = await exitOf(child);
    if (exit.error !== undefined) throw new Error(`cannot run go (${exit.error.message}): the test registry needs Go 1.25+, or set REGISTRY_URL`);
    if (exit.code !== 0) throw new Error(`go ${args.join(' ')} failed (${exit.signal ?? `exit code ${exit.code}`}) in tools/oci-registry:\n${output.trim()}`);
  } finally {
    clearTimeout(timer);
  }
}

interface Exit { code: number | null, signal: NodeJS.Signals | null, error?: Error }

function exitOf (child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });
}

/**
 * Starts the registry on 127.0.0.1 (any free port unless `port` is given) and resolves once it
 * listens. Its stdin stays open for its whole life: it exits on EOF, so it dies with this process.
 */
export async function startLocalRegistry (opts: { port?: number, log?: LogLine, verbose?: boolean } = {}): Promise<LocalRegistry> {
  const binary = await ensureRegistryBuilt({ log: opts.log });
  const args = ['--address', `127.0.0.1:${opts.port ?? 0}`, ...(opts.verbose === true ? ['--verbose'] : [])];
  const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  if (opts.log !== undefined && child.stderr !== null) createInterface({ input: child.stderr }).on('line', (line) => opts.log?.(line));
  const exited = exitOf(child);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the test registry did not listen within ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const listening = /^LISTENING .*:(\d+)$/.exec(line);
      if (listening?.[1] !== undefined) { clearTimeout(timer); resolve(Number(listening[1])); }
      if (line.startsWith('REFUSED ')) { clearTimeout(timer); reject(new Error(`the test registry refused to start: ${line.slice(8)}`)); }
    });
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`the test registry exited before listening (${exit.error?.message ?? exit.signal ?? `exit code ${exit.code}`})`));
    });
  });
  // A forgotten stop() must not keep this process alive; the child sees stdin EOF when it exits.
  for (const handle of [child, child.stdin, child.stdout, child.stderr]) (handle as { unref?: () => void } | null)?.unref?.();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
