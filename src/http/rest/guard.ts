import type { FastifySchema } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import type { Permission } from '../../domain/principal.js';
import type { TokenVerifier } from '../auth.js';
import { authorize, headerToken, type TokenSource } from '../authorize.js';
import type { ErrorCode } from '../../errors.js';
import { authenticated, problemResponses, stored } from '../schemas.js';

/**
 * Route options of an authenticated endpoint: the permission it needs (checked before the body is
 * read) and its schema. Every route module makes one `guard` for its verifier, so authorization is
 * declared once per route group and each endpoint names only what differs.
 */
export const guardWith = (verifier: TokenVerifier, tokenOf: TokenSource = headerToken) =>
  <S extends FastifySchema>(permission: Permission, schema: S) => ({ onRequest: authorize(verifier, permission, tokenOf), schema });

/**
 * The responses of an authenticated endpoint: its success answer and its problem documents — those of
 * every such route (401, 403, 500, 503) and the groups and codes given (`withInput`, `withBody`, its own).
 */
export const replies = <T extends TSchema>(ok: T, ...codes: ReadonlyArray<readonly ErrorCode[]>) =>
  ({ 200: ok, ...problemResponses(authenticated, stored, ...codes) });
