import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { IIdentity } from '../../contracts/identity.js';
import { Id, Timestamp } from '../../contracts/common.js';
import { literalUnion } from '../../contracts/literals.js';
import { DsseEnvelope } from './dsse.js';
import { AttestationKey } from './keys.js';
import { Sha256Hex } from './schemas.js';

/**
 * The API shapes of attestations (PLAN: `GET /v1/services/:serviceId/attestations`,
 * `GET /v1/attestation-keys`), shared by the routes the lead adds and the CLI that reads them.
 */

export const AttestationKind = literalUnion(['runtime-verification', 'revocation']);
export type AttestationKind = Static<typeof AttestationKind>;

export const AttestationView = Type.Object({
  id: Id,
  serviceId: Id,
  rolloutId: Id,
  generation: Type.Integer({ minimum: 1 }),
  kind: AttestationKind,
  issuedAt: Timestamp,
  keyId: Sha256Hex,
  envelope: DsseEnvelope,
  summaryEnvelope: Type.Optional(DsseEnvelope),
  revokes: Type.Optional(Id),
  digest: Type.String({
    pattern: '^[a-f0-9]{64}$',
    description: 'sha256 hex of the envelope\'s canonical JSON (RFC 8785): what the next attestation links to',
  }),
}, { additionalProperties: false });
export type AttestationView = Static<typeof AttestationView>;

export const AttestationPage = Type.Object({ attestations: Type.Array(AttestationView), nextCursor: Type.Optional(Type.String()) });
export type AttestationPage = Static<typeof AttestationPage>;

export const AttestationKeyList = Type.Object({ keys: Type.Array(AttestationKey) });
export type AttestationKeyList = Static<typeof AttestationKeyList>;

const PageSize = Type.Integer({ minimum: 1, maximum: 500, description: 'page size (default 50)' });
const PageCursor = Type.String({ minLength: 1, maxLength: 32, pattern: '^[0-9]+$', description: 'the previous page\'s nextCursor' });

/** `GET /v1/services/:serviceId/attestations` query. */
export const AttestationQuery = Type.Object({
  rolloutId: Type.Optional(Id),
  limit: Type.Optional(PageSize),
  cursor: Type.Optional(PageCursor),
}, { additionalProperties: false });
export type AttestationQuery = Static<typeof AttestationQuery>;

/** TypedRequest methods of this project over attestations: `request` (with `identity`), `payload` (without), `response`. */
const contract = <M extends string, P extends TProperties, Res extends TSchema>(method: M, properties: P, response: Res) => ({
  method,
  request: Type.Object({ identity: IIdentity, ...properties }, { additionalProperties: false }),
  payload: Type.Object(properties, { additionalProperties: false }),
  response,
});

export const AttestationAnswer = Type.Object({ attestation: AttestationView });

export const attestationTypedRequestContracts = {
  getServiceAttestations: contract('getServiceAttestations', {
    serviceId: Id, rolloutId: Type.Optional(Id), limit: Type.Optional(PageSize), cursor: Type.Optional(PageCursor),
  }, AttestationPage),
  getServiceAttestation: contract('getServiceAttestation', { serviceId: Id, attestationId: Id }, AttestationAnswer),
  getAttestationKeys: contract('getAttestationKeys', {}, AttestationKeyList),
};
