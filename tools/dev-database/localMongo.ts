// The local development database (docs/architecture.md "The local development database"): mongo-java-server run as a child `java`
// process, built once from tools/mongo-dev with the machine's `mvn`.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export type LocalMongoBackend = 'memory' | 'h2';
export type LogLine = (line: string) => void;

export interface LocalMongo {
  /** `mongodb://host:port/` */
  readonly uri: string
  readonly port: number
  /** SIGTERM, wait for a clean exit (h2 closes its file), SIGKILL if that takes too long. */
  stop(): Promise<void>
}

export interface StartLocalMongoOptions {
  backend: LocalMongoBackend
  /** h2 only: the MVStore file; parent directories are created. */
  dataFile?: string
  host?: string
  /** 0 (default) = a free port chosen by the OS. */
  port?: number
  log?: LogLine
  startTimeoutMs?: number
}

/**
 * The launcher refused to start for a reason the operator must resolve, told on its stdout as
 * `REFUSED locked <file>` (another process holds the h2 file) or `REFUSED port-in-use <host:port>`.
 */
export class LocalMongoRefusal extends Error {
  constructor (readonly reason: 'locked' | 'port-in-use', readonly subject: string) {
    super(reason === 'locked'
      ? `the local development database file ${subject} is locked by another process`
      : `cannot listen on ${subject}: the port is in use`);
    this.name = 'LocalMongoRefusal';
  }
}

const MAIN_CLASS = 'mongodev.MongoDevServer';
const BUILD_TIMEOUT_MS = 10 * 60_000;
const STOP_TIMEOUT_MS = 10_000;
const STDERR_TAIL_CHARS = 4_000;

/** Walks up from this module until tools/mongo-dev is found: works from src/ and from dist/src/. */
export function projectRoot (): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'tools', 'mongo-dev', 'pom.xml'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`tools/mongo-dev/pom.xml not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

interface BuildPaths { classes: string, lib: string }

/**
 * Builds tools/mongo-dev unless a build of exactly these sources exists. Each build lands in
 * target/build-<hash of pom.xml and Java sources>/, first compiled into a private temporary directory
 * and then renamed into place: rename is atomic, so concurrent builders (two vitest runs, `npm start`
 * beside `npm test`) never see half a build, and a build killed midway leaves only litter.
 */
export async function ensureLocalMongoBuilt (opts: { log?: LogLine } = {}): Promise<BuildPaths> {
  const toolDir = path.join(projectRoot(), 'tools', 'mongo-dev');
  const targetDir = path.join(toolDir, 'target');
  const buildDir = path.join(targetDir, `build-${await sourceHash(toolDir)}`);
  const paths = { classes: path.join(buildDir, 'classes'), lib: path.join(buildDir, 'lib') };
  if (existsSync(path.join(buildDir, 'complete'))) return paths;

  await mkdir(targetDir, { recursive: true });
  await removeAbandonedTempDirs(targetDir);
  const tempDir = path.join(targetDir, `tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  opts.log?.('building the local development database (tools/mongo-dev) with mvn; the first build downloads its jars');
  try {
    await runMaven(toolDir, tempDir);
    await writeFile(path.join(tempDir, 'complete'), `${new Date().toISOString()}\n`);
    await rename(tempDir, buildDir);
  } catch (err) {
    await rm(tempDir, { recursive: true, force: true });
    // Another process finished the same build first: theirs is as good as ours.
    if (existsSync(path.join(buildDir, 'complete'))) return paths;
    throw err;
  }
  return paths;
}

async function sourceHash (toolDir: string): Promise<string> {
  const hash = createHash('sha256');
  const files = ['pom.xml', ...await listFiles(toolDir, path.join('src', 'main'))].sort();
  for (const file of files) {
    hash.update(`${file}\0`).update(await readFile(path.join(toolDir, file))).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

async function listFiles (root: string, relDir: string): Promise<string[]> {
  const entries = await readdir(path.join(root, relDir), { withFileTypes: true });
  const nested = await Promise.all(entries.map(async (entry) => {
    const rel = path.join(relDir, entry.name);
    return entry.isDirectory() ? await listFiles(root, rel) : [rel];
  }));
  return nested.flat();
}

/** Temp dirs are named tmp-<pid>-…; one whose process is gone was left by a killed build. */
async function removeAbandonedTempDirs (targetDir: string): Promise<void> {
  for (const name of await readdir(targetDir)) {
    const pid = /^tmp-(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) {
      await rm(path.join(targetDir, name), { recursive: true, force: true });
    }
  }
}

function processAlive (pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function runMaven (toolDir: string, outputDir: string): Promise<void> {
  const args = ['-q', '-B', `-DmongoDev.outputDirectory=${outputDir}`, 'process-classes'];
  const child = spawn('mvn', args, { cwd: toolDir, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = collectTail(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), BUILD_TIMEOUT_MS);
  try {
    const { code, signal, error } = await exitOf(child);
    if (error !== undefined) {
      throw new Error(`cannot run mvn (${error.message}): the local development database needs Maven 3.8+ and Java 17+, or set MONGODB_URI`);
    }
    if (code !== 0) {
      throw new Error(`mvn failed (${signal ?? `exit code ${code}`}) building tools/mongo-dev:\n${output()}`);
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts the server and resolves once it listens. The child's stdin stays open for its whole life:
 * the launcher exits on stdin EOF, so it cannot outlive this process, even if this one is SIGKILLed.
 */
export async function startLocalMongo (opts: StartLocalMongoOptions): Promise<LocalMongo> {
  const { classes, lib } = await ensureLocalMongoBuilt({ log: opts.log });
  const args = ['-cp', `${classes}${path.delimiter}${path.join(lib, '*')}`, MAIN_CLASS,
    '--host', opts.host ?? '127.0.0.1', '--port', String(opts.port ?? 0), '--backend', opts.backend];
  if (opts.backend === 'h2') {
    if (opts.dataFile === undefined) throw new Error('startLocalMongo: backend h2 needs dataFile');
    const dataFile = path.resolve(opts.dataFile);
    await mkdir(path.dirname(dataFile), { recursive: true });
    args.push('--file', dataFile);
  }

  const timeoutMs = opts.startTimeoutMs ?? 30_000;
  const child = spawn('java', args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const outputTail = collectTail(child, opts.log);
  const exited = exitOf(child);
  const stdout = requirePipe(child.stdout);
  // 'exit' may come before the last stdout line has been read: a REFUSED line is looked at once stdout is closed.
  const stdoutClosed = new Promise<void>((resolve) => { stdout.once('close', () => resolve()); });
  let refusal: LocalMongoRefusal | undefined;
  const address = await new Promise<{ host: string, port: number }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`local development database did not report LISTENING within ${timeoutMs} ms:\n${outputTail()}`));
    }, timeoutMs);
    createInterface({ input: stdout }).on('line', (line) => {
      const refused = /^REFUSED (locked|port-in-use) (.+)$/.exec(line);
      if (refused?.[1] !== undefined && refused[2] !== undefined) {
        refusal = new LocalMongoRefusal(refused[1] as LocalMongoRefusal['reason'], refused[2]);
        return;
      }
      const match = /^LISTENING (.+):(\d+)$/.exec(line);
      if (match?.[1] === undefined || match[2] === undefined) return;
      clearTimeout(timer);
      resolve({ host: match[1], port: Number(match[2]) });
    });
    void exited.then(async ({ code, signal, error }) => {
      clearTimeout(timer);
      if (error === undefined) await stdoutClosed;
      if (refusal !== undefined) {
        reject(refusal);
        return;
      }
      const why = error !== undefined
        ? `cannot run java (${error.message}): the local development database needs Java 17+, or set MONGODB_URI`
        : `local development database exited before listening (${signal ?? `exit code ${code}`})`;
      reject(new Error(`${why}\n${outputTail()}`));
    });
  });
  // A forgotten stop() must not keep this process alive; when it exits, the child sees stdin EOF.
  for (const stream of [child, child.stdin, child.stdout, child.stderr]) unref(stream);
  let stopping = false;
  void exited.then(({ code, signal }) => {
    if (!stopping) opts.log?.(`local development database exited unexpectedly (${signal ?? `exit code ${code}`})`);
  });

  const hostInUri = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    uri: `mongodb://${hostInUri}:${address.port}/`,
    port: address.port,
    stop: async () => {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
  };
}

interface Exit { code: number | null, signal: NodeJS.Signals | null, error?: Error }

/** Resolves on 'exit', or on 'error' when the program could not be started at all (ENOENT). */
function exitOf (child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });
}

/** Keeps the last few KB of output for error messages; forwards stderr lines to log. */
function collectTail (child: ChildProcess, log?: LogLine): () => string {
  let tail = '';
  const keep = (chunk: Buffer): void => {
    // eslint-disable-next-line no-control-regex -- mvn prints colour resets even with -B
    tail = (tail + chunk.toString('utf8').replace(/\u001b\[[0-9;]*m/g, '')).slice(-STDERR_TAIL_CHARS);
  };
  // mvn -q reports errors on stdout; the launcher's stdout carries only the LISTENING line.
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  if (log !== undefined && child.stderr !== null) {
    createInterface({ input: child.stderr }).on('line', (line) => log(`mongo-dev: ${line}`));
  }
  return () => tail.trim() || '(no output)';
}

function requirePipe<T> (stream: T | null): T {
  if (stream === null) throw new Error('child process stdio is not piped');
  return stream;
}

function unref (handle: object | null): void {
  if (handle !== null && 'unref' in handle && typeof handle.unref === 'function') handle.unref();
}
