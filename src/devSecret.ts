import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

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
