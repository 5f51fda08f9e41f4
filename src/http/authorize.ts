import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Permission, Principal } from '../domain/principal.js';
import type { Actor } from '../domain/result.js';
import { assertPermitted, bearerToken, type TokenVerifier } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `authorize` hook; absent on unauthenticated routes. */
    principal?: Principal;
  }
}

export type TokenSource = (request: FastifyRequest) => string;

/** `Authorization: Bearer <token>`. */
export const headerToken: TokenSource = (request) => bearerToken(request.headers.authorization);

/**
 * An onRequest hook: verifies the token, then the permission. Runs before the body is parsed,
 * so an unauthenticated caller never gets its body read. `tokenOf` finds the token.
 */
export function authorize (verifier: TokenVerifier, permission: Permission, tokenOf: TokenSource = headerToken) {
  return async function authorizeRequest (request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = await verifier.verify(tokenOf(request));
    assertPermitted(principal, permission);
    request.principal = principal;
  };
}

/** The actor of an `authorize`d route: who asks, and its request's logger. */
export function actorOf (request: FastifyRequest): Actor {
  if (!request.principal) throw new Error('route is missing its authorize hook');
  return { principal: request.principal, log: request.log };
}
