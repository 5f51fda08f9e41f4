import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseSigningKeyPem } from './domain/attestation/keys.js';

/** Where `npm start` keeps the development JWT secret when no key is configured. */
export const devSecretPath = (dataDir: string): string => join(dataDir, 'dev-jwt-secret');

/** Reads the development secret; creates it (mode 0600) on first use. */
export async function loadOrCreateDevSecret (dataDir: string): Promise<{ secret: string, created: boolean }> {
  const path = devSecretPath(dataDir);
  try {
    const secret = (await readFile(path, 'utf8')).trim();
    if (secret.length >= 32) return { secret, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  // Another process may have created it in between; then read theirs.
  if (await createWhole(path, `${secret}\n`)) return { secret, created: true };
  return { secret: (await readFile(path, 'utf8')).trim(), created: false };
}

/**
 * Creates `path` holding `content` (mode 0600) unless it exists — never visible half-written: the
 * content goes to a file of this process's own first, then is linked to `path` (which fails if
 * another process got there first). A plain `wx` write creates the file empty and writes it after:
 * a server starting beside it read the empty key file and exited (CI, stop 28).
 */
async function createWhole (path: string, content: string): Promise<boolean> {
  const staging = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(staging, content, { mode: 0o600, flag: 'wx' });
  try {
    await link(staging, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  } finally {
    await unlink(staging).catch(() => undefined);
  }
}

/** Reads the development secret if it exists (the token CLI never creates one). */
export async function readDevSecret (dataDir: string): Promise<string | undefined> {
  try {
    const secret = (await readFile(devSecretPath(dataDir), 'utf8')).trim();
    return secret.length >= 32 ? secret : undefined;
  } catch {
    return undefined;
  }
}

/** Where `npm start` keeps the development attestation signing key when none is configured. */
export const devSigningKeyPath = (dataDir: string): string => join(dataDir, 'dev-attestation-key.pem');

/**
 * Reads the development attestation signing key (Ed25519, PKCS#8 PEM); creates it (mode 0600) on
 * first use. A file that is there but holds no usable key is an error, never replaced: attestations
 * it signed would stop verifying.
 */
export async function loadOrCreateDevSigningKey (dataDir: string): Promise<{ pem: string, created: boolean }> {
  const path = devSigningKeyPath(dataDir);
  const readExisting = async (): Promise<string> => {
    const pem = (await readFile(path, 'utf8')).trim();
    const parsed = parseSigningKeyPem(pem);
    if (!parsed.ok) throw new Error(`${path}: ${parsed.problem}`);
    return pem;
  };
  try {
    return { pem: await readExisting(), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true });
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString().trim();
  if (await createWhole(path, `${pem}\n`)) return { pem, created: true };
  return { pem: await readExisting(), created: false };
}
