import { SignJWT, importPKCS8, type CryptoKey } from 'jose';
import { devSecretPath, readDevSecret } from '../devSecret.js';
import { usageError } from './errors.js';

/** Who a request is made as: the demo's operator (admin) or one cluster's Coreflow agent. */
export type Principal = { role: 'admin' } | { role: 'cluster', clusterId: string };

export interface TokenSource {
  /** A valid token for the principal (re-minted well before it expires). */
  tokenFor(principal: Principal): Promise<string>;
}

export interface DemoConfig {
  baseUrl: string;
  tokens: TokenSource;
  /** DATA_DIR when it is not the default, so that the printed `npm run token` hint finds the same secret. */
  dataDir?: string;
}

interface SigningKey {
  key: Uint8Array | CryptoKey;
  algorithm: string;
}

const DEFAULT_URL = 'http://127.0.0.1:3000';
const DEFAULT_DATA_DIR = '.data';
const TOKEN_TTL_S = 3_600;
/** A cached token is replaced when less than this is left, so a --follow demo runs for days. */
const TOKEN_REFRESH_S = 600;

function baseUrlOf (value: string | undefined): string {
  const text = value === undefined || value === '' ? DEFAULT_URL : value;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`CLOUDLY_URL is not a URL: '${text}' (default ${DEFAULT_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`CLOUDLY_URL must be http(s), got '${text}'`);
  return text.replace(/\/+$/, '');
}

/** The key the server verifies with: AUTH_JWT_SECRET, AUTH_JWT_PRIVATE_KEY (public-key servers), else the dev secret. */
async function signingKeyOf (env: NodeJS.ProcessEnv, dataDir: string): Promise<SigningKey> {
  const secret = env['AUTH_JWT_SECRET'];
  if (secret) return { key: new TextEncoder().encode(secret), algorithm: 'HS256' };
  const privateKey = env['AUTH_JWT_PRIVATE_KEY'];
  if (privateKey) {
    const algorithm = env['AUTH_JWT_ALGORITHM'] || 'RS256';
    try {
      return { key: await importPKCS8(privateKey, algorithm), algorithm };
    } catch (err) {
      throw usageError(`AUTH_JWT_PRIVATE_KEY is not a PKCS#8 PEM key for ${algorithm}: ${(err as Error).message}`);
    }
  }
  const devSecret = await readDevSecret(dataDir);
  if (devSecret) return { key: new TextEncoder().encode(devSecret), algorithm: 'HS256' };
  throw usageError(`no AUTH_JWT_SECRET and no development secret at ${devSecretPath(dataDir)}: start the server with \`npm start\` first (it creates it)`);
}

function createTokenSource (signing: SigningKey): TokenSource {
  const cache = new Map<string, { token: string, expiresAt: number }>();
  return {
    async tokenFor (principal) {
      const key = principal.role === 'cluster' ? `cluster/${principal.clusterId}` : principal.role;
      const now = Math.floor(Date.now() / 1000);
      const cached = cache.get(key);
      if (cached && cached.expiresAt - now > TOKEN_REFRESH_S) return cached.token;
      const claims = principal.role === 'cluster'
        ? { role: 'cluster', type: 'machine', clusterId: principal.clusterId }
        : { role: 'admin', type: 'human' };
      const token = await new SignJWT(claims)
        .setSubject(principal.role === 'cluster' ? 'coreflow-demo' : 'demo-operator')
        .setIssuedAt(now)
        .setExpirationTime(now + TOKEN_TTL_S)
        .setProtectedHeader({ alg: signing.algorithm, typ: 'JWT' })
        .sign(signing.key);
      cache.set(key, { token, expiresAt: now + TOKEN_TTL_S });
      return token;
    },
  };
}

/** CLOUDLY_URL and the signing key, or a usage error (exit 3) saying what to do. */
export async function loadDemoConfig (env: NodeJS.ProcessEnv): Promise<DemoConfig> {
  const baseUrl = baseUrlOf(env['CLOUDLY_URL']);
  const dataDir = env['DATA_DIR'] || DEFAULT_DATA_DIR;
  const tokens = createTokenSource(await signingKeyOf(env, dataDir));
  return { baseUrl, tokens, ...(dataDir === DEFAULT_DATA_DIR ? {} : { dataDir }) };
}
