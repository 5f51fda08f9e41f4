import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import {
  IImageRolloutReporterStatus, IImageRolloutStatus, IImmutableImageDeploymentPlan, TImmutableImageMismatchReason, TImmutableImageRolloutStatus,
} from '../contracts/index.js';
import { can } from '../domain/principal.js';
import { rolloutView } from '../domain/rolloutView.js';
import { serviceNotFound, unauthenticated } from '../errors.js';
import type { ServiceRolloutState } from '../store/serviceStore.js';
import { bearerToken, type TokenVerifier } from './auth.js';
import { ProblemResponses } from './problemSchema.js';
import { authorize } from './restAuth.js';
import { AutomationHoldSchema, ServiceParams } from './routeSchemas.js';
import { queryAccessToken, serve, SseStream, type StatusHub } from './statusStream.js';

/** The counts of a reporter, the status and an event, as the upstream reporter status has them. */
const ReplicaCountFields = Type.Pick(IImageRolloutReporterStatus, [
  'requiredReplicaCount', 'observedReplicaCount', 'healthyReplicaCount', 'verifiedReplicaCount', 'failedReplicaCount', 'mismatchReason',
]).properties;

export interface RolloutRoutesOptions {
  verifier: TokenVerifier;
  /** The service with its status bookkeeping (ServiceStore.findRolloutState). */
  rolloutState: (serviceId: string) => Promise<ServiceRolloutState | null>;
  /** This process's status hub (polls the database for every watched service). */
  hub: StatusHub;
}

const ReplicaDetailSchema = Type.Object({
  nodeName: Type.String(),
  deploymentId: Type.String(),
  deploymentStatus: Type.String({ description: 'the deployment status Coreflow reported (running, starting, failed, …)' }),
  health: Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy'), Type.Literal('failed')]),
  verification: Type.Union([Type.Literal('verified'), Type.Literal('mismatched'), Type.Literal('missing'), Type.Literal('other-rollout')], {
    description: 'recomputed by the server from the raw evidence (the reporter\'s own claim is ignored)',
  }),
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
  counted: Type.Boolean({ description: 'counts toward the rollout (false: beyond replicasPerNode on its node, or of another rollout)' }),
});

const ReporterViewSchema = Type.Object({
  reporterId: Type.String(),
  clusterId: Type.String(),
  reporterSessionId: Type.String(),
  lastSequence: Type.Integer({ description: 'reportSequence of the latest accepted report' }),
  lastReportAt: Type.Integer({ description: 'reportedAt of the latest accepted report (ms)' }),
  observedGeneration: Type.Integer({ description: 'the rolloutGeneration that report was made for' }),
  nodeNames: Type.Array(Type.String()),
  ...ReplicaCountFields,
  replicas: Type.Array(ReplicaDetailSchema),
});

const BlockingReasonSchema = Type.Object({
  kind: Type.Union([
    Type.Literal('node-not-reported'), Type.Literal('replicas-missing'), Type.Literal('replica-unhealthy'), Type.Literal('replica-unverified'),
  ]),
  reason: TImmutableImageMismatchReason,
  nodeName: Type.Optional(Type.String()),
  deploymentId: Type.Optional(Type.String()),
  reporterId: Type.Optional(Type.String()),
  missingReplicaCount: Type.Optional(Type.Integer()),
  detail: Type.String(),
});

export const RolloutViewReply = Type.Object({
  serviceId: Type.String(),
  plan: Type.Optional(IImmutableImageDeploymentPlan),
  status: Type.Optional(IImageRolloutStatus),
  revision: Type.Integer({ description: 'the status revision: +1 on every status change; the `id` of the SSE events' }),
  reporters: Type.Array(ReporterViewSchema),
  blocking: Type.Array(BlockingReasonSchema, { description: 'why the rollout has not succeeded yet; empty once succeeded / rolled-back or without a plan' }),
  automationHold: Type.Optional(AutomationHoldSchema),
});

/** The `data` of an SSE `status` event (documentation). */
export const StatusEventSchema = Type.Object({
  revision: Type.Integer(),
  rolloutId: Type.String(),
  rolloutGeneration: Type.Integer(),
  status: TImmutableImageRolloutStatus,
  ...ReplicaCountFields,
  at: Type.Integer(),
});

const REVISION = '^[0-9]{1,15}$';

const EventsQuery = Type.Object({
  after: Type.Optional(Type.String({ pattern: REVISION, description: 'send the stored events after this revision first (like Last-Event-ID)' })),
}, { additionalProperties: false });

const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ pattern: REVISION, description: 'set by EventSource on reconnect; wins over `after`' })),
});

/**
 * Bearer header, or `?access_token=` (EventSource cannot send headers). The query value
 * was taken out of the URL before routing and logging (stripAccessToken); the header
 * wins when both are present.
 */
function streamToken (request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header !== undefined && header !== '') return bearerToken(header);
  const query = queryAccessToken(request.raw);
  if (query === undefined) throw unauthenticated('missing Authorization header (expected "Bearer <token>") or access_token query parameter');
  if (query === null) throw unauthenticated('malformed access_token query parameter (expected exactly one non-empty token)');
  return query;
}

/** The rollout view and the status event stream. */
export const rolloutRoutes: FastifyPluginAsyncTypebox<RolloutRoutesOptions> = async (app, { verifier, rolloutState, hub }) => {
  app.get('/v1/services/:serviceId/rollout', {
    onRequest: authorize(verifier, can.read, 'read rollout status'),
    schema: {
      tags: ['rollouts'],
      summary: 'The current rollout: plan, status, each reporter\'s evidence, and what blocks success',
      params: ServiceParams,
      response: { 200: RolloutViewReply, ...ProblemResponses },
    },
  }, async (request) => {
    const { serviceId } = request.params;
    const state = await rolloutState(serviceId);
    if (!state) throw serviceNotFound(serviceId);
    return rolloutView({
      serviceId,
      plan: state.service.data.imageDeployment,
      status: state.service.data.imageRolloutStatus,
      revision: state.statusRevision,
      evidence: state.rolloutEvidence,
      automationHold: state.automationHold,
    });
  });

  app.get('/v1/services/:serviceId/rollout/events', {
    onRequest: authorize(verifier, can.read, 'read rollout status', streamToken),
    schema: {
      tags: ['rollouts'],
      summary: 'Rollout status changes as Server-Sent Events (text/event-stream)',
      description: [
        'Each change: `id: <revision>`, `event: status`, `data: <StatusEvent JSON>`, in revision order, none twice.',
        'On connect: the stored events after `Last-Event-ID` (header) or `?after=<revision>`, else only the latest (the current state); then every new one.',
        'A client that fell more than 100 changes behind (or resumes from an unknown revision) gets `event: reset` with `data: { reason, revision, latest }` — the current state — and continues from it.',
        '`: keep-alive` comments every 15 s. Auth: `Authorization: Bearer` or, for EventSource, `?access_token=` (never logged).',
      ].join(' '),
      params: ServiceParams,
      querystring: EventsQuery,
      headers: EventsHeaders,
      response: {
        200: {
          description: 'text/event-stream; `data` of `status` events is a StatusEvent',
          content: { 'text/event-stream': { schema: StatusEventSchema } },
        },
        ...ProblemResponses,
      },
    },
  }, async (request, reply) => {
    const { serviceId } = request.params;
    const resumeFrom = request.headers['last-event-id'] ?? request.query.after;
    // One read: does the service exist, and what was already stored (the catch-up).
    const snapshot = await hub.source.statusEventsAfter(serviceId, 0);
    if (!snapshot) throw serviceNotFound(serviceId);

    reply.hijack();
    const res = reply.raw;
    const stream = new SseStream(res, () => { hub.kick(serviceId); });
    stream.open({ 'x-request-id': request.id });
    if (resumeFrom !== undefined) {
      stream.cursor = Number(resumeFrom);
      serve(stream, snapshot);
    } else {
      const latest = snapshot.events.at(-1);
      if (latest) stream.send([latest]);
      stream.cursor = snapshot.revision;
    }
    const opened = Date.now();
    request.log.info({ serviceId, resumeFrom: resumeFrom === undefined ? null : Number(resumeFrom), revision: snapshot.revision }, 'status stream opened');
    const unsubscribe = hub.subscribe(serviceId, stream);
    const closed = (): void => {
      unsubscribe();
      request.log.info({ serviceId, eventsSent: stream.sent, durationMs: Date.now() - opened }, 'status stream closed');
    };
    // The client may have gone while the snapshot was read: then 'close' has already fired.
    if (res.destroyed || !res.socket || res.socket.destroyed) closed();
    else res.once('close', closed);
    return reply;
  });
};
