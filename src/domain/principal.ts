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

/** A permission: the roles that hold it and the words a `forbidden` answer uses ("role 'user' may not <action>"). */
export interface Permission {
  roles: readonly Role[];
  action: string;
}

/** The authorization table (DESIGN §4): every adapter, REST or TypedRequest, asks this one table. */
export const permissions = {
  readServices: { roles: can.read, action: 'read services' },
  createServices: { roles: can.administer, action: 'create services' },
  updateServices: { roles: can.administer, action: 'update services' },
  readReleases: { roles: can.read, action: 'read releases' },
  pushRegistryEvents: { roles: can.release, action: 'push registry events' },
  promote: { roles: can.release, action: 'promote releases' },
  rollBack: { roles: can.release, action: 'roll back releases' },
  readRolloutStatus: { roles: can.read, action: 'read rollout status' },
  readRolloutHistory: { roles: can.read, action: 'read rollout history' },
  readClusters: { roles: can.read, action: 'read clusters' },
  registerClusters: { roles: can.administer, action: 'register clusters' },
  reportSnapshots: { roles: can.report, action: 'report deployment snapshots' },
} as const satisfies Record<string, Permission>;
