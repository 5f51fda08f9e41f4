import { randomBytes } from 'node:crypto';
import type { Clock, DeadLetter, DeliveryAttempt, Repositories, SubscriptionPatch, WebhookTargets } from '../domain/ports/index.js';
import { invalid, refusal, success, type Result } from '../domain/result.js';
import { activeSecrets, coversService, viewOf, type Subscription, type SubscriptionView, type WebhookServices } from '../domain/webhooks.js';
import { errors } from '../errors.js';

/**
 * Webhook subscriptions (admin; docs/webhooks.md): create, read, list, update (pause/resume), delete,
 * rotate the signing secret, and read the delivery log and the dead letters (and queue them for
 * redelivery). The signing secret is generated here and shown once: in the answer of the create and of
 * each rotation; reads never show it.
 */

export interface WebhookDeps {
  repos: Pick<Repositories, 'webhooks'>;
  targets: WebhookTargets;
  now: Clock;
}

export interface SubscriptionInput {
  url: string;
  description?: string | undefined;
  types?: string[] | undefined;
  services?: WebhookServices | undefined;
  enabled?: boolean | undefined;
  timeoutMs?: number | undefined;
}

/** A subscription as created or rotated: its view and the secret, shown this once. */
export interface WithSecret {
  subscription: SubscriptionView;
  secret: string;
  /** After a rotation: until when the previous secret still signs. */
  previousSecretValidUntil?: string;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_OVERLAP_SECONDS = 24 * 60 * 60;

/** The URL's problems as a refusal naming `/url`, else what the address policy says of its host; undefined: it may be used. */
async function urlRefusal (deps: WebhookDeps, raw: string): Promise<Result<never> | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return invalid([{ field: '/url', message: 'must be an absolute http or https URL' }]);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return invalid([{ field: '/url', message: 'must be an http or https URL' }]);
  if (url.username !== '' || url.password !== '') return invalid([{ field: '/url', message: 'must not carry credentials (the body is signed instead)' }]);
  if (url.hash !== '') return invalid([{ field: '/url', message: 'must not have a fragment' }]);
  const refused = await deps.targets.check(url);
  return refused === undefined ? undefined : refusal(errors.webhookTargetNotAllowed('/url', refused));
}

/** A new subscription, delivered from now on, and its secret. */
async function create (deps: WebhookDeps, input: SubscriptionInput): Promise<Result<WithSecret>> {
  const { repos, targets, now } = deps;
  const refused = await urlRefusal(deps, input.url);
  if (refused) return refused;
  const at = now();
  const secret = targets.newSecret();
  const subscription: Subscription = {
    id: `whsub_${randomBytes(12).toString('base64url')}`,
    url: input.url,
    ...(input.description === undefined ? {} : { description: input.description }),
    types: input.types ?? [],
    services: input.services ?? { all: true },
    enabled: input.enabled ?? true,
    timeoutMs: input.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    health: 'healthy',
    secrets: [{ secret, createdAt: at }],
    createdAt: at,
    updatedAt: at,
  };
  // Delivered from now on: every existing service's cursor starts at its log's head (a later service's at 0).
  const heads = await repos.webhooks.serviceHeads();
  await repos.webhooks.createSubscription(subscription, heads.map((h) => ({ serviceId: h.serviceId, seq: h.head })));
  return success({ subscription: viewOf(subscription, at), secret });
}

/** A new secret; the current one keeps signing (beside it) for `overlapSeconds` (default 24 h; 0: retired at once). */
async function rotateSecret (deps: WebhookDeps, id: string, overlapSeconds: number): Promise<Result<WithSecret>> {
  const { repos, targets, now } = deps;
  const sub = await repos.webhooks.getSubscription(id);
  if (!sub) return refusal(errors.webhookSubscriptionNotFound(id));
  const at = now();
  const until = at + overlapSeconds * 1000;
  // Every earlier secret signs until the overlap ends at the latest (0: all retired now).
  const kept = activeSecrets(sub.secrets, at).map((s) => ({ ...s, expiresAt: Math.min(s.expiresAt ?? until, until) }))
    .filter((s) => s.expiresAt > at);
  const secret = targets.newSecret();
  const updated = await repos.webhooks.setSecrets(id, [{ secret, createdAt: at }, ...kept], at);
  if (!updated) return refusal(errors.webhookSubscriptionNotFound(id));
  return success({ subscription: viewOf(updated, at), secret, previousSecretValidUntil: new Date(until).toISOString() });
}

/** Services a change of `services` starts to cover are delivered from their heads on, like a new subscription's. */
async function startNewlyCovered (deps: WebhookDeps, id: string, services: WebhookServices): Promise<void> {
  const before = await deps.repos.webhooks.getSubscription(id);
  if (!before) return;
  const heads = await deps.repos.webhooks.serviceHeads();
  const newly = heads.filter((h) => {
    const service = { id: h.serviceId, name: h.name };
    return coversService(services, service) && !coversService(before.services, service);
  });
  await deps.repos.webhooks.resetCursors(id, newly.map((h) => ({ serviceId: h.serviceId, seq: h.head })));
}

export function webhookOperations (deps: WebhookDeps) {
  const { repos, now } = deps;
  const found = async (id: string): Promise<Result<Subscription>> => {
    const sub = await repos.webhooks.getSubscription(id);
    return sub ? success(sub) : refusal(errors.webhookSubscriptionNotFound(id));
  };

  return {
    create: (input: SubscriptionInput) => create(deps, input),

    async get (id: string): Promise<Result<SubscriptionView>> {
      const sub = await found(id);
      return sub.ok ? success(viewOf(sub.value, now())) : sub;
    },

    async list (): Promise<Result<SubscriptionView[]>> {
      const at = now();
      return success((await repos.webhooks.listSubscriptions()).map((s) => viewOf(s, at)));
    },

    async update (id: string, patch: SubscriptionPatch): Promise<Result<SubscriptionView>> {
      if (patch.url !== undefined) {
        const refused = await urlRefusal(deps, patch.url);
        if (refused) return refused;
      }
      if (patch.services !== undefined) await startNewlyCovered(deps, id, patch.services);
      const updated = await repos.webhooks.updateSubscription(id, { ...patch, updatedAt: now() });
      return updated ? success(viewOf(updated, now())) : refusal(errors.webhookSubscriptionNotFound(id));
    },

    async remove (id: string): Promise<Result<{ deleted: true }>> {
      return (await repos.webhooks.deleteSubscription(id)) ? success({ deleted: true }) : refusal(errors.webhookSubscriptionNotFound(id));
    },

    rotateSecret: (id: string, overlapSeconds = DEFAULT_OVERLAP_SECONDS) => rotateSecret(deps, id, overlapSeconds),

    async deliveries (id: string, limit: number): Promise<Result<DeliveryAttempt[]>> {
      const sub = await found(id);
      return sub.ok ? success(await repos.webhooks.deliveries(id, limit)) : sub;
    },

    async deadLetters (id: string, limit: number): Promise<Result<DeadLetter[]>> {
      const sub = await found(id);
      return sub.ok ? success(await repos.webhooks.deadLetters(id, limit)) : sub;
    },

    /** Queues dead letters for redelivery (one event, or every dead one): the process delivering the subscription sends them. */
    async redeliver (id: string, eventId?: string): Promise<Result<{ queued: number }>> {
      const sub = await found(id);
      if (!sub.ok) return sub;
      const queued = await repos.webhooks.queueRedelivery(id, eventId);
      if (eventId !== undefined && queued === 0) return refusal(errors.deadLetterNotFound(id, eventId));
      return success({ queued });
    },
  };
}

export type WebhookOperations = ReturnType<typeof webhookOperations>;
