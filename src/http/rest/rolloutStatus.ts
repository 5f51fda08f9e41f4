import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { permissions } from '../../domain/principal.js';
import { actorOf } from '../authorize.js';
import { RolloutView } from '../../domain/rolloutView.js';
import { errors } from '../../errors.js';
import { StoredDeployments, type RolloutReads } from '../../operations/readRollout.js';
import { queryAccessToken } from '../accessToken.js';
import { bearerToken, type TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { authenticated, problemResponses, ServiceParams, stored, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { serveOpening, type StatusHub } from '../sse/hub.js';
import { SseStream } from '../sse/stream.js';
import { responseExamples as answers } from '../responseExamples.js';
import { withExample } from '../examples.js';

export interface RolloutStatusRoutesOptions {
  rolloutReads: RolloutReads;
  verifier: TokenVerifier;
  /** This process's status hub (polls the database for every watched service). */
  hub: StatusHub;
}

const REVISION = '^[0-9]{1,15}$';

const EventsQuery = Type.Object({
  after: Type.Optional(Type.String({ pattern: REVISION, description: 'send the stored events after this revision first (like Last-Event-ID)' })),
}, { additionalProperties: false });

const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ pattern: REVISION, description: 'set by EventSource on reconnect; wins over `after`' })),
});

/**
 * Bearer header, or `?access_token=` (EventSource cannot send headers). The query value was
 * taken out of the URL before routing and logging (src/http/accessToken.ts); the header wins
 * when both are present.
 */
function streamToken (request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header !== undefined && header !== '') return bearerToken(header);
  const query = queryAccessToken(request.raw);
  if (query === undefined) throw errors.unauthenticated('missing Authorization header (expected "Bearer <token>") or access_token query parameter');
  if (query === null) throw errors.unauthenticated('malformed access_token query parameter (expected exactly one non-empty token)');
  return query;
}

const tags = ['rollouts'];
/**
 * One event of the stream as an EventSource parses it (`event`, `id`, `data` as text): what
 * OpenAPI 3.0 tools such as schemathesis check each event against (3.2 would call it itemSchema).
 * The JSON inside `data` is described in words: a StatusEvent for `event: status`,
 * `{ reason, revision, latest? }` for `event: reset` (src/http/sse/stream.ts).
 */
const StreamEvent = Type.Object({
  event: Type.Union([Type.Literal('status'), Type.Literal('reset')]),
  id: Type.String({ description: 'the status revision the event brings the client to (send it back as Last-Event-ID)' }),
  data: Type.String({
    description: 'JSON. `event: status`: a StatusEvent { revision, rolloutId, rolloutGeneration, status, mismatchReason?, the replica counts, at }. ' +
      '`event: reset`: { reason: events-missed | unknown-revision | up-to-date, revision, latest? } — the current state: revision, and latest, ' +
      'the current StatusEvent, absent when there is none yet',
  }),
  retry: Type.Optional(Type.Integer({ description: 'reconnection delay (ms), sent once before the first event' })),
}, { description: 'one Server-Sent Event as parsed by an EventSource' });
const streamReply = {
  description: 'text/event-stream: first at least one event (the current state), then `event: status` with a StatusEvent per change; ' +
    '`event: reset` with the current state; `: keep-alive` comments',
  content: { 'text/event-stream': { schema: StreamEvent, example: answers.statusEvent } },
};

const eventsDescription = [
  'Each change: `id: <revision>`, `event: status`, `data: <StatusEvent JSON>`, in revision order, none twice.',
  'On connect, at once and always at least one event: the stored events after `Last-Event-ID` (header) or `?after=<revision>`,',
  'else only the latest (the current state); then every new one.',
  'With nothing to replay — the service has no status event yet (never promoted), or the client resumes at the current revision —',
  'the first event is `event: reset` with `data: { reason: "up-to-date", revision, latest? }` (`id` = revision; latest, the current',
  'StatusEvent, absent when there is none): the current state, never a status event the client already has.',
  'A client that fell more than 100 changes behind (`events-missed`) or resumes from an unknown revision (`unknown-revision`) gets',
  '`event: reset` with `data: { reason, revision, latest? }` — the current state — and continues from it.',
  '`retry: 2000` before the first event; `: keep-alive` comments every 15 s.',
  'Auth: `Authorization: Bearer` or, for EventSource, `?access_token=` (never logged).',
].join(' ');

const eventsSchema = {
  tags,
  summary: 'Rollout status changes as Server-Sent Events (text/event-stream)',
  description: eventsDescription,
  params: ServiceParams,
  querystring: EventsQuery,
  headers: EventsHeaders,
  security: [{ bearer: [] }, { accessToken: [] }] as Array<Record<string, string[]>>,
  response: { ...problemResponses(authenticated, stored, withInput, ['service-not-found']), 200: streamReply },
};

/** The rollout view and the status event stream. */
export const rolloutStatusRoutes: FastifyPluginAsyncTypebox<RolloutStatusRoutesOptions> = async (app, { rolloutReads, verifier, hub }) => {
  const viewSummary = 'The current rollout: plan, status, each reporter\'s evidence, and what blocks success';
  const viewDescription = 'What a CI script polls after a promotion: the plan, the aggregate status (`succeeded`, `failed`,' +
    ' `rolled-back`, …), each reporter\'s latest accepted evidence, and the reasons that block success (missing nodes, mismatches).';
  app.get('/v1/services/:serviceId/rollout', {
    ...guardWith(verifier)(permissions.readRolloutStatus, {
      tags,
      summary: viewSummary,
      description: viewDescription,
      params: ServiceParams,
      response: replies(withExample(RolloutView, answers.rolloutView), withInput, ['service-not-found']),
    }),
    // The view is built whole by src/domain/rolloutView.ts (nothing else can be in it): JSON.stringify writes its
    // hundreds of KB for a large rollout faster than a schema-driven serializer; the schema still documents it.
    serializerCompiler: () => JSON.stringify,
  }, async (request, reply) => valueOf(await rolloutReads.readRollout(request.params.serviceId), reply, '/params'));

  const deploymentsSummary = 'The stored deployments: what each reporter\'s latest accepted report stated (for the current rollout)';
  app.get('/v1/services/:serviceId/deployments', guardWith(verifier)(permissions.readServices, {
    tags: ['reports'],
    summary: deploymentsSummary,
    description: 'Per reporter (cluster), the deployments its latest accepted snapshot report stated, as stored.',
    params: ServiceParams,
    response: replies(withExample(StoredDeployments, answers.deployments), withInput, ['service-not-found']),
  }), async (request, reply) => valueOf(await rolloutReads.readDeployments(request.params.serviceId), reply, '/params'));

  app.get('/v1/services/:serviceId/rollout/events', guardWith(verifier, streamToken)(permissions.readRolloutStatus, eventsSchema), async (request, reply) => {
    const { serviceId } = request.params;
    const resumeFrom = request.headers['last-event-id'] ?? request.query.after;
    // One read: does the service exist, and what was already stored (the catch-up).
    const snapshot = valueOf(await rolloutReads.readStatusEvents(serviceId, 0), reply, '/params');

    reply.hijack();
    const res = reply.raw;
    const stream = new SseStream(res, () => { hub.kick(serviceId); });
    stream.open({ 'x-request-id': request.id });
    // At least one event at once (the current state), whatever the client already has: src/http/sse/hub.ts planOpening.
    serveOpening(stream, resumeFrom === undefined ? undefined : Number(resumeFrom), snapshot);
    const opened = Date.now();
    request.log.info({ serviceId, resumeFrom: resumeFrom === undefined ? null : Number(resumeFrom), revision: snapshot.revision }, 'status stream opened');
    const unsubscribe = hub.subscribe(serviceId, stream);
    // A stream lives no longer than the token that opened it (EventSource then reconnects, with the token it has).
    const expiresIn = (actorOf(request).principal.expiresAt ?? Number.POSITIVE_INFINITY) - Date.now();
    const expiry = Number.isFinite(expiresIn) ? setTimeout(() => { stream.end('token-expired'); }, Math.min(Math.max(0, expiresIn), 2 ** 31 - 1)) : undefined;
    expiry?.unref();
    const closed = (): void => {
      clearTimeout(expiry);
      unsubscribe();
      request.log.info({ serviceId, eventsSent: stream.sent, durationMs: Date.now() - opened }, 'status stream closed');
    };
    // The client may have gone while the snapshot was read: then 'close' has already fired.
    if (res.destroyed || !res.socket || res.socket.destroyed) closed();
    else res.once('close', closed);
    return reply;
  });
};
