import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  Id, IImmutableRegistryPushEvent, ImageReleasePage, ImageReleasePageQuery, ImageTagHistory, ImageTagHistoryQuery, OciTag,
  ReportImmutableRegistryPushEventResponse,
} from '../../contracts/index.js';
import { permissions } from '../../domain/principal.js';
import type { Operations } from '../../operations/index.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf, authorize } from '../authorize.js';
import { valueOf } from '../replies.js';
import { ProblemResponses, ServiceParams } from '../schemas.js';

export interface ReleaseRoutesOptions {
  operations: Pick<Operations, 'releases' | 'observePushEvent'>;
  verifier: TokenVerifier;
}

const TagParams = Type.Object({ serviceId: Id, tag: OciTag }, { additionalProperties: false });

/** REST: registry push events, a service's releases (keyset pages) and the tag ledger. */
export const releaseRoutes: FastifyPluginAsyncTypebox<ReleaseRoutesOptions> = async (app, { operations, verifier }) => {
  const { releases } = operations;

  app.post('/v1/registry/push-events', {
    onRequest: authorize(verifier, permissions.pushRegistryEvents),
    schema: {
      tags: ['releases'],
      summary: 'Report an immutable registry push event (admin, api)',
      description: '201: a new observation was recorded; 200: this eventId was already recorded with the same content (nothing changed).',
      body: IImmutableRegistryPushEvent,
      response: { 200: ReportImmutableRegistryPushEventResponse, 201: ReportImmutableRegistryPushEventResponse, ...ProblemResponses },
    },
  }, async (request, reply) => {
    // A redelivered event is answered as a replay (200, `Idempotent-Replayed: true`).
    const answer = valueOf(await operations.observePushEvent(request.body, actorOf(request)), reply, '/body');
    return reply.code(answer.duplicate ? 200 : 201).send(answer);
  });

  app.get('/v1/services/:serviceId/image-releases', {
    onRequest: authorize(verifier, permissions.readReleases),
    schema: {
      tags: ['releases'],
      summary: 'A service\'s image releases, newest observation first (limit 1–500, default 50; pass nextCursor back as cursor)',
      params: ServiceParams,
      querystring: ImageReleasePageQuery,
      response: { 200: ImageReleasePage, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await releases.listReleasePage(request.params.serviceId, request.query), reply, '/querystring'));

  app.get('/v1/services/:serviceId/tags/:tag/history', {
    onRequest: authorize(verifier, permissions.readReleases),
    schema: {
      tags: ['releases'],
      summary: 'The tag ledger: which digest a tag pointed to, newest first; with `at`, only the entry current at that time',
      params: TagParams,
      querystring: ImageTagHistoryQuery,
      response: { 200: ImageTagHistory, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await releases.tagHistory(request.params.serviceId, request.params.tag, request.query), reply, '/querystring'));
};
