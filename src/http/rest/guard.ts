import type { FastifySchema } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import type { Permission } from '../../domain/principal.js';
import type { TokenVerifier } from '../auth.js';
import { authorize, headerToken, type TokenSource } from '../authorize.js';
import { ProblemResponses } from '../schemas.js';

/**
 * Route options of an authenticated endpoint: the permission it needs (checked before the body is
 * read) and its schema. Every route module makes one `guard` for its verifier, so authorization is
 * declared once per route group and each endpoint names only what differs.
 */
export const guardWith = (verifier: TokenVerifier, tokenOf: TokenSource = headerToken) =>
  <S extends FastifySchema>(permission: Permission, schema: S) => ({ onRequest: authorize(verifier, permission, tokenOf), schema });

/** The responses of an endpoint: its success answer and the problem documents. */
export const replies = <T extends TSchema>(ok: T) => ({ 200: ok, ...ProblemResponses });
