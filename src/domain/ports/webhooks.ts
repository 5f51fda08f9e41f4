import type { CloudEventJson, Subscription, WebhookHealth } from '../webhooks.js';

/**
 * What webhook delivery needs from persistence (src/store/webhookStore.ts) and from the outside world
 * (src/outbound/webhooks/). docs/webhooks.md says what each guarantees.
 */

/** Where a subscription's delivery stands for one service: the last seq delivered (or given up) and the pending event's retries. */
export interface WebhookCursor {
  serviceId: string;
  seq: number;
  /** Failed attempts of the event after `seq` so far. */
  attempts: number;
  firstAttemptAt?: number;
  nextAttemptAt?: number;
  /** Since when the log has had nothing after `seq` although its head is further on (a gap: retention). */
  gapSince?: number;
}

/** A pending event's failed attempts so far and when it is tried next. */
export interface RetrySchedule { attempts: number, firstAttemptAt: number, nextAttemptAt: number }

/** One attempt in a subscription's delivery log. */
export interface DeliveryAttempt {
  subscriptionId: string;
  eventId: string;
  type: string;
  attempt: number;
  at: number;
  /** The receiver's status; absent when there was no answer. */
  statusCode?: number;
  /** What went wrong without an answer (`timeout`, `unreachable`, …). */
  error?: string;
  latencyMs: number;
  outcome: 'delivered' | 'retry' | 'dead' | 'gone';
  /** The first bytes of the answer's body (bounded). */
  excerpt?: string;
  /** A redelivery of a dead letter. */
  redelivery?: boolean;
}

export interface DeadLetter {
  subscriptionId: string;
  eventId: string;
  serviceId: string;
  event: CloudEventJson;
  attempts: number;
  deadAt: number;
  lastError: string;
  /** `dead`: kept; `queued`: redelivery asked for (the delivering process sends it); `redelivered`: it was delivered since. */
  state: 'dead' | 'queued' | 'redelivered';
  redeliveredAt?: number;
}

/** A service as delivery sees it: its id, name and the last seq of its log. */
export interface ServiceHead {
  serviceId: string;
  name?: string | undefined;
  head: number;
}

export interface SubscriptionPatch {
  url?: string;
  description?: string;
  types?: string[];
  services?: Subscription['services'];
  enabled?: boolean;
  timeoutMs?: number;
}

export interface WebhookRepository {
  createSubscription(subscription: Subscription, cursors: ReadonlyArray<{ serviceId: string, seq: number }>): Promise<void>;
  getSubscription(id: string): Promise<Subscription | null>;
  listSubscriptions(): Promise<Subscription[]>;
  /** Applies the patch; resolves to the subscription after it (null: none). */
  updateSubscription(id: string, patch: SubscriptionPatch & { updatedAt: number }): Promise<Subscription | null>;
  deleteSubscription(id: string): Promise<boolean>;
  /** Replaces the secrets (rotation). */
  setSecrets(id: string, secrets: Subscription['secrets'], updatedAt: number): Promise<Subscription | null>;
  setHealth(id: string, health: WebhookHealth, lastError: string | undefined, disable: boolean): Promise<void>;

  /**
   * Takes or renews the delivery lease of a subscription for `owner` until `until`: granted when it is
   * free, expired (`now`) or already the owner's. One process delivers a subscription at a time.
   */
  claimLease(id: string, owner: string, now: number, until: number): Promise<boolean>;
  releaseLease(id: string, owner: string): Promise<void>;

  /** The services and the heads of their logs, by id. */
  serviceHeads(): Promise<ServiceHead[]>;
  cursors(subscriptionId: string): Promise<WebhookCursor[]>;
  /** Sets cursors (retries cleared), whatever they were: a service the subscription starts to cover is delivered from its head. */
  resetCursors(subscriptionId: string, cursors: ReadonlyArray<{ serviceId: string, seq: number }>): Promise<void>;
  /**
   * Moves the cursor from `fromSeq` to `toSeq` (retries cleared), by compare-and-swap on `fromSeq`
   * (a missing cursor counts as 0); false: another process moved it.
   */
  advanceCursor(subscriptionId: string, serviceId: string, fromSeq: number, toSeq: number): Promise<boolean>;
  /** Records a failed attempt on the cursor at `seq`: its count, first attempt and next attempt time. */
  recordRetry(subscriptionId: string, serviceId: string, seq: number, retry: RetrySchedule): Promise<void>;
  /** The lowest seq after `seq` (up to `head`) still in the service's log: where a subscription behind the retention goes on (null: none). */
  nextLoggedSeq(serviceId: string, seq: number, head: number): Promise<number | null>;
  markGap(subscriptionId: string, serviceId: string, seq: number, since: number | undefined): Promise<void>;

  recordAttempt(attempt: DeliveryAttempt): Promise<void>;
  /** Several at once (the delivered ones of a batch). */
  recordAttempts(attempts: readonly DeliveryAttempt[]): Promise<void>;
  deliveries(subscriptionId: string, limit: number): Promise<DeliveryAttempt[]>;
  /** Removes delivery-log entries older than `before`; resolves to how many. */
  sweepDeliveries(before: number): Promise<number>;

  addDeadLetter(letter: DeadLetter): Promise<void>;
  deadLetters(subscriptionId: string, limit: number): Promise<DeadLetter[]>;
  /** Marks dead letters for redelivery: one event, or every dead one; resolves to how many. */
  queueRedelivery(subscriptionId: string, eventId?: string): Promise<number>;
  queuedDeadLetters(subscriptionId: string, limit: number): Promise<DeadLetter[]>;
  settleDeadLetter(subscriptionId: string, eventId: string, delivered: boolean, at: number, lastError?: string): Promise<void>;
}

/** One signed POST to a receiver. */
export interface WebhookRequest {
  url: string;
  /** The serialized CloudEvent (structured JSON mode). */
  body: string;
  eventId: string;
  /** Signing secrets (`whsec_…`): each signs; the receiver needs one to verify. */
  secrets: readonly string[];
  timeoutMs: number;
}

export interface WebhookAnswer {
  status: number;
  retryAfter?: string;
  excerpt: string;
}

export type WebhookFailure = 'unreachable' | 'timeout' | 'not-allowed' | 'too-large';

export type WebhookSent =
  | { ok: true, answer: WebhookAnswer, latencyMs: number }
  | { ok: false, failure: WebhookFailure, message: string, latencyMs: number };

/** The sender (src/outbound/webhooks/sender.ts): never throws; an answer or why there is none. */
export interface WebhookSender {
  send(request: WebhookRequest): Promise<WebhookSent>;
}

/** Where a subscription may send: refused addresses (SSRF) unless the allow-list names them. */
export interface WebhookTargets {
  /** undefined: allowed; else why not, in words. */
  check(url: URL): Promise<string | undefined>;
  /** A new signing secret, `whsec_<base64 of 32 random bytes>`. */
  newSecret(): string;
  /** A CloudEvent as the body that is sent (structured JSON mode, validated against the spec). */
  serialize(event: CloudEventJson): string;
}

/** The Prometheus series of delivery (src/outbound/metrics.ts). */
export interface WebhookTelemetry {
  webhookDelivered(subscriptionId: string, latencyMs: number): void;
  webhookFailed(subscriptionId: string, outcome: 'retry' | 'dead' | 'gone'): void;
  webhookRetried(subscriptionId: string): void;
  /** The age of the oldest event the subscription has not delivered (0: none). */
  webhookLag(subscriptionId: string, seconds: number): void;
}
