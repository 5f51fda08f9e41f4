import { Type, type Static } from '@sinclair/typebox';
import { literalUnion } from '../contracts/literals.js';
import { domainEventTypes, type DomainEventType, type LoggedEvent } from './events.js';

/**
 * Webhooks (docs/webhooks.md): subscriptions to the domain-event log (src/domain/events.ts), each
 * delivered as CloudEvents 1.0 (structured JSON) signed per Standard Webhooks. The rules here are pure:
 * which events a subscription wants, how a logged event reads as a CloudEvent, the retry schedule and
 * what an answer of the receiver means. Delivery is src/operations/webhookDelivery.ts; the sender, with
 * its address rules, is src/outbound/webhooks/.
 */

/** The CloudEvents `type` namespace: `dev.cloudly.release.<domain event type>` (e.g. `dev.cloudly.release.rollout.issued`). */
export const CLOUD_EVENT_TYPE_PREFIX = 'dev.cloudly.release.';

/** Every CloudEvents type a subscription may name. */
export const webhookEventTypes = domainEventTypes.map((t) => `${CLOUD_EVENT_TYPE_PREFIX}${t}`) as
  Array<`${typeof CLOUD_EVENT_TYPE_PREFIX}${DomainEventType}`>;
export const WebhookEventType = literalUnion(webhookEventTypes as unknown as readonly [string, string, ...string[]]);

/** The CDEvents type an event maps to, where one fits (documented in docs/webhooks.md). */
export const cdEventTypes: Partial<Record<DomainEventType, string>> = {
  'rollout.issued': 'dev.cdevents.service.deployed.0.2.0',
  'rollout.succeeded': 'dev.cdevents.service.published.0.2.0',
  'rollout.failed': 'dev.cdevents.incident.detected.0.2.0',
  'rollout.deadline-exceeded': 'dev.cdevents.incident.detected.0.2.0',
};

export const SUBSCRIPTION_ID_PATTERN = '^whsub_[A-Za-z0-9_-]{8,64}$';

/** Which services a subscription covers: every one, a list of ids, or a name pattern (`*` matches any run of characters). */
export const WebhookServices = Type.Union([
  Type.Object({ all: Type.Literal(true) }, { additionalProperties: false }),
  Type.Object({ ids: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { minItems: 1, maxItems: 1000, uniqueItems: true }) },
    { additionalProperties: false }),
  Type.Object({ namePattern: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9*._-]+$' }) }, { additionalProperties: false }),
], { description: '`{ all: true }`, `{ ids: [...] }` or `{ namePattern: "payments-*" }`' });
export type WebhookServices = Static<typeof WebhookServices>;

/**
 * How the subscription's delivery goes: `healthy`; `failing` (an event went to the dead letters, or the
 * subscription fell behind the log's retention; back to healthy on the next delivery); `gone` (the
 * receiver answered 410: the subscription was disabled).
 */
export const WebhookHealth = literalUnion(['healthy', 'failing', 'gone']);
export type WebhookHealth = Static<typeof WebhookHealth>;

/** A signing secret: the newest signs alone once the older ones' overlap ended. */
export interface SigningSecret {
  secret: string;
  createdAt: number;
  /** When a rotated-out secret stops signing (absent: the current one). */
  expiresAt?: number;
}

export interface Subscription {
  id: string;
  url: string;
  description?: string;
  /** CloudEvents types wanted; empty: every type. */
  types: string[];
  services: WebhookServices;
  enabled: boolean;
  timeoutMs: number;
  health: WebhookHealth;
  lastError?: string;
  secrets: SigningSecret[];
  createdAt: number;
  updatedAt: number;
}

/** What an API answer shows of a subscription: never its secrets. */
export type SubscriptionView = Omit<Subscription, 'secrets'> & { secretCount: number };

export const viewOf = ({ secrets, ...rest }: Subscription, now: number): SubscriptionView =>
  ({ ...rest, secretCount: activeSecrets(secrets, now).length });

/** The secrets that sign now: the current one and those still in their overlap. */
export const activeSecrets = (secrets: readonly SigningSecret[], now: number): SigningSecret[] =>
  secrets.filter((s) => s.expiresAt === undefined || s.expiresAt > now);

/** A name pattern as a regular expression: `*` is any run, everything else literal. */
const patternRegExp = (pattern: string): RegExp =>
  new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\-]/g, '\\$&')).join('.*')}$`);

export function coversService (services: WebhookServices, service: { id: string, name?: string | undefined }): boolean {
  if ('all' in services) return true;
  if ('ids' in services) return services.ids.includes(service.id);
  return service.name !== undefined && patternRegExp(services.namePattern).test(service.name);
}

export const cloudEventType = (type: DomainEventType): string => `${CLOUD_EVENT_TYPE_PREFIX}${type}`;

export const wantsType = (sub: Pick<Subscription, 'types'>, type: DomainEventType): boolean =>
  sub.types.length === 0 || sub.types.includes(cloudEventType(type));

/** A CloudEvents 1.0 event in structured mode, as its JSON members. */
export interface CloudEventJson extends Record<string, unknown> {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  data: Record<string, unknown>;
}

const stringOr = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const numberOr = (value: unknown): number | null => (typeof value === 'number' ? value : null);

/**
 * A logged event as a CloudEvent: `id` = the log's id (`<serviceId>:<seq>`, stable, also the
 * `webhook-id`), `subject` = the service id, `data` = the facts every consumer needs without a second
 * request (service, release, digest, generation, status, reason, who), then the event's own data.
 */
export function cloudEventOf (event: LoggedEvent, source: string): CloudEventJson {
  const d = event.data;
  const by = d['by'];
  return {
    specversion: '1.0',
    id: event.id,
    source,
    type: cloudEventType(event.type),
    subject: event.serviceId,
    time: new Date(event.time).toISOString(),
    datacontenttype: 'application/json',
    data: {
      service: { id: event.serviceId, name: stringOr(d['serviceName']) },
      seq: event.seq,
      releaseId: stringOr(d['releaseId']),
      digest: stringOr(d['digest']),
      generation: numberOr(d['generation']),
      status: stringOr(d['status']),
      reason: stringOr(d['reason']),
      who: typeof by === 'object' && by !== null ? by : typeof by === 'string' ? { subject: by } : null,
      cdevent: cdEventTypes[event.type] ?? null,
      details: d,
    },
  };
}

/** The event that tells a subscription it fell behind the log's retention (its events `fromSeq`..`toSeq` are gone). */
export function eventsMissedEvent (
  serviceId: string, serviceName: string | undefined, fromSeq: number, toSeq: number, source: string, now: number,
): CloudEventJson {
  return {
    specversion: '1.0',
    id: `${serviceId}:missed:${fromSeq}-${toSeq}`,
    source,
    type: `${CLOUD_EVENT_TYPE_PREFIX}events-missed`,
    subject: serviceId,
    time: new Date(now).toISOString(),
    datacontenttype: 'application/json',
    data: { service: { id: serviceId, name: serviceName ?? null }, fromSeq, toSeq, reason: 'the events are past the log\'s retention (EVENTS_RETENTION_DAYS)' },
  };
}

/** The retry rules: attempts and age before an event becomes a dead letter, and the backoff. */
export interface RetryPolicy {
  maxAttempts: number;
  maxAgeMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * The delay before attempt `attempt + 1` (`attempt` ≥ 1 failed so far): exponential from `baseDelayMs`,
 * capped at `maxDelayMs`, with full jitter over its upper half (`random` in [0, 1)); a `Retry-After`
 * the receiver gave wins when it is longer (still capped).
 */
export function retryDelayMs (policy: RetryPolicy, attempt: number, random: number, retryAfterMs?: number): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.round(exponential / 2 + (exponential / 2) * random);
  return Math.min(policy.maxDelayMs, Math.max(jittered, retryAfterMs ?? 0));
}

/** `Retry-After` as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMsOf (header: string | undefined, now: number): number | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** What one attempt's outcome means: delivered; retry later; give up on the event (dead letter); the subscription is gone (410). */
export type AttemptVerdict = 'delivered' | 'retry' | 'dead' | 'gone';

/** An attempt's outcome: the receiver's status, or no answer (network error, timeout, refused address). */
export type AttemptOutcome =
  | { kind: 'answer', status: number, retryAfterMs?: number | undefined }
  | { kind: 'failure', reason: 'unreachable' | 'timeout' | 'not-allowed' | 'too-large' };

export function verdictOf (outcome: AttemptOutcome): AttemptVerdict {
  if (outcome.kind === 'failure') return outcome.reason === 'not-allowed' ? 'dead' : 'retry';
  const { status } = outcome;
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'gone';
  if (status === 429 || status === 408 || status >= 500) return 'retry';
  return 'dead';
}

/** Whether an event that failed `attempts` times since `firstAttemptAt` may be tried again. */
export const mayRetry = (policy: RetryPolicy, attempts: number, firstAttemptAt: number, now: number): boolean =>
  attempts < policy.maxAttempts && now - firstAttemptAt < policy.maxAgeMs;
