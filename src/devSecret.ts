import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
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
  // `wx` fails if another process created it in between; then read theirs.
  try {
    await writeFile(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return { secret, created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { secret: (await readFile(path, 'utf8')).trim(), created: false };
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
  try {
    await writeFile(path, `${pem}\n`, { mode: 0o600, flag: 'wx' });
    return { pem, created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { pem: await readExisting(), created: false };
  }
}
