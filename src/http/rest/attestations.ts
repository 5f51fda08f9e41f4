import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Id } from '../../contracts/index.js';
import { AttestationAnswer, AttestationKeyList, AttestationPage, AttestationQuery } from '../../domain/attestation/index.js';
import { permissions } from '../../domain/principal.js';
import type { AttestationIssuer } from '../../operations/attestations.js';
import type { TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { ServiceParams, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';
import { withExample } from '../examples.js';

export interface AttestationRoutesOptions {
  attestations: Pick<AttestationIssuer, 'list' | 'get' | 'keys'>;
  verifier: TokenVerifier;
}

const tags = ['attestations'];
const AttestationParams = Type.Object({ serviceId: Id, attestationId: Id }, { additionalProperties: false });
const listDescription = 'Runtime verifications and revocations of the service in chain order (oldest first, as `cloudly-release attestation verify --chain`' +
  ' reads them); `rolloutId` narrows to one rollout. Keyset pages: `limit` 1–500 (default 50); pass `nextCursor` back as `cursor`. docs/attestations.md';

/** REST: a service's attestations (docs/attestations.md), one attestation, and the public keys they verify with. */
export const attestationRoutes: FastifyPluginAsyncTypebox<AttestationRoutesOptions> = async (app, { attestations, verifier }) => {
  const guard = guardWith(verifier);

  app.get('/v1/services/:serviceId/attestations', guard(permissions.readAttestations, {
    tags,
    summary: 'A service\'s signed attestations',
    description: listDescription,
    params: ServiceParams,
    querystring: AttestationQuery,
    response: replies(withExample(AttestationPage, answers.attestationPage), withInput, ['service-not-found']),
  }), async ({ params, query }, reply) => valueOf(await attestations.list(params.serviceId, query), reply, '/querystring'));

  app.get('/v1/services/:serviceId/attestations/:attestationId', guard(permissions.readAttestations, {
    tags,
    summary: 'One attestation',
    description: 'As listed (an AttestationView: the DSSE envelope, its SVR for a runtime verification, its key and digest).' +
      ' `attestation-not-found` when the service has no attestation of this id.',
    params: AttestationParams,
    response: replies(withExample(AttestationAnswer, answers.attestation), withInput, ['service-not-found', 'attestation-not-found']),
  }), async ({ params }, reply) => valueOf(await attestations.get(params.serviceId, params.attestationId), reply, '/params'));

  app.get('/v1/attestation-keys', guard(permissions.readAttestationKeys, {
    tags,
    summary: 'The public keys attestations are signed with',
    description: 'The active key first, then retired keys (still listed so that what they signed verifies). Empty when the server has no signing key.',
    response: replies(withExample(AttestationKeyList, answers.attestationKeys)),
  }), async () => attestations.keys());
};
