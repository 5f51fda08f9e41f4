/**
 * docs/operations.md "Start-up and exit codes": "A start that cannot succeed prints one line on stderr (no
 * stack trace) and exits with: … 1 | anything else that failed (the HTTP port is taken, …) |
 * `start-up failed: cannot listen on 127.0.0.1:3000 (EADDRINUSE)`"; README: "A start that cannot succeed
 * prints one line and exits … 1 (anything else)".
 *
 * The most common failed start of a newcomer — `npm start` while port 3000 is taken — prints three lines:
 * the local development database's start-up line, a Java log line of the database shutting down
 * (`mongo-dev: [mongo-dev-shutdown] WARN de.bwaldvogel.mongo.MongoServer - Closing 2 clients`), then the
 * promised line. (test/integration/server.process.test.ts holds the other refusals to exactly one line; it
 * has no case for a taken HTTP port.)
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inheritedEnv, serverEntry } from '../support/fleet.js';

describe('npm start while the HTTP port is taken (local development database)', () => {
  let blocker: Server | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await new Promise((resolve) => { blocker ? blocker.close(resolve) : resolve(undefined); });
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('prints one line, `start-up failed: cannot listen on …`, and exits 1', async () => {
    blocker = createServer();
    const port = await new Promise<number>((resolve) => {
      blocker!.listen(0, '127.0.0.1', () => { resolve((blocker!.address() as { port: number }).port); });
    });
    dataDir = await mkdtemp(join(tmpdir(), 'adv3-port-'));
    const secret = 'a-secret-of-more-than-thirty-two-characters';
    const env = { ...inheritedEnv(), PORT: String(port), DATA_DIR: dataDir, LOCAL_DATABASE_PORT: '0', AUTH_JWT_SECRET: secret };
    const child = spawn(process.execPath, [serverEntry], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    expect(code, stdout + stderr).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n').at(-1)).toBe(`start-up failed: cannot listen on 127.0.0.1:${port} (EADDRINUSE)`);
    expect(stderr.trimEnd().split('\n'), 'one line on stderr').toEqual([`start-up failed: cannot listen on 127.0.0.1:${port} (EADDRINUSE)`]);
  }, 120_000);
});
