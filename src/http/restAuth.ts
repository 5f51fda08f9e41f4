import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal, Role } from '../domain/principal.js';
import { assertRole, bearerToken, type TokenVerifier } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `authorize` hook; absent on unauthenticated routes. */
    principal?: Principal;
  }
}

/**
 * An onRequest hook: verifies the token, then the role. Runs before the body is parsed.
 * `tokenOf` finds the token (default: the `Authorization: Bearer` header).
 */
export function authorize (
  verifier: TokenVerifier, roles: readonly Role[], action: string,
  tokenOf: (request: FastifyRequest) => string = (request) => bearerToken(request.headers.authorization)
) {
  return async function authorizeRequest (request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = await verifier.verify(tokenOf(request));
    assertRole(principal, roles, action);
    request.principal = principal;
  };
}

/** The operation context of an `authorize`d route: who asks, its logger and request id. */
export const operationContext = (request: FastifyRequest) => ({ principal: principalOf(request), log: request.log, requestId: request.id });

/** The principal an `authorize`d route runs as. */
export function principalOf (request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route is missing its authorize hook');
  return request.principal;
}
