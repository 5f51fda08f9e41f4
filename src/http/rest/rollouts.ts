import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Id, IDEMPOTENCY_KEY_PATTERN, NonNegativeSafeInteger } from '../../contracts/index.js';
import { DeliveryMetrics, DeliveryMetricsQuery } from '../../domain/deliveryMetrics.js';
import { RolloutHistoryPage, RolloutHistoryQuery } from '../../domain/history.js';
import { permissions } from '../../domain/principal.js';
import { errors, type ErrorCode } from '../../errors.js';
import type { Operations } from '../../operations/index.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf } from '../authorize.js';
import { valueOf } from '../replies.js';
import { examples, idempotencyKeyExample, withExample } from '../examples.js';
import { ServiceParams, ServiceReply, withBody, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

export interface RolloutRoutesOptions {
  operations: Pick<Operations, 'promote' | 'rollBack' | 'abort' | 'rolloutReads'>;
  verifier: TokenVerifier;
}

/** Idempotency keys: 1–255 visible ASCII characters (a UUID, a CI run id, …), as in TypedRequest payloads. */
const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

/** Declared for the document (and checked again by the validator); `requireIdempotencyKey` answers a missing one first. */
const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.String({
    pattern: '^[\\x21-\\x7e]{1,255}$',
    description: 'one key per intended change, reused on every retry of it (e.g. a UUID): the same key with the same request replays' +
      ' the stored outcome (`Idempotent-Replayed: true`), with another request it is 422 `idempotency-key-reused`; kept at least 24 h',
    examples: [idempotencyKeyExample],
  }),
});

/** Promotion's headers: the key, and a break-glass grant that lets it pass a closed window. */
const PromoteHeaders = Type.Object({
  ...IdempotencyHeaders.properties,
  'break-glass-grant': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: '^[A-Za-z0-9_-]+$',
    description: 'an approved break-glass grant of this release (`bg_…`): passes a closed window once (docs/governance.md "Break-glass")',
  })),
});

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

const tags = ['releases'];
const keyRule = 'Header `Idempotency-Key` required (400 `idempotency-key-missing` without it).';
const promoteSummary = 'Promote a release: issue a new immutable-digest rollout (admin, api)';
const promoteDescription = `${keyRule} Compare-and-swap on \`expectedRolloutGeneration\` (0 before the first rollout).`;
const rollbackSummary = 'Roll back to a previously accepted release (admin, api)';
const rollbackDescription = `${keyRule} Puts automatic promotion on hold until the next explicit promotion.`;
const historySummary = 'Rollout history: every plan ever issued, newest first, with its outcome (the audit trail)';
const historyDescription = 'Who, when, why, which release, and how each rollout ended; cursor pages (pass `nextCursor` back as `cursor`).';
const abortSummary = 'Abort the current rollout: roll back to the last verified release (admin, api)';
const abortDescription = `${keyRule} The target is the newest release whose rollout succeeded, other than the digest deployed now` +
  ' (409 no-verified-release when there is none). Same compare-and-swap and automation hold as a rollback.';
const metricsSummary = 'Delivery metrics of a service over a window';
const metricsDescription = 'Deployment frequency, lead time, change-failure rate and time to restore over `windowDays` days ending at `to`' +
  ' (epoch milliseconds, default now), worked out from the rollout history.';
/** Every refusal a rollout write may answer besides the shared ones. */
const rolloutWriteCodes = [
  'idempotency-key-missing', 'service-not-found', 'release-not-found', 'rollout-generation-conflict', 'current-rollout-mismatch',
  'idempotency-request-in-progress', 'idempotency-key-reused', 'invalid-deployment-plan',
  // A service with a trust policy (docs/trust.md): the digest's signatures, or the registry that holds them.
  'signature-missing', 'signature-untrusted', 'signature-digest-mismatch', 'attestation-missing', 'registry-unavailable',
  // Governance (docs/governance.md): the windows, stop-the-line, the pipeline, approvals, break-glass.
  'promotion-window-closed', 'stop-the-line', 'pipeline-stage-not-satisfied', 'approval-required', 'approval-not-allowed', 'break-glass-not-available',
] as const;
const rollbackCodes = ['rollback-target-not-accepted', 'rollback-target-is-current', 'no-current-rollout'] as const;
const writeReplies = (example: unknown, ...codes: ReadonlyArray<readonly ErrorCode[]>) =>
  replies(withExample(ServiceReply, example), withInput, withBody, rolloutWriteCodes, ...codes);

/** REST adapters for promotion, rollback, abort, the rollout history and the delivery metrics. */
export const rolloutRoutes: FastifyPluginAsyncTypebox<RolloutRoutesOptions> = async (app, { operations, verifier }) => {
  const guard = guardWith(verifier);

  app.post('/v1/services/:serviceId/image-releases/:releaseId/promote', {
    ...guard(permissions.promote, {
      tags,
      summary: promoteSummary,
      description: promoteDescription,
      params: ReleaseParams,
      headers: PromoteHeaders,
      body: withExample(PromoteBody, examples.promote),
      response: writeReplies(answers.promoted),
    }),
    preValidation: requireIdempotencyKey,
  }, async (request, reply) => {
    const { enableImmutableImage: _optIn, ...body } = request.body;
    const grant = request.headers['break-glass-grant'];
    const input = { ...request.params, ...body, idempotencyKey: keyOf(request), ...(grant === undefined ? {} : { breakGlassGrantId: grant }) };
    const result = await operations.promote(input, actorOf(request));
    return { service: valueOf(result, reply, '/body').service };
  });

  app.post('/v1/services/:serviceId/image-releases/:releaseId/rollback', {
    ...guard(permissions.rollBack, {
      tags,
      summary: rollbackSummary,
      description: rollbackDescription,
      params: ReleaseParams,
      headers: IdempotencyHeaders,
      body: withExample(RollbackBody, examples.rollback),
      response: writeReplies(answers.rolledBack, rollbackCodes),
    }),
    preValidation: requireIdempotencyKey,
  }, async (request, reply) => {
    const result = await operations.rollBack({ ...request.params, ...request.body, idempotencyKey: keyOf(request) }, actorOf(request));
    return { service: valueOf(result, reply, '/body').service };
  });

  app.post('/v1/services/:serviceId/rollout/abort', {
    ...guard(permissions.rollBack, {
      tags,
      summary: abortSummary,
      description: abortDescription,
      params: ServiceParams,
      headers: IdempotencyHeaders,
      body: withExample(RollbackBody, examples.abort),
      response: writeReplies(answers.aborted, rollbackCodes, ['no-verified-release']),
    }),
    preValidation: requireIdempotencyKey,
  }, async (request, reply) => {
    const result = await operations.abort({ ...request.params, ...request.body, idempotencyKey: keyOf(request) }, actorOf(request));
    return { service: valueOf(result, reply, '/body').service };
  });

  app.get('/v1/services/:serviceId/delivery-metrics', guard(permissions.readRolloutHistory, {
    tags,
    summary: metricsSummary,
    description: metricsDescription,
    params: ServiceParams,
    querystring: DeliveryMetricsQuery,
    response: replies(withExample(DeliveryMetrics, answers.deliveryMetrics), withInput, ['service-not-found']),
  }), async ({ params, query }, reply) => valueOf(await operations.rolloutReads.readDeliveryMetrics(params.serviceId, query), reply, '/querystring'));

  app.get('/v1/services/:serviceId/rollouts', guard(permissions.readRolloutHistory, {
    tags,
    summary: historySummary,
    description: historyDescription,
    params: ServiceParams,
    querystring: RolloutHistoryQuery,
    response: replies(withExample(RolloutHistoryPage, answers.rolloutHistory), withInput, ['service-not-found']),
  }), async ({ params, query }, reply) => valueOf(await operations.rolloutReads.readRolloutHistory(params.serviceId, query), reply, '/querystring'));
};
