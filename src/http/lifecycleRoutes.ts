import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  Id, IImmutableImageTargetScope, NonNegativeSafeInteger, TImmutableImageRolloutMode, TSha256Digest,
} from '../contracts/index.js';
import { AppError } from '../errors.js';
import type { TokenVerifier } from './auth.js';
import type { Operations } from './operations.js';
import type { OperationContext } from './operation.js';
import { ProblemResponses } from './problemSchema.js';
import { authorize, operationContext } from './restAuth.js';
import { ServiceParams, ServiceReply } from './routeSchemas.js';
import type { RolloutHistoryPage } from '../domain/history.js';

export interface LifecycleRoutesOptions {
  operations: Operations;
  verifier: TokenVerifier;
  rolloutHistory: (serviceId: string, limit: number, cursor?: string) => Promise<RolloutHistoryPage>;
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

export const RolloutHistoryEntry = Type.Object({
  rolloutId: Type.String(),
  generation: Type.Integer(),
  mode: TImmutableImageRolloutMode,
  releaseId: Type.String(),
  requestedDigest: TSha256Digest,
  digestPinnedImageReference: Type.String(),
  rollbackOfRolloutId: Type.Optional(Type.String()),
  previous: Type.Optional(Type.Object({ rolloutId: Type.String(), releaseId: Type.String(), requestedDigest: TSha256Digest })),
  targetScope: IImmutableImageTargetScope,
  issuedBy: Type.Object({ subject: Type.String(), role: Type.String(), type: Type.String() }),
  reason: Type.String(),
  automationHold: Type.Union([Type.Literal('set'), Type.Literal('cleared'), Type.Literal('unchanged')], {
    description: 'set: this rollback put automatic promotion on hold; cleared: this promotion lifted the hold',
  }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('applied')]),
  idempotencyKeyHash: Type.String({ description: 'hex sha256 of `<serviceId>\\u0000<Idempotency-Key>` of the request that issued it' }),
  createdAt: Type.Integer(),
});
export type RolloutHistoryEntry = Static<typeof RolloutHistoryEntry>;

const HistoryQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9]+$' })),
}, { additionalProperties: false });

/** REST adapters for promotion, rollback and the rollout history. */
export const lifecycleRoutes: FastifyPluginAsyncTypebox<LifecycleRoutesOptions> = async (app, { operations, verifier, rolloutHistory }) => {
  const ctx = (request: FastifyRequest, reply: FastifyReply, reason?: string): OperationContext => ({
    ...operationContext(request),
    setHeader: (name, value) => { reply.header(name, value); },
    ...(reason ? { reason } : {}),
  });

  /** Runs before body validation: a missing key is its own error, whatever the body. */
  const requireIdempotencyKey = async (request: FastifyRequest): Promise<void> => {
    const key = request.headers['idempotency-key'];
    if (key === undefined || key === '') {
      throw new AppError('idempotency-key-missing', 'promotion and rollback need an Idempotency-Key header (e.g. a UUID, reused on every retry)');
    }
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      throw new AppError('validation-failed', 'Idempotency-Key must be 1–255 visible ASCII characters', {
        details: { problems: [{ field: '/headers/idempotency-key', message: 'must be 1–255 visible ASCII characters' }] },
      });
    }
  };
  const keyOf = (request: FastifyRequest): string => request.headers['idempotency-key'] as string;

  app.post('/v1/services/:serviceId/image-releases/:releaseId/promote', {
    onRequest: authorize(verifier, operations.promoteServiceImageRelease.roles, operations.promoteServiceImageRelease.action),
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
    const { serviceId, releaseId } = request.params;
    const { reason, ...body } = request.body;
    return operations.promoteServiceImageRelease.handle(
      { serviceId, releaseId, idempotencyKey: keyOf(request), ...body },
      ctx(request, reply, reason)
    );
  });

  app.post('/v1/services/:serviceId/image-releases/:releaseId/rollback', {
    onRequest: authorize(verifier, operations.rollbackServiceImageRelease.roles, operations.rollbackServiceImageRelease.action),
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
    const { serviceId, releaseId } = request.params;
    const { reason, ...body } = request.body;
    return operations.rollbackServiceImageRelease.handle(
      { serviceId, releaseId, idempotencyKey: keyOf(request), ...body },
      ctx(request, reply, reason)
    );
  });

  app.get('/v1/services/:serviceId/rollouts', {
    onRequest: authorize(verifier, operations.getServiceById.roles, 'read rollout history'),
    schema: {
      tags: ['releases'],
      summary: 'Rollout history: every plan ever issued, newest first (the audit trail)',
      params: ServiceParams,
      querystring: HistoryQuery,
      response: {
        200: Type.Object({ rollouts: Type.Array(RolloutHistoryEntry), nextCursor: Type.Optional(Type.String()) }),
        ...ProblemResponses,
      },
    },
  }, async (request) => rolloutHistory(request.params.serviceId, request.query.limit ?? 50, request.query.cursor));
};
