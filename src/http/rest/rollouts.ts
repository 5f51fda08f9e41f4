import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Id, NonNegativeSafeInteger } from '../../contracts/index.js';
import { RolloutHistoryPage, RolloutHistoryQuery } from '../../domain/history.js';
import { permissions } from '../../domain/principal.js';
import { errors } from '../../errors.js';
import type { Operations } from '../../operations/index.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf, authorize } from '../authorize.js';
import { valueOf } from '../replies.js';
import { ProblemResponses, ServiceParams, ServiceReply } from '../schemas.js';

export interface RolloutRoutesOptions {
  operations: Pick<Operations, 'promote' | 'rollBack' | 'rollouts'>;
  verifier: TokenVerifier;
}

/** Idempotency keys: 1–255 visible ASCII characters (a UUID, a CI run id, …). */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

const ReleaseParams = Type.Object({ serviceId: Id, releaseId: Id }, { additionalProperties: false });
const Reason = Type.String({ minLength: 1, maxLength: 1024, description: 'why (kept in the rollout history)' });

const PromoteBody = Type.Object({
  expectedRolloutGeneration: NonNegativeSafeInteger,
  expectedCurrentRolloutId: Type.Optional(Id),
  enableImmutableImage: Type.Literal(true),
  reason: Type.Optional(Reason),
}, { additionalProperties: false });

const RollbackBody = Type.Object({
  expectedCurrentRolloutId: Id,
  expectedRolloutGeneration: NonNegativeSafeInteger,
  reason: Type.Optional(Reason),
}, { additionalProperties: false });

/** Runs before body validation: a missing key is its own error, whatever the body. */
async function requireIdempotencyKey (request: FastifyRequest): Promise<void> {
  const key = request.headers['idempotency-key'];
  if (key === undefined || key === '') throw errors.idempotencyKeyMissing();
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    throw errors.validationFailed([{ field: '/headers/idempotency-key', message: 'must be 1–255 visible ASCII characters' }]);
  }
}

const keyOf = (request: FastifyRequest): string => request.headers['idempotency-key'] as string;

/** REST adapters for promotion, rollback and the rollout history. */
export const rolloutRoutes: FastifyPluginAsyncTypebox<RolloutRoutesOptions> = async (app, { operations, verifier }) => {
  app.post('/v1/services/:serviceId/image-releases/:releaseId/promote', {
    onRequest: authorize(verifier, permissions.promote),
    preValidation: requireIdempotencyKey,
    schema: {
      tags: ['releases'],
      summary: 'Promote a release: issue a new immutable-digest rollout (admin, api)',
      description: 'Header `Idempotency-Key` required. Compare-and-swap on `expectedRolloutGeneration` (0 before the first rollout).',
      params: ReleaseParams,
      body: PromoteBody,
      response: { 200: ServiceReply, ...ProblemResponses },
    },
  }, async (request, reply) => {
    const { enableImmutableImage: _optIn, ...body } = request.body;
    const result = await operations.promote({ ...request.params, ...body, idempotencyKey: keyOf(request) }, actorOf(request));
    return { service: valueOf(result, reply, '/body').service };
  });

  app.post('/v1/services/:serviceId/image-releases/:releaseId/rollback', {
    onRequest: authorize(verifier, permissions.rollBack),
    preValidation: requireIdempotencyKey,
    schema: {
      tags: ['releases'],
      summary: 'Roll back to a previously accepted release (admin, api)',
      description: 'Header `Idempotency-Key` required. Puts automatic promotion on hold until the next explicit promotion.',
      params: ReleaseParams,
      body: RollbackBody,
      response: { 200: ServiceReply, ...ProblemResponses },
    },
  }, async (request, reply) => {
    const result = await operations.rollBack({ ...request.params, ...request.body, idempotencyKey: keyOf(request) }, actorOf(request));
    return { service: valueOf(result, reply, '/body').service };
  });

  app.get('/v1/services/:serviceId/rollouts', {
    onRequest: authorize(verifier, permissions.readRolloutHistory),
    schema: {
      tags: ['releases'],
      summary: 'Rollout history: every plan ever issued, newest first (the audit trail)',
      params: ServiceParams,
      querystring: RolloutHistoryQuery,
      response: { 200: RolloutHistoryPage, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await operations.rollouts.readRolloutHistory(request.params.serviceId, request.query), reply, '/querystring'));
};
