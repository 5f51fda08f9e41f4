// The development secret and attestation key (`npm start`, and every server process of the suite without
// configured keys) are created on first use in `.data/`. CI on a fresh clone (stop 28) started two server
// processes at once: one read the key file the other had created but not yet written, and exited
// ("not a readable unencrypted PEM private key"). Here many processes of the shipped code (dist/) use
// them for the first time at once, several rounds.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const module = pathToFileURL(resolvePath('dist/src/devSecret.js')).href;

interface Outcome { code: number | null, stdout: string, stderr: string }

function firstUse (dataDir: string): Promise<Outcome> {
  const script = `const m = await import(${JSON.stringify(module)});
const key = await m.loadOrCreateDevSigningKey(${JSON.stringify(dataDir)});
const secret = await m.loadOrCreateDevSecret(${JSON.stringify(dataDir)});
console.log(JSON.stringify({ key, secret }));`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8'); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    child.on('close', (code) => { resolve({ code, stdout, stderr }); });
  });
}

describe('development keys created by many processes at once', () => {
  it('every process gets the one key and the one secret, whole; exactly one created each', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = await mkdtemp(join(tmpdir(), 'dev-keys-'));
      try {
        const data = join(dir, 'data');
        const outcomes = await Promise.all(Array.from({ length: 12 }, async () => await firstUse(data)));
        for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
        const results = outcomes.map((o) => JSON.parse(o.stdout) as { key: { pem: string, created: boolean }, secret: { secret: string, created: boolean } });
        expect(new Set(results.map((r) => r.key.pem)).size).toBe(1);
        expect(results.filter((r) => r.key.created)).toHaveLength(1);
        expect(new Set(results.map((r) => r.secret.secret)).size).toBe(1);
        expect(results.filter((r) => r.secret.created)).toHaveLength(1);
        expect((await readFile(join(data, 'dev-attestation-key.pem'), 'utf8')).trim()).toBe(results[0]!.key.pem);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }, 60_000);
});
