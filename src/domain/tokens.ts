import { Type, type Static } from '@sinclair/typebox';
import { SignJWT, importPKCS8 } from 'jose';
import { PrincipalType, Role } from './principal.js';

/**
 * The access tokens: the claims a token carries and how one is minted. Shared by the server, which
 * verifies them (src/http/auth.ts), and the token command (src/cli/token.ts), which mints them: the
 * CLI never imports the HTTP adapters. Roles and what they may do: docs/api.md "Authentication and roles".
 */

const ClusterId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]*$' });

/** The claims a token must carry; other registered claims (iat, iss, …) may be present. */
export const TokenClaims = Type.Object({
  sub: Type.String({ minLength: 1, maxLength: 256 }),
  role: Role,
  type: PrincipalType,
  clusterId: Type.Optional(ClusterId),
  exp: Type.Integer({ minimum: 1 }),
});
export type TokenClaims = Static<typeof TokenClaims>;

/** What a minted token says: who, which role, which cluster (the `cluster` role), for how long (default one hour). */
export interface MintOptions {
  subject: string;
  role: Role;
  type?: PrincipalType;
  clusterId?: string;
  ttlSeconds?: number;
}

/** The key a token is signed with: a shared secret (HS256) or a PKCS#8 private key PEM with its algorithm. */
export type TokenSigning = { kind: 'secret', secret: string } | { kind: 'private-key', pem: string, algorithm: string };

/** Signs a token. With a secret: HS256. With a PKCS#8 private key PEM: the given algorithm. */
export async function mintToken (signing: TokenSigning, opts: MintOptions): Promise<string> {
  const claims: Record<string, unknown> = { role: opts.role, type: opts.type ?? (opts.role === 'admin' || opts.role === 'user' ? 'human' : 'machine') };
  if (opts.clusterId !== undefined) claims['clusterId'] = opts.clusterId;
  const jwt = new SignJWT(claims)
    .setSubject(opts.subject)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + (opts.ttlSeconds ?? 3600));
  if (signing.kind === 'secret') {
    return jwt.setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(signing.secret));
  }
  const key = await importPKCS8(signing.pem, signing.algorithm);
  return jwt.setProtectedHeader({ alg: signing.algorithm, typ: 'JWT' }).sign(key);
}
