import { Type } from '@sinclair/typebox';
import { SUBSCRIPTION_ID_PATTERN, WebhookEventType, WebhookHealth, WebhookServices } from '../domain/webhooks.js';
import { DEFAULT_TIMEOUT_MS } from '../operations/webhooks.js';
import { withExample } from './examples.js';

/** The schemas of webhook subscriptions, shared by REST (rest/webhooks.ts) and TypedRequest (typedRequest/webhookMethods.ts). */

export const SubscriptionId = Type.String({ pattern: SUBSCRIPTION_ID_PATTERN, maxLength: 80 });
export const Params = Type.Object({ subscriptionId: SubscriptionId }, { additionalProperties: false });
export const EventId = Type.String({ minLength: 1, maxLength: 300 });
export const EventParams = Type.Object({ subscriptionId: SubscriptionId, eventId: EventId }, { additionalProperties: false });
export const LimitQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })) }, { additionalProperties: false });

export const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'the receiver: an http or https URL (no credentials, no fragment)' });
export const Types = Type.Array(WebhookEventType, {
  maxItems: 32, uniqueItems: true, description: 'the CloudEvents types wanted; empty or absent: every type',
});
export const Timeout = Type.Integer({ minimum: 100, maximum: 60_000, description: `delivery timeout per attempt (ms; default ${DEFAULT_TIMEOUT_MS})` });
export const Description = Type.String({ maxLength: 500 });

export const CreateBody = withExample(Type.Object({
  url: Url,
  description: Type.Optional(Description),
  types: Type.Optional(Types),
  services: Type.Optional(WebhookServices),
  enabled: Type.Optional(Type.Boolean({ description: 'false: created paused' })),
  timeoutMs: Type.Optional(Timeout),
}, { additionalProperties: false }), {
  url: 'https://hooks.example.com/cloudly',
  description: 'on-call: failed rollouts of the payments services',
  types: ['dev.cloudly.release.rollout.failed', 'dev.cloudly.release.rollout.deadline-exceeded'],
  services: { namePattern: 'payments-*' },
  timeoutMs: 5000,
});

export const UpdateBody = withExample(Type.Object({
  url: Type.Optional(Url),
  description: Type.Optional(Description),
  types: Type.Optional(Types),
  services: Type.Optional(WebhookServices),
  enabled: Type.Optional(Type.Boolean({ description: 'false: paused (events wait in the log); true: resumed, from where it stopped' })),
  timeoutMs: Type.Optional(Timeout),
}, { additionalProperties: false, minProperties: 1 }), { enabled: false });

export const RotateBody = withExample(Type.Object({
  overlapSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 * 24 * 3600, description: 'how long the previous secret still signs (default 86400)' })),
}, { additionalProperties: false }), { overlapSeconds: 3600 });

export const SubscriptionView = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: Type.Optional(Type.String()),
  types: Type.Array(Type.String()),
  services: WebhookServices,
  enabled: Type.Boolean(),
  timeoutMs: Type.Integer(),
  health: WebhookHealth,
  lastError: Type.Optional(Type.String()),
  secretCount: Type.Integer({ description: 'signing secrets in use (2 during a rotation\'s overlap)' }),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
});
export const SubscriptionReply = Type.Object({ subscription: SubscriptionView });
export const WithSecretReply = Type.Object({
  subscription: SubscriptionView,
  secret: Type.String({ description: 'the signing secret (`whsec_…`, Standard Webhooks): shown this once' }),
  previousSecretValidUntil: Type.Optional(Type.String()),
});
export const Attempt = Type.Object({
  eventId: Type.String(),
  type: Type.String(),
  attempt: Type.Integer(),
  at: Type.Integer(),
  latencyMs: Type.Integer(),
  outcome: Type.String(),
  statusCode: Type.Optional(Type.Integer()),
  error: Type.Optional(Type.String()),
  excerpt: Type.Optional(Type.String()),
  redelivery: Type.Optional(Type.Boolean()),
});
export const Letter = Type.Object({
  eventId: Type.String(),
  serviceId: Type.String(),
  attempts: Type.Integer(),
  deadAt: Type.Integer(),
  lastError: Type.String(),
  state: Type.String(),
  redeliveredAt: Type.Optional(Type.Integer()),
  event: Type.Record(Type.String(), Type.Unknown()),
});
