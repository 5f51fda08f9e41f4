import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { permissions } from '../../domain/principal.js';
import { success, type Result } from '../../domain/result.js';
import type { WebhookOperations } from '../../operations/webhooks.js';
import {
  Attempt, CreateBody, EventId, Letter, LimitQuery, RotateBody, SubscriptionId, SubscriptionReply, SubscriptionView, UpdateBody, WithSecretReply,
} from '../webhookSchemas.js';
import type { TypedRequestMethod } from './methods.js';

/**
 * The webhook subscriptions over TypedRequest (admin; the same use cases as REST, docs/webhooks.md):
 * the payloads are the REST bodies plus `subscriptionId` where REST has it in the path.
 */
const define = <Req extends TSchema, Res extends TSchema>(method: Omit<TypedRequestMethod<Req, Res>, 'permission'>): TypedRequestMethod =>
  ({ ...method, permission: permissions.manageWebhooks }) as unknown as TypedRequestMethod;

const project = <T, U>(result: Result<T>, to: (value: T) => U): Result<U> => (result.ok ? success(to(result.value), result.replayed) : result);

const ById = Type.Object({ subscriptionId: SubscriptionId }, { additionalProperties: false });
const Queued = Type.Object({ queued: Type.Integer() });

export function webhookTypedRequestMethods (webhooks: WebhookOperations): TypedRequestMethod[] {
  const Update = Type.Object({ subscriptionId: SubscriptionId, ...UpdateBody.properties }, { additionalProperties: false, minProperties: 2 });
  const Rotate = Type.Object({ subscriptionId: SubscriptionId, ...RotateBody.properties }, { additionalProperties: false });
  const Limited = Type.Object({ subscriptionId: SubscriptionId, ...LimitQuery.properties }, { additionalProperties: false });
  const Redeliver = Type.Object({ subscriptionId: SubscriptionId, eventId: Type.Optional(EventId) }, { additionalProperties: false });
  return [
    define({ method: 'createWebhookSubscription', payload: CreateBody, response: WithSecretReply, run: (p) => webhooks.create(p) }),
    define({
      method: 'listWebhookSubscriptions',
      payload: Type.Object({}, { additionalProperties: false }),
      response: Type.Object({ subscriptions: Type.Array(SubscriptionView) }),
      run: async () => project(await webhooks.list(), (subscriptions) => ({ subscriptions })),
    }),
    define({
      method: 'getWebhookSubscription',
      payload: ById,
      response: SubscriptionReply,
      run: async (p: Static<typeof ById>) => project(await webhooks.get(p.subscriptionId), (subscription) => ({ subscription })),
    }),
    define({
      method: 'updateWebhookSubscription',
      payload: Update,
      response: SubscriptionReply,
      run: async ({ subscriptionId, ...patch }: Static<typeof Update>) =>
        project(await webhooks.update(subscriptionId, patch), (subscription) => ({ subscription })),
    }),
    define({
      method: 'deleteWebhookSubscription',
      payload: ById,
      response: Type.Object({ deleted: Type.Literal(true) }),
      run: (p: Static<typeof ById>) => webhooks.remove(p.subscriptionId),
    }),
    define({
      method: 'rotateWebhookSecret',
      payload: Rotate,
      response: WithSecretReply,
      run: (p: Static<typeof Rotate>) => webhooks.rotateSecret(p.subscriptionId, p.overlapSeconds),
    }),
    define({
      method: 'getWebhookDeliveries',
      payload: Limited,
      response: Type.Object({ deliveries: Type.Array(Attempt) }),
      run: async (p: Static<typeof Limited>) => project(await webhooks.deliveries(p.subscriptionId, p.limit ?? 100), (deliveries) => ({ deliveries })),
    }),
    define({
      method: 'getWebhookDeadLetters',
      payload: Limited,
      response: Type.Object({ deadLetters: Type.Array(Letter) }),
      run: async (p: Static<typeof Limited>) => project(await webhooks.deadLetters(p.subscriptionId, p.limit ?? 100), (deadLetters) => ({ deadLetters })),
    }),
    define({
      method: 'redeliverWebhookDeadLetters',
      payload: Redeliver,
      response: Queued,
      run: (p: Static<typeof Redeliver>) => webhooks.redeliver(p.subscriptionId, p.eventId),
    }),
  ];
}
