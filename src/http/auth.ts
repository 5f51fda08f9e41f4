import { Value } from '@sinclair/typebox/value';
import { errors as joseErrors, importSPKI, jwtVerify, type CryptoKey, type JWTPayload, type KeyObject } from 'jose';
import type { AuthKey } from '../config.js';
import { errors } from '../errors.js';
import type { Permission, Principal } from '../domain/principal.js';
import { TokenClaims } from '../domain/tokens.js';

export interface TokenVerifier {
  /** Resolves to the verified principal or throws AppError `unauthenticated`. */
  verify(token: string): Promise<Principal>;
}

type VerifyKey = Uint8Array | CryptoKey | KeyObject;

/** Accepted tokens kept per process (the oldest is dropped first). */
const ACCEPTED_TOKENS_KEPT = 4096;

/** Bearer tokens are at most this long: a token is a few hundred bytes, anything bigger is abuse. */
const MAX_TOKEN_LENGTH = 8192;

export async function createTokenVerifier (key: AuthKey): Promise<TokenVerifier> {
  const { verifyKey, algorithm } = key.kind === 'secret'
    ? { verifyKey: new TextEncoder().encode(key.secret) as VerifyKey, algorithm: 'HS256' }
    : { verifyKey: await importSPKI(key.pem, key.algorithm) as VerifyKey, algorithm: key.algorithm };

  // Tokens this verifier accepted, until they expire: an agent sends the same token with every
  // report, and checking its signature (a WebCrypto job) every time is most of what
  // authentication costs. Only an accepted token is kept, under its exact text; its expiry is
  // checked on every use, as jose checks it (expired from `exp` on).
  const accepted = new Map<string, { principal: Principal, expiresAtMs: number }>();

  return {
    async verify (token: string): Promise<Principal> {
      if (token.length === 0) throw errors.unauthenticated('the token is empty');
      if (token.length > MAX_TOKEN_LENGTH) throw errors.unauthenticated('the token is too long');
      const known = accepted.get(token);
      if (known) {
        if (Date.now() < known.expiresAtMs) return known.principal;
        accepted.delete(token);
      }
      let payload: JWTPayload;
      try {
        // `algorithms` pins the one algorithm we accept: `alg: none`, HS/RS confusion and
        // any other algorithm are refused before the signature is even looked at.
        ({ payload } = await jwtVerify(token, verifyKey, { algorithms: [algorithm], requiredClaims: ['exp', 'sub'] }));
      } catch (err) {
        throw errors.unauthenticated(describeJoseError(err));
      }
      if (!Value.Check(TokenClaims, payload)) {
        const first = Value.Errors(TokenClaims, payload).First();
        throw errors.unauthenticated(`token claim ${first?.path.replace(/^\//, '') || '?'} is invalid: ${first?.message ?? 'invalid'}`);
      }
      if (payload.role === 'cluster' && payload.clusterId === undefined) {
        throw errors.unauthenticated('a cluster token must carry clusterId');
      }
      const principal: Principal = Object.freeze({
        subject: payload.sub,
        role: payload.role,
        type: payload.type,
        ...(payload.clusterId === undefined ? {} : { clusterId: payload.clusterId }),
        expiresAt: payload.exp * 1000,
      });
      if (accepted.size >= ACCEPTED_TOKENS_KEPT) accepted.delete(accepted.keys().next().value ?? '');
      accepted.set(token, { principal, expiresAtMs: payload.exp * 1000 });
      return principal;
    },
  };
}

function describeJoseError (err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'the token is signed with an algorithm that is not accepted';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the token signature is not valid';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `token claim ${err.claim} is invalid: ${err.reason}`;
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return 'the token is malformed';
  return 'the token could not be verified';
}

/** Reads `Authorization: Bearer <token>`; throws `unauthenticated` naming what is wrong. */
export function bearerToken (header: string | undefined): string {
  if (header === undefined || header === '') throw errors.unauthenticated('missing Authorization header (expected "Bearer <token>")');
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  if (!match?.[1]) throw errors.unauthenticated('malformed Authorization header (expected "Bearer <token>")');
  return match[1];
}

/** Throws `forbidden` unless the principal's role holds the permission. */
export function assertPermitted (principal: Principal, permission: Permission): void {
  if (!permission.roles.includes(principal.role)) {
    throw errors.forbidden(`role '${principal.role}' may not ${permission.action} (allowed: ${permission.roles.join(', ')})`);
  }
}
