import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { permissions } from '../../domain/principal.js';
import type { WebhookOperations } from '../../operations/webhooks.js';
import type { TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { withBody, withInput } from '../schemas.js';
import {
  Attempt, CreateBody, EventParams, Letter, LimitQuery, Params, RotateBody, SubscriptionReply, SubscriptionView, UpdateBody, WithSecretReply,
} from '../webhookSchemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';
import { withExample } from '../examples.js';

export interface WebhookRoutesOptions {
  webhooks: WebhookOperations;
  verifier: TokenVerifier;
}

const tags = ['webhooks'];
const notFound = ['webhook-subscription-not-found'] as const;
const base = '/v1/webhooks/subscriptions';

const one = `${base}/:subscriptionId`;
const admin = permissions.manageWebhooks;

/** REST: webhook subscriptions (admin), their delivery log and dead letters (docs/webhooks.md). */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, options) => {
  await app.register(subscriptionRoutes, options);
  await app.register(deliveryRoutes, options);
};

/** Create, list, read, update, delete, rotate. */
const subscriptionRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, { webhooks, verifier }) => {
  const guard = guardWith(verifier);

  app.post(base, guard(admin, {
    tags,
    summary: 'Subscribe a receiver to events (admin)',
    description: 'Answers the signing secret once. A URL whose host resolves to a loopback, link-local or private address is 422' +
      ' `webhook-target-not-allowed` unless WEBHOOK_ALLOWED_HOSTS names it.',
    body: CreateBody,
    response: {
      ...replies(withExample(WithSecretReply, answers.webhookCreated), withBody, ['webhook-target-not-allowed']),
      201: withExample(WithSecretReply, answers.webhookCreated)
    },
  }), async (request, reply) => {
    const created = valueOf(await webhooks.create(request.body), reply, '/body');
    return reply.code(201).header('location', `${base}/${created.subscription.id}`).send(created);
  });

  const ListReply = Type.Object({ subscriptions: Type.Array(SubscriptionView) });
  const listDescription = 'Every subscription with its health (`healthy`, `failing`, `gone`) and last error; never a secret.';
  app.get(base, guard(admin, {
    tags,
    summary: 'List webhook subscriptions (admin)',
    description: listDescription,
    response: replies(withExample(ListReply, answers.webhookList))
  }),
  async (_request, reply) => ({ subscriptions: valueOf(await webhooks.list(), reply, '') }));

  const read = {
    tags,
    summary: 'Read a webhook subscription (admin)',
    description: 'Its settings and health; never its secret.',
    params: Params,
    response: replies(withExample(SubscriptionReply, answers.webhook), withInput, notFound),
  };
  app.get(one, guard(admin, read),
    async (request, reply) => ({ subscription: valueOf(await webhooks.get(request.params.subscriptionId), reply, '/params') }));

  app.patch(one, guard(admin, {
    tags,
    summary: 'Update, pause or resume a webhook subscription (admin)',
    description: '`enabled: false` pauses delivery (events wait in the log); `enabled: true` resumes from where it stopped, healthy again.',
    params: Params,
    body: UpdateBody,
    response: replies(withExample(SubscriptionReply, answers.webhookUpdated), withBody, notFound, ['webhook-target-not-allowed']),
  }), async (request, reply) => ({ subscription: valueOf(await webhooks.update(request.params.subscriptionId, request.body), reply, '/body') }));

  const Deleted = Type.Object({ deleted: Type.Literal(true) });
  const remove = {
    tags,
    summary: 'Delete a webhook subscription (admin)',
    description: 'With its cursors, delivery log and dead letters.',
    params: Params,
    response: replies(withExample(Deleted, answers.webhookDeleted), withInput, notFound),
  };
  app.delete(one, guard(admin, remove),
    async (request, reply) => valueOf(await webhooks.remove(request.params.subscriptionId), reply, '/params'));

  app.post(`${one}/rotate-secret`, guard(admin, {
    tags,
    summary: 'Rotate the signing secret (admin)',
    description: 'The new secret is answered once; the previous one keeps signing beside it for `overlapSeconds`.',
    params: Params,
    body: RotateBody,
    response: replies(withExample(WithSecretReply, answers.webhookSecretRotated), withBody, notFound),
  }), async (request, reply) => valueOf(await webhooks.rotateSecret(request.params.subscriptionId, request.body?.overlapSeconds), reply, '/body'));
};

/** The delivery log and the dead letters. */
const deliveryRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, { webhooks, verifier }) => {
  const guard = guardWith(verifier);
  const Deliveries = Type.Object({ deliveries: Type.Array(Attempt) });
  app.get(`${one}/deliveries`, guard(admin, {
    tags,
    summary: 'The delivery log, newest first (admin)',
    description: 'One entry per attempt: event id, attempt number, status code or error, latency, a bounded excerpt of the answer.',
    params: Params,
    querystring: LimitQuery,
    response: replies(withExample(Deliveries, answers.webhookDeliveries), withInput, notFound),
  }), async ({ params, query }, reply) => ({ deliveries: valueOf(await webhooks.deliveries(params.subscriptionId, query.limit ?? 100), reply, '/params') }));

  const Letters = Type.Object({ deadLetters: Type.Array(Letter) });
  app.get(`${one}/dead-letters`, guard(admin, {
    tags,
    summary: 'Dead letters, oldest first (admin)',
    description: 'Events given up after their attempts (or refused by the receiver with a 4xx), with the CloudEvent as sent.',
    params: Params,
    querystring: LimitQuery,
    response: replies(withExample(Letters, answers.webhookDeadLetters), withInput, notFound),
  }), async ({ params, query }, reply) => ({ deadLetters: valueOf(await webhooks.deadLetters(params.subscriptionId, query.limit ?? 100), reply, '/params') }));

  const Queued = Type.Object({ queued: Type.Integer() });
  app.post(`${one}/dead-letters/redeliver`, guard(admin, {
    tags,
    summary: 'Redeliver every dead letter (admin)',
    description: 'Queues every dead letter: the process delivering the subscription sends each once more, with its original webhook-id.',
    params: Params,
    response: replies(withExample(Queued, answers.redeliveredAll), withInput, notFound),
  }), async (request, reply) => valueOf(await webhooks.redeliver(request.params.subscriptionId), reply, '/params'));

  app.post(`${one}/dead-letters/:eventId/redeliver`, guard(admin, {
    tags,
    summary: 'Redeliver one dead letter (admin)',
    description: 'Queues one dead letter (by event id): sent once more, with its original webhook-id.',
    params: EventParams,
    response: replies(withExample(Queued, answers.redelivered), withInput, notFound, ['dead-letter-not-found']),
  }), async ({ params }, reply) => valueOf(await webhooks.redeliver(params.subscriptionId, params.eventId), reply, '/params'));
};
