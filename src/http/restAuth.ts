import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal, Role } from '../domain/principal.js';
import { assertRole, bearerToken, type TokenVerifier } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `authorize` hook; absent on unauthenticated routes. */
    principal?: Principal;
  }
}

/** An onRequest hook: verifies the bearer token, then the role. Runs before the body is parsed. */
export function authorize (verifier: TokenVerifier, roles: readonly Role[], action: string) {
  return async function authorizeRequest (request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = await verifier.verify(bearerToken(request.headers.authorization));
    assertRole(principal, roles, action);
    request.principal = principal;
  };
}

/** The principal an `authorize`d route runs as. */
export function principalOf (request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route is missing its authorize hook');
  return request.principal;
}
