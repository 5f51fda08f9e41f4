import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/http/auth.js';
import { serviceData } from '../support/app.js';
import { inheritedEnv, serverEntry, startServerProcess } from '../support/fleet.js';

/**
 * `npm start` as an operator runs it: the compiled server (built by `pretest`),
 * no MONGODB_URI, so the local development database on disk under DATA_DIR.
 */
const startServer = (dataDir: string) =>
  startServerProcess({ ...inheritedEnv(), DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' }, { timeoutMs: 90_000 });

describe('the server process (npm start)', () => {
  let dataDir: string;
  beforeAll(async () => { dataDir = await mkdtemp(join(tmpdir(), 'cloudly-start-')); });
  afterAll(async () => { await rm(dataDir, { recursive: true, force: true }); });

  it('serves /readyz on the local database, keeps data across a restart, and exits 0 on SIGTERM', async () => {
    const first = await startServer(dataDir);
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    expect(first.logs.some((l) => l.includes('npm run token -- --role admin'))).toBe(true);

    const secret = (await readFile(join(dataDir, 'dev-jwt-secret'), 'utf8')).trim();
    const admin = await mintToken({ kind: 'secret', secret }, { subject: 'op', role: 'admin' });
    const created = await fetch(`${first.url}/v1/services`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(serviceData({ name: 'persisted' })),
    });
    expect(created.status).toBe(201);
    const { service } = await created.json() as { service: { id: string } };
    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await startServer(dataDir);
    try {
      const read = await fetch(`${second.url}/v1/services/${service.id}`, { headers: { authorization: `Bearer ${admin}` } });
      expect(read.status).toBe(200);
      expect(((await read.json()) as { service: { data: { name: string } } }).service.data.name).toBe('persisted');
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  }, 180_000);

  it('stops at start-up with one line naming a bad variable', async () => {
    const child = spawn(process.execPath, [serverEntry], { env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, PORT: 'eighty' } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^configuration error: PORT: /);
  });
});
