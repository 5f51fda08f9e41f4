import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inheritedEnv, serverEntry } from '../support/fleet.js';

/**
 * README "Configuration" and docs/operations.md "Start-up and exit codes": "Environment variables,
 * validated at start-up: a bad value stops the process with one line naming it (`configuration
 * error: PORT: …`, exit code 2)"; "A start that cannot succeed prints one line on stderr (no stack
 * trace)"; "Error messages never echo a secret's value."
 *
 * src/config.ts checks MONGODB_URI only against `^mongodb(\+srv)?://` and AUTH_JWT_PUBLIC_KEY only for
 * the text `-----BEGIN PUBLIC KEY-----`. Values that pass those checks and still cannot be used reach
 * `new MongoClient(uri)` / `importSPKI(pem, alg)` inside buildApp, which throw: Node prints the uncaught
 * error with its stack (15–30 lines), exit code 1 — and the driver's MongoParseError carries the whole
 * connection string, password included, onto stderr (which the orchestrator collects as the log).
 */

interface Exit { code: number | null, stderr: string, stdout: string }

async function start (env: Record<string, string>): Promise<Exit> {
  return await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [serverEntry], { env: { ...inheritedEnv(), PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`still running after 20 s: ${stdout}${stderr}`)); }, 20_000);
    child.once('exit', (code) => { clearTimeout(timer); resolve({ code, stderr, stdout }); });
  });
}

const lines = (text: string): string[] => text.split('\n').filter((l) => l.trim() !== '');

describe('start-up with a configuration value that passes the pattern but cannot be used', () => {
  let dataDir: string;
  beforeAll(async () => { dataDir = await mkdtemp(join(tmpdir(), 'adv3-config-')); });
  afterAll(async () => { await rm(dataDir, { recursive: true, force: true }); });

  const secret = 'a-secret-of-more-than-thirty-two-characters';

  it('a malformed MONGODB_URI: one line naming MONGODB_URI, exit 2, and the password is not echoed', async () => {
    const exit = await start({ MONGODB_URI: 'mongodb://cloudly:s3cr3t-pw@/?replicaSet=rs0', AUTH_JWT_SECRET: secret, DATA_DIR: dataDir });
    expect(exit.stderr + exit.stdout, 'the password must not be printed').not.toContain('s3cr3t-pw');
    expect({ code: exit.code, lines: lines(exit.stderr).length }).toEqual({ code: 2, lines: 1 });
    expect(exit.stderr).toMatch(/^configuration error: MONGODB_URI: /);
  });

  it('an unknown MONGODB_URI option value: one line naming MONGODB_URI, exit 2', async () => {
    const exit = await start({ MONGODB_URI: 'mongodb://db.example:27017/?replicaSet=', AUTH_JWT_SECRET: secret, DATA_DIR: dataDir });
    expect({ code: exit.code, lines: lines(exit.stderr).length }).toEqual({ code: 2, lines: 1 });
    expect(exit.stderr).toMatch(/^configuration error: MONGODB_URI: /);
  });

  it('an AUTH_JWT_PUBLIC_KEY that is not a valid key: one line naming it, exit 2', async () => {
    const exit = await start({
      MONGODB_URI: 'mongodb://127.0.0.1:1/', AUTH_JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----', DATA_DIR: dataDir,
    });
    expect({ code: exit.code, lines: lines(exit.stderr).length }).toEqual({ code: 2, lines: 1 });
    expect(exit.stderr).toMatch(/^configuration error: AUTH_JWT_PUBLIC_KEY: /);
  });

  it('an RSA public key with AUTH_JWT_ALGORITHM=ES256: one line naming the mismatch, exit 2', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const exit = await start({ MONGODB_URI: 'mongodb://127.0.0.1:1/', AUTH_JWT_PUBLIC_KEY: pem, AUTH_JWT_ALGORITHM: 'ES256', DATA_DIR: dataDir });
    expect({ code: exit.code, lines: lines(exit.stderr).length }).toEqual({ code: 2, lines: 1 });
    expect(exit.stderr).toMatch(/^configuration error: AUTH_JWT_(PUBLIC_KEY|ALGORITHM): /);
  });

  it('an ATTESTATION_SIGNING_KEY_FILE holding an RSA key: one line naming it, exit 2, and the key is not echoed', async () => {
    const keyDir = await mkdtemp(join(tmpdir(), 'adv3-signing-'));
    try {
      const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      await writeFile(join(keyDir, 'key.pem'), pem);
      const exit = await start({ MONGODB_URI: 'mongodb://127.0.0.1:1/', AUTH_JWT_SECRET: secret, ATTESTATION_SIGNING_KEY_FILE: join(keyDir, 'key.pem'), DATA_DIR: dataDir });
      expect({ code: exit.code, lines: lines(exit.stderr) }).toEqual({
        code: 2,
        lines: ['configuration error: ATTESTATION_SIGNING_KEY: a rsa key: only Ed25519 and ECDSA P-256 keys sign attestations'],
      });
      expect(exit.stderr + exit.stdout).not.toContain(pem.split('\n')[1]);
    } finally {
      await rm(keyDir, { recursive: true, force: true });
    }
  });

  it('nothing was written to DATA_DIR by these refused starts', async () => {
    expect(await readdir(dataDir)).toEqual([]);
  });
});
