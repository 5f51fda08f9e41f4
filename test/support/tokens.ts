import type { Role } from '../../src/domain/principal.js';
import { mintToken, type MintOptions } from '../../src/domain/tokens.js';

/** Mints a valid token for a role; cluster tokens are for cluster `c1` unless `extra` says otherwise. */
export type TokenMinter = (role: Role, extra?: Partial<MintOptions>) => Promise<string>;

/** The `token(role)` of a test app or a fleet: HS256 with the shared secret, subject `<prefix>-<role>`. */
export function tokenMinter (secret: string, subjectPrefix: string): TokenMinter {
  return async (role, extra = {}) => await mintToken({ kind: 'secret', secret }, {
    subject: `${subjectPrefix}-${role}`,
    role,
    ...(role === 'cluster' ? { clusterId: 'c1' } : {}),
    ...extra,
  });
}
