/**
 * Upstream `ts/data/user.ts` `IIdentity` — not part of the 11.1.1 → 11.3.0 diff
 * (only imported by the request modules), so every field here is modeled:
 * `name`, `userId`, `type?`, `role?`, `expiresAt`, `jwt`.
 *
 * Only `jwt` matters to this service: the verified token is the identity, every
 * other field of a submitted `identity` is ignored (docs/api.md "Authentication and roles"). The role and type
 * vocabularies are the ones of docs/api.md "Authentication and roles".
 */
import { Type, type Static } from '@sinclair/typebox';
import { Id, Name, Timestamp, contractLimits, strictObject } from './common.js';
import { literalUnion } from './literals.js';

export const identityRoles = ['admin', 'user', 'api', 'cluster'] as const;
export const identityTypes = ['human', 'machine'] as const;

export const IIdentity = strictObject({
  name: Name,
  userId: Id,
  type: Type.Optional(literalUnion(identityTypes)),
  role: Type.Optional(literalUnion(identityRoles)),
  expiresAt: Timestamp,
  jwt: Type.String({ minLength: 1, maxLength: contractLimits.jwtLength }),
});
export type IIdentity = Static<typeof IIdentity>;
