import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  Id, IImmutableRegistryPushEvent, ImageReleasePage, ImageReleasePageQuery, ImageTagHistory, ImageTagHistoryQuery, OciTag,
  ReportImmutableRegistryPushEventResponse,
} from '../contracts/index.js';
import { assertPushEventConsistent, assertTagHistoryQuery, decodeCursor } from '../domain/releases.js';
import type { TokenVerifier } from './auth.js';
import type { Operations } from './operations.js';
import { ProblemResponses } from './problemSchema.js';
import { authorize, operationContext } from './restAuth.js';
import { ServiceParams } from './routeSchemas.js';

export interface ReleaseRoutesOptions {
  operations: Operations;
  verifier: TokenVerifier;
}

const TagParams = Type.Object({ serviceId: Id, tag: OciTag }, { additionalProperties: false });

/**
 * REST: registry push events, a service's releases (keyset pages) and the tag ledger.
 * The preHandlers run the checks a schema cannot express with REST field names
 * (`/body/...`, `/querystring/...`) after schema validation; the operations repeat
 * them with TypedRequest names, so both dialects refuse the same input the same way.
 */
export const releaseRoutes: FastifyPluginAsyncTypebox<ReleaseRoutesOptions> = async (app, { operations, verifier }) => {
  const ctx = operationContext;
  const op = operations;

  app.post('/v1/registry/push-events', {
    onRequest: authorize(verifier, op.reportImmutableRegistryPushEvent.roles, op.reportImmutableRegistryPushEvent.action),
    preHandler: async (request) => assertPushEventConsistent(request.body, '/body'),
    schema: {
      tags: ['releases'],
      summary: 'Report an immutable registry push event (admin, api)',
      description: '201: a new observation was recorded; 200: this eventId was already recorded with the same content (nothing changed).',
      body: IImmutableRegistryPushEvent,
      response: { 200: ReportImmutableRegistryPushEventResponse, 201: ReportImmutableRegistryPushEventResponse, ...ProblemResponses },
    },
  }, async (request, reply) => {
    const result = await op.reportImmutableRegistryPushEvent.handle({ event: request.body }, ctx(request));
    return reply.code(result.duplicate ? 200 : 201).send(result);
  });

  app.get('/v1/services/:serviceId/image-releases', {
    onRequest: authorize(verifier, op.getServiceImageReleasesPage.roles, op.getServiceImageReleasesPage.action),
    preHandler: async (request) => {
      if (request.query.cursor !== undefined) decodeCursor(request.query.cursor, '/querystring/cursor');
    },
    schema: {
      tags: ['releases'],
      summary: 'A service\'s image releases, newest observation first (limit 1–500, default 50; pass nextCursor back as cursor)',
      params: ServiceParams,
      querystring: ImageReleasePageQuery,
      response: { 200: ImageReleasePage, ...ProblemResponses },
    },
  }, async (request) => op.getServiceImageReleasesPage.handle({ serviceId: request.params.serviceId, ...request.query }, ctx(request)));

  app.get('/v1/services/:serviceId/tags/:tag/history', {
    onRequest: authorize(verifier, op.getServiceImageTagHistory.roles, op.getServiceImageTagHistory.action),
    preHandler: async (request) => assertTagHistoryQuery(request.query, '/querystring'),
    schema: {
      tags: ['releases'],
      summary: 'The tag ledger: which digest a tag pointed to, newest first; with `at`, only the entry current at that time',
      params: TagParams,
      querystring: ImageTagHistoryQuery,
      response: { 200: ImageTagHistory, ...ProblemResponses },
    },
  }, async (request) => op.getServiceImageTagHistory.handle({ ...request.params, ...request.query }, ctx(request)));
};
