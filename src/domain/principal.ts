import { Type, type Static } from '@sinclair/typebox';

/** Who may call what (DESIGN §4). */
export const Role = Type.Union([
  Type.Literal('admin'),
  Type.Literal('user'),
  Type.Literal('api'),
  Type.Literal('cluster'),
]);
export type Role = Static<typeof Role>;

export const PrincipalType = Type.Union([Type.Literal('human'), Type.Literal('machine')]);
export type PrincipalType = Static<typeof PrincipalType>;

/** The verified caller. Built only from a verified token; never from request fields. */
export interface Principal {
  subject: string;
  role: Role;
  type: PrincipalType;
  /** Present (and required) for the `cluster` role. */
  clusterId?: string;
}

/** Role sets of DESIGN §4, named by what they allow. */
export const can = {
  read: ['admin', 'user', 'api'],
  release: ['admin', 'api'],
  administer: ['admin'],
  report: ['cluster'],
} as const satisfies Record<string, readonly Role[]>;
