import type { Static } from '@sinclair/typebox';
import { literalUnion } from '../contracts/literals.js';

/** Who may call what (docs/api.md "Authentication and roles"). */
export const Role = literalUnion(['admin', 'user', 'api', 'cluster']);
export type Role = Static<typeof Role>;

export const PrincipalType = literalUnion(['human', 'machine']);
export type PrincipalType = Static<typeof PrincipalType>;

/** The verified caller. Built only from a verified token; never from request fields. */
export interface Principal {
  subject: string;
  role: Role;
  type: PrincipalType;
  /** Present (and required) for the `cluster` role. */
  clusterId?: string;
  /** When the token it was read from expires (ms since the epoch): a long-lived stream ends then. */
  expiresAt?: number;
}

/** Role sets of docs/api.md "Authentication and roles", named by what they allow. */
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

/** The permissions of one role set: each action's words for a `forbidden` answer, by name. */
const grant = <K extends string>(roles: readonly Role[], actions: Record<K, string>): Record<K, Permission> =>
  Object.fromEntries(Object.entries<string>(actions).map(([name, action]) => [name, { roles, action }])) as Record<K, Permission>;

/** The authorization table (docs/api.md "Authentication and roles"): every adapter, REST or TypedRequest, asks this one table. */
export const permissions = {
  ...grant(can.read, { readServices: 'read services', readReleases: 'read releases', readClusters: 'read clusters' }),
  ...grant(can.read, { readRolloutStatus: 'read rollout status', readRolloutHistory: 'read rollout history' }),
  ...grant(can.read, { readAttestations: 'read attestations' }),
  // Public keys: any authenticated caller (an agent may verify what the server signed, too).
  ...grant([...can.read, ...can.report], { readAttestationKeys: 'read the attestation keys' }),
  ...grant(can.release, { promote: 'promote releases', rollBack: 'roll back releases', pushRegistryEvents: 'push registry events' }),
  ...grant(can.administer, { createServices: 'create services', updateServices: 'update services', registerClusters: 'register clusters' }),
  ...grant(can.administer, { manageWebhooks: 'manage webhook subscriptions', manageGovernance: 'change the global governance policy' }),
  ...grant(can.read, { readGovernance: 'read the global governance policy' }),
  // Whose approval counts is the service's promotion policy's to say (docs/governance.md "Approvals"): any role that may read may try.
  ...grant(can.read, { approvePromotions: 'approve promotion requests' }),
  ...grant(can.report, { reportSnapshots: 'report deployment snapshots' }),
};
