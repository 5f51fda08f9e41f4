import { createPrivateKey } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/domain/tokens.js';
import { serviceData } from '../support/app.js';
import { inheritedEnv, runToExit, startServerProcess, type Exited } from '../support/fleet.js';

/**
 * `npm start` as an operator runs it: the compiled server (built by `pretest`),
 * no MONGODB_URI, so the local development database on disk under DATA_DIR.
 */
const startServer = (dataDir: string, env: Record<string, string> = {}) =>
  startServerProcess({ ...inheritedEnv(), DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', ...env }, { timeoutMs: 90_000 });

const repositoryRoot = join(import.meta.dirname, '..', '..');

/** The whole output is exactly one line matching `line`: no stack trace (Java `at …` or Node's), nothing on stdout. */
function expectOneLine (result: Exited, line: RegExp): void {
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(result.stderr).toMatch(line);
  expect(result.stderr).not.toMatch(/\n\s+at |Exception|Error:|Node\.js v/);
}

async function listen (server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

async function freePort (): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the server process (npm start)', () => {
  let dataDir: string;
  beforeAll(async () => { dataDir = await mkdtemp(join(tmpdir(), 'cloudly-start-')); });
  afterAll(async () => { await rm(dataDir, { recursive: true, force: true }); });

  it('serves /readyz on the local database, keeps data across a restart, and exits 0 on SIGTERM', async () => {
    const first = await startServer(dataDir);
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    expect(first.logs.some((l) => l.includes('npm run token -- --role admin'))).toBe(true);

    const secret = (await readFile(join(dataDir, 'dev-jwt-secret'), 'utf8')).trim();
    // No ATTESTATION_SIGNING_KEY: a development signing key (Ed25519) is made beside the secret, said at start-up, and kept.
    const signingKey = await readFile(join(dataDir, 'dev-attestation-key.pem'), 'utf8');
    expect(createPrivateKey(signingKey).asymmetricKeyType).toBe('ed25519');
    expect(first.logs.some((l) => l.includes('signing attestations with the development key just created'))).toBe(true);
    const admin = await mintToken({ kind: 'secret', secret }, { subject: 'op', role: 'admin' });
    const created = await fetch(`${first.url}/v1/services`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(serviceData({ name: 'persisted' })),
    });
    expect(created.status).toBe(201);
    const { service } = await created.json() as { service: { id: string } };
    expect(await first.stop('SIGTERM')).toBe(0);

    // At LOG_LEVEL=warn too the start-up line names where it listens (README: "PORT=0: any free port,
    // named on the start-up line"): startServer finds the port from it. Nothing else below warn is written.
    const second = await startServer(dataDir, { LOG_LEVEL: 'warn' });
    expect(second.logs.filter((l) => l.includes('"level":30'))).toEqual([expect.stringContaining('listening on http://127.0.0.1:')]);
    expect(await readFile(join(dataDir, 'dev-attestation-key.pem'), 'utf8')).toBe(signingKey);
    try {
      const read = await fetch(`${second.url}/v1/services/${service.id}`, { headers: { authorization: `Bearer ${admin}` } });
      expect(read.status).toBe(200);
      expect(((await read.json()) as { service: { data: { name: string } } }).service.data.name).toBe('persisted');
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  }, 180_000);

  it('refuses a second server on the same DATA_DIR with one line and exit code 3, and the first keeps serving', async () => {
    const first = await startServer(dataDir);
    try {
      const second = await runToExit({ ...inheritedEnv(), DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' });
      expect(second.code).toBe(3);
      expectOneLine(second, /^start-up refused: DATA_DIR \S+ is in use by another server \(its local development database holds the lock on \S+data\.mv\)/);
      expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }
    // The lock goes with the server that held it.
    const after = await startServer(dataDir);
    expect(await after.stop('SIGTERM')).toBe(0);
  }, 180_000);

  it('runs the local development database on exactly LOCAL_DATABASE_PORT', async () => {
    const port = await freePort();
    const server = await startServer(await mkdtemp(join(tmpdir(), 'cloudly-port-')), { LOCAL_DATABASE_PORT: String(port) });
    try {
      expect(server.logs.some((l) => l.includes('local development database (h2, ') && l.includes(`at mongodb://127.0.0.1:${port}/`))).toBe(true);
      const client = await new MongoClient(`mongodb://127.0.0.1:${port}/`, { serverSelectionTimeoutMS: 5_000 }).connect();
      try {
        expect(await client.db('cloudly_release').command({ ping: 1 })).toMatchObject({ ok: 1 });
      } finally {
        await client.close();
      }
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
  }, 120_000);

  it('refuses a LOCAL_DATABASE_PORT that is taken with one line and exit code 3 (no silent other port)', async () => {
    const holder = createServer();
    const port = await listen(holder);
    try {
      const dir = await mkdtemp(join(tmpdir(), 'cloudly-port-'));
      const result = await runToExit({ ...inheritedEnv(), DATA_DIR: dir, PORT: '0', LOCAL_DATABASE_PORT: String(port) });
      expect(result.code).toBe(3);
      expectOneLine(result, new RegExp(`^start-up refused: LOCAL_DATABASE_PORT ${port} is in use \\(127\\.0\\.0\\.1:${port}\\)`));
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 120_000);

  it('stops at start-up with one line naming a bad variable', async () => {
    const bad = [['PORT', 'eighty'], ['LOCAL_DATABASE_PORT', '70000'], ['PORT', '3000.5'], ['HOST', 'not a host'], ['HOST', 'http://localhost']] as const;
    for (const [variable, value] of bad) {
      const result = await runToExit({ PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, [variable]: value });
      expect(result.code).toBe(2);
      expectOneLine(result, new RegExp(`^configuration error: ${variable}: `));
    }
  });
});

/**
 * The installation the image holds: only what the Dockerfile's runtime stage copies from the build
 * stage (read from the Dockerfile itself), production dependencies, no tools/ and no test code.
 */
describe('the container image', () => {
  let installation: string;
  let copied: string[];
  beforeAll(async () => {
    const dockerfile = await readFile(join(repositoryRoot, 'Dockerfile'), 'utf8');
    const runtimeStage = dockerfile.slice(dockerfile.search(/^FROM \S+ AS runtime$/m));
    copied = [...runtimeStage.matchAll(/^COPY --from=build (?:--chown=\S+ )?\/app\/(\S+) \.\/(\S+)$/gm)].map((m) => `${m[1]} -> ${m[2]}`);
    installation = await mkdtemp(join(tmpdir(), 'cloudly-image-'));
    for (const match of runtimeStage.matchAll(/^COPY --from=build (?:--chown=\S+ )?\/app\/(\S+) \.\/(\S+)$/gm)) {
      await cp(join(repositoryRoot, match[1] ?? ''), join(installation, match[2] ?? ''), { recursive: true });
    }
    await cp(join(repositoryRoot, 'package.json'), join(installation, 'package.json'));
    await symlink(join(repositoryRoot, 'node_modules'), join(installation, 'node_modules'));
    await mkdir(join(installation, '.data'));
  });
  afterAll(async () => { await rm(installation, { recursive: true, force: true }); });

  it('carries the compiled server only: no tools/ (no local development database), no test code', async () => {
    expect(copied).toEqual(['dist/src -> dist/src']);
    expect(await readdir(join(installation, 'dist'))).toEqual(['src']);
  });

  it('without MONGODB_URI refuses to start with one line and exit code 2, writing nothing', async () => {
    const result = await runToExit({
      PATH: process.env['PATH'] ?? '', NODE_ENV: 'production', HOST: '0.0.0.0', PORT: '0', DATA_DIR: join(installation, '.data'),
    }, join(installation, 'dist', 'src', 'server.js'));
    expect(result.code).toBe(2);
    expectOneLine(result, /^configuration error: MONGODB_URI is not set, and this installation has no local development database/);
    expect(await readdir(join(installation, '.data'))).toEqual([]);
  });
});
