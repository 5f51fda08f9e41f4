import type {
  Clock, DeadLetter, DeliveryAttempt, Log, Repositories, ServiceHead, WebhookCursor, WebhookSender, WebhookTargets, WebhookTelemetry,
} from '../domain/ports/index.js';
import type { LoggedEvent } from '../domain/events.js';
import {
  activeSecrets, cloudEventOf, coversService, eventsMissedEvent, mayRetry, retryAfterMsOf, retryDelayMs, verdictOf, wantsType,
  type AttemptOutcome, type CloudEventJson, type RetryPolicy, type Subscription,
} from '../domain/webhooks.js';

/**
 * Webhook delivery (docs/webhooks.md): a consumer of the durable per-service event log
 * (src/domain/ports/eventLog.ts) with a cursor per subscription and service in the database.
 *
 * - One process delivers a subscription at a time: it holds the subscription's lease (renewed while it
 *   delivers; a dead holder's lease runs out after `leaseMs` and another process takes it over).
 * - At least once, in order per service: events are sent, THEN the cursor moves past them (compare-and-
 *   swap on the seq it moves from; once per batch, and before a retry is recorded on it), so a crash in
 *   between re-sends them, with the same `webhook-id`. A service's next event waits until the one before
 *   is delivered or given up.
 * - Retries on no answer, timeouts, 408, 429 and 5xx, with exponential backoff and jitter (a longer
 *   `Retry-After` wins), kept on the cursor; after `maxAttempts` or `maxAgeMs` the event becomes a dead
 *   letter (kept, listed, redeliverable) and the subscription `failing`; any other 4xx (or 3xx: redirects
 *   are not followed) gives up at once. 410 disables the subscription.
 * - A subscription behind the log's retention is told: an `events-missed` event, then on from the oldest
 *   event the log still has; its health becomes `failing`.
 */

export interface DeliveryDeps {
  repos: Pick<Repositories, 'webhooks' | 'events'>;
  sender: WebhookSender;
  targets: Pick<WebhookTargets, 'serialize'>;
  telemetry: WebhookTelemetry;
  now: Clock;
  log: Pick<Log, 'info' | 'warn'>;
  /** This process's name in leases. */
  owner: string;
  retry: RetryPolicy;
  leaseMs: number;
  /** The CloudEvents `source` of every event. */
  source: string;
  /** How long the delivery log keeps an attempt (EVENTS_RETENTION_DAYS). */
  deliveryLogRetentionMs: number;
  /** How long the log may show nothing after a cursor while its head is further on before it counts as a gap (retention). */
  gapGraceMs: number;
  random?: () => number;
}

/** Events read from the log per read; services of one subscription delivered at once. */
const READ_BATCH = 50;
const SERVICE_CONCURRENCY = 8;
const EVENTS_PER_PASS = 500;
const REDELIVERIES_PER_PASS = 100;
const DELIVERY_LOG_SWEEP_MS = 5 * 60_000;
/** How long a shutdown waits for the attempts in flight (a duplicate after it is allowed: at least once). */
const STOP_WAIT_MS = 2_000;

/** What one pass of one subscription carries: the lease's renewal and whether delivery must stop (lease lost, 410, shutdown). */
interface Pass {
  sub: Subscription;
  stopped: boolean;
  healthy: boolean;
  oldestPendingAt: number | undefined;
  /** Delivered attempts not written to the delivery log yet (written per batch: one insert, not one per event). */
  logged: DeliveryAttempt[];
  stopping: () => boolean;
}

/** Whether the pass may go on: it still holds the lease (renewed by `keepLease`), no 410 stopped it, no shutdown. */
async function holdLease (_deps: DeliveryDeps, pass: Pass): Promise<boolean> {
  return !pass.stopped && !pass.stopping();
}

/**
 * Renews the pass's lease every third of it while the pass runs — also while one attempt waits for a
 * slow receiver, which may take longer than the lease — and stops the pass when another process holds
 * it now. Returns the function that ends the renewals.
 */
function keepLease (deps: DeliveryDeps, pass: Pass): () => void {
  let renewing = false;
  const timer = setInterval(() => {
    if (renewing || pass.stopped) return;
    renewing = true;
    const now = deps.now();
    deps.repos.webhooks.claimLease(pass.sub.id, deps.owner, now, now + deps.leaseMs)
      .then((held) => { if (!held) pass.stopped = true; }, () => { pass.stopped = true; })
      .finally(() => { renewing = false; });
  }, Math.max(50, Math.floor(deps.leaseMs / 3)));
  timer.unref();
  return () => { clearInterval(timer); };
}

/** One attempt: sent, logged, counted. */
async function attempt (deps: DeliveryDeps, pass: Pass, event: CloudEventJson, attemptNo: number, redelivery = false) {
  const { sub } = pass;
  const sent = await deps.sender.send({
    url: sub.url,
    body: deps.targets.serialize(event),
    eventId: event.id,
    timeoutMs: sub.timeoutMs,
    secrets: activeSecrets(sub.secrets, deps.now()).map((s) => s.secret),
  });
  const outcome: AttemptOutcome = sent.ok
    ? { kind: 'answer', status: sent.answer.status, retryAfterMs: retryAfterMsOf(sent.answer.retryAfter, deps.now()) }
    : { kind: 'failure', reason: sent.failure };
  const verdict = verdictOf(outcome);
  const entry: DeliveryAttempt = {
    subscriptionId: sub.id,
    eventId: event.id,
    type: event.type,
    attempt: attemptNo,
    at: deps.now(),
    latencyMs: sent.latencyMs,
    outcome: verdict,
    ...(sent.ok ? { statusCode: sent.answer.status, excerpt: sent.answer.excerpt } : { error: `${sent.failure}: ${sent.message}`.slice(0, 512) }),
    ...(redelivery ? { redelivery } : {}),
  };
  if (verdict === 'delivered') pass.logged.push(entry);
  else await deps.repos.webhooks.recordAttempt(entry);
  if (verdict === 'delivered') deps.telemetry.webhookDelivered(sub.id, sent.latencyMs);
  else deps.telemetry.webhookFailed(sub.id, verdict === 'gone' ? 'gone' : verdict === 'retry' ? 'retry' : 'dead');
  return { verdict, outcome, error: sent.ok ? `HTTP ${sent.answer.status}` : sent.message };
}

/** 410: the receiver ended the subscription; it is disabled (resumed only by an update). */
async function gone (deps: DeliveryDeps, pass: Pass): Promise<void> {
  pass.stopped = true;
  await deps.repos.webhooks.setHealth(pass.sub.id, 'gone', 'the receiver answered 410 Gone: the subscription was disabled', true);
  deps.log.warn({ subscriptionId: pass.sub.id }, 'webhook receiver answered 410 Gone: subscription disabled');
}

async function deadLetter (deps: DeliveryDeps, pass: Pass, serviceId: string, event: CloudEventJson, attempts: number, lastError: string): Promise<void> {
  const letter: DeadLetter = { subscriptionId: pass.sub.id, eventId: event.id, serviceId, event, attempts, deadAt: deps.now(), lastError, state: 'dead' };
  await deps.repos.webhooks.addDeadLetter(letter);
  await deps.repos.webhooks.setHealth(pass.sub.id, 'failing', `event ${event.id} is a dead letter: ${lastError}`, false);
  pass.healthy = false;
}

/**
 * One event of a service, at the cursor: 'next' (delivered or given up: the cursor may move past it),
 * 'wait' (a retry is scheduled; the service's later events wait), 'stop' (the subscription is gone).
 */
async function deliverEvent (
  deps: DeliveryDeps, pass: Pass, cursor: WebhookCursor, event: CloudEventJson, stored: () => Promise<boolean> = async () => true,
): Promise<'next' | 'wait' | 'stop'> {
  const attemptNo = cursor.attempts + 1;
  const result = await attempt(deps, pass, event, attemptNo);
  if (result.verdict === 'delivered') {
    if (!pass.healthy) {
      await deps.repos.webhooks.setHealth(pass.sub.id, 'healthy', undefined, false);
      pass.healthy = true;
    }
    return 'next';
  }
  if (result.verdict === 'gone') {
    await gone(deps, pass);
    return 'stop';
  }
  const now = deps.now();
  const firstAttemptAt = cursor.firstAttemptAt ?? now;
  if (result.verdict === 'retry' && mayRetry(deps.retry, attemptNo, firstAttemptAt, now)) {
    const retryAfterMs = result.outcome.kind === 'answer' ? result.outcome.retryAfterMs : undefined;
    const delay = retryDelayMs(deps.retry, attemptNo, (deps.random ?? Math.random)(), retryAfterMs);
    // The retry is kept on the stored cursor, which must stand right before this event first.
    if (!(await stored())) return 'stop';
    await deps.repos.webhooks.recordRetry(pass.sub.id, cursor.serviceId, cursor.seq, { attempts: attemptNo, firstAttemptAt, nextAttemptAt: now + delay });
    deps.telemetry.webhookRetried(pass.sub.id);
    return 'wait';
  }
  await deadLetter(deps, pass, cursor.serviceId, event, attemptNo, result.error);
  return 'next';
}

/** The log showed nothing after the cursor though its head is further on: a relay in flight, or a gap the retention left (after the grace). */
async function handleGap (deps: DeliveryDeps, pass: Pass, service: ServiceHead, cursor: WebhookCursor): Promise<void> {
  const now = deps.now();
  if (cursor.gapSince === undefined) {
    await deps.repos.webhooks.markGap(pass.sub.id, service.serviceId, cursor.seq, now);
    return;
  }
  if (now - cursor.gapSince < deps.gapGraceMs) return;
  const next = await deps.repos.webhooks.nextLoggedSeq(service.serviceId, cursor.seq, service.head);
  const resumeAt = (next ?? service.head + 1) - 1;
  const missed = eventsMissedEvent(service.serviceId, service.name, cursor.seq + 1, resumeAt, deps.source, now);
  const outcome = await deliverEvent(deps, pass, cursor, missed);
  if (outcome !== 'next') return;
  const why = `fell behind the event log's retention: events ${cursor.seq + 1}..${resumeAt} of ${service.serviceId} are gone`;
  await deps.repos.webhooks.setHealth(pass.sub.id, 'failing', why, false);
  pass.healthy = false;
  await deps.repos.webhooks.advanceCursor(pass.sub.id, service.serviceId, cursor.seq, resumeAt);
}

/** Delivers one service's events after its cursor, in order, until caught up, waiting for a retry, or the pass stops. */
async function deliverService (deps: DeliveryDeps, pass: Pass, service: ServiceHead, start: WebhookCursor): Promise<void> {
  let cursor = start;
  if (service.head <= cursor.seq) return;
  if (cursor.nextAttemptAt !== undefined && cursor.nextAttemptAt > deps.now()) {
    pass.oldestPendingAt = Math.min(pass.oldestPendingAt ?? Infinity, cursor.firstAttemptAt ?? deps.now());
    return;
  }
  let sent = 0;
  while (sent < EVENTS_PER_PASS && await holdLease(deps, pass)) {
    const events = await deps.repos.events.eventsAfter(service.serviceId, cursor.seq, READ_BATCH);
    if (events.length === 0) {
      if (service.head > cursor.seq) await handleGap(deps, pass, service, cursor);
      return;
    }
    if (cursor.gapSince !== undefined) cursor = { ...cursor, gapSince: undefined };
    pass.oldestPendingAt = Math.min(pass.oldestPendingAt ?? Infinity, (events[0] as LoggedEvent).time);
    const moved = await deliverEvents(deps, pass, cursor, events);
    await flushLog(deps, pass);
    if (moved === undefined) return;
    sent += events.length;
    cursor = moved;
  }
}

/** A batch of events of one service, in order; the cursor after them, or undefined when the service must wait (or the pass stop). */
async function deliverEvents (deps: DeliveryDeps, pass: Pass, start: WebhookCursor, events: LoggedEvent[]): Promise<WebhookCursor | undefined> {
  const { serviceId } = start;
  // `at`: everything up to it is delivered, given up or not wanted; the stored cursor follows once per batch
  // (a crash re-sends at most the batch: at least once), and before a retry is recorded on it.
  let at = start.seq;
  let stored = start.seq;
  const store = async (): Promise<boolean> => {
    if (at === stored) return true;
    // Compare-and-swap: false means another process moved it (its lease taken over): this pass stops here.
    const moved = await deps.repos.webhooks.advanceCursor(pass.sub.id, serviceId, stored, at);
    stored = at;
    return moved;
  };
  for (const event of events) {
    if (!wantsType(pass.sub, event.type)) {
      at = event.seq;
      continue;
    }
    if (!(await holdLease(deps, pass))) {
      await store();
      return undefined;
    }
    const cursor: WebhookCursor = at === start.seq ? start : { serviceId, seq: at, attempts: 0 };
    const outcome = await deliverEvent(deps, pass, cursor, cloudEventOf(event, deps.source), store);
    if (outcome === 'wait') return undefined;
    if (outcome === 'stop') {
      await store();
      return undefined;
    }
    at = event.seq;
  }
  return (await store()) ? { serviceId, seq: at, attempts: 0 } : undefined;
}

/** Dead letters queued for redelivery by the API: one attempt each; a failure leaves them dead. */
async function redeliverQueued (deps: DeliveryDeps, pass: Pass): Promise<void> {
  const queued = await deps.repos.webhooks.queuedDeadLetters(pass.sub.id, REDELIVERIES_PER_PASS);
  for (const letter of queued) {
    if (!(await holdLease(deps, pass))) return;
    const result = await attempt(deps, pass, letter.event, letter.attempts + 1, true);
    if (result.verdict === 'gone') {
      await deps.repos.webhooks.settleDeadLetter(pass.sub.id, letter.eventId, false, deps.now(), result.error);
      await gone(deps, pass);
      return;
    }
    await deps.repos.webhooks.settleDeadLetter(pass.sub.id, letter.eventId, result.verdict === 'delivered', deps.now(), result.error);
  }
}

/** Writes the delivered attempts kept so far to the delivery log. */
async function flushLog (deps: DeliveryDeps, pass: Pass): Promise<void> {
  const entries = pass.logged.splice(0);
  await deps.repos.webhooks.recordAttempts(entries);
}

/** One pass over a subscription whose lease this process holds: redeliveries, then every covered service's events. */
export async function deliverSubscription (deps: DeliveryDeps, sub: Subscription, heads: readonly ServiceHead[], stopping: () => boolean): Promise<void> {
  const pass: Pass = { sub, stopped: false, healthy: sub.health === 'healthy', oldestPendingAt: undefined, stopping, logged: [] };
  const release = keepLease(deps, pass);
  try {
    await deliverPass(deps, pass, heads);
  } finally {
    release();
    await flushLog(deps, pass);
  }
}

async function deliverPass (deps: DeliveryDeps, pass: Pass, heads: readonly ServiceHead[]): Promise<void> {
  const { sub, stopping } = pass;
  await redeliverQueued(deps, pass);
  const cursors = new Map((await deps.repos.webhooks.cursors(sub.id)).map((c) => [c.serviceId, c]));
  const due = heads.filter((h) => coversService(sub.services, { id: h.serviceId, name: h.name }) && h.head > (cursors.get(h.serviceId)?.seq ?? 0));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < due.length && !pass.stopped && !stopping()) {
      const service = due[next++] as ServiceHead;
      await deliverService(deps, pass, service, cursors.get(service.serviceId) ?? { serviceId: service.serviceId, seq: 0, attempts: 0 });
    }
  };
  await Promise.all(Array.from({ length: Math.min(SERVICE_CONCURRENCY, due.length) }, worker));
  deps.telemetry.webhookLag(sub.id, pass.oldestPendingAt === undefined ? 0 : Math.max(0, (deps.now() - pass.oldestPendingAt) / 1000));
}

export interface DeliveryControl {
  /** One look at every enabled subscription: each whose lease this process gets is delivered (passes run on; this resolves once they are started). */
  tick(): Promise<void>;
  /** Starts the periodic ticks; `stop` ends them, waits for the passes in flight and gives the leases back. */
  start(intervalMs: number): { stop: () => Promise<void> };
}

export function webhookDelivery (deps: DeliveryDeps): DeliveryControl {
  const running = new Map<string, Promise<void>>();
  let stopping = false;

  const tick = async (): Promise<void> => {
    const subs = (await deps.repos.webhooks.listSubscriptions()).filter((s) => s.enabled && !running.has(s.id));
    if (subs.length === 0) return;
    const heads = await deps.repos.webhooks.serviceHeads();
    for (const sub of subs) {
      const now = deps.now();
      if (stopping || !(await deps.repos.webhooks.claimLease(sub.id, deps.owner, now, now + deps.leaseMs))) continue;
      const pass = deliverSubscription(deps, sub, heads, () => stopping)
        .catch((err: unknown) => { deps.log.warn({ subscriptionId: sub.id, err }, 'webhook delivery pass failed; the next tick goes on'); })
        .finally(() => { running.delete(sub.id); });
      running.set(sub.id, pass);
    }
  };

  const start = (intervalMs: number) => {
    let ticking: Promise<void> = Promise.resolve();
    // A database outage fails every tick: told once, and once more when delivery goes on.
    let failing = false;
    const timer = setInterval(() => {
      ticking = ticking.then(tick).then(() => {
        if (failing) deps.log.info({}, 'webhook delivery goes on');
        failing = false;
      }, (err: unknown) => {
        if (!failing) deps.log.warn({ err }, 'webhook delivery stopped (it goes on once the database answers)');
        failing = true;
      });
    }, intervalMs);
    timer.unref();
    // The delivery log's retention, every few minutes.
    const sweep = setInterval(() => {
      deps.repos.webhooks.sweepDeliveries(deps.now() - deps.deliveryLogRetentionMs).catch(() => undefined);
    }, DELIVERY_LOG_SWEEP_MS);
    sweep.unref();
    return {
      stop: async () => {
        stopping = true;
        clearInterval(timer);
        clearInterval(sweep);
        await ticking;
        const held = [...running.keys()];
        // An attempt in flight may wait for a slow receiver: shutting down waits for it a little, not for its whole timeout.
        let waited: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled(running.values()),
          new Promise<void>((resolve) => { waited = setTimeout(resolve, STOP_WAIT_MS); }),
        ]);
        clearTimeout(waited);
        // Given back at once: another process goes on without waiting for the leases to run out.
        await Promise.allSettled(held.map((id) => deps.repos.webhooks.releaseLease(id, deps.owner)));
      },
    };
  };

  return { tick, start };
}
