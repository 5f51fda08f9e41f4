import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TImmutableImageRolloutMode } from '../contracts/index.js';
import { errorCatalogue, errors, isAppError, rolloutRefusalOf, type AppError, type ErrorCode } from '../errors.js';
import type { Result } from '../domain/result.js';
import { UNMATCHED_ROUTE, type HttpTelemetry, type RequestLabels, type Telemetry } from '../domain/ports/telemetry.js';
import type { WebhookTelemetry } from '../domain/ports/webhooks.js';

/**
 * The Prometheus series of one app (GET /metrics). Every app gets its own
 * registry: `buildApp` runs many times in one test process, and a global
 * registry would refuse the second registration of each series.
 *
 * Every label value comes from a closed set (route patterns, HTTP methods and
 * status codes, error codes, upstream mismatch reasons, rollout modes), never
 * from a request's ids or free text, so the number of series stays bounded —
 * except the delivery series, labelled by service id: services are created by
 * admins, so their number is the operator's, not a caller's — and the webhook series, labelled by
 * subscription id (subscriptions are created by admins too).
 */

export type RolloutOutcome = 'success' | 'replayed' | 'conflict' | 'refused' | 'error';
const REPLAYED_OPERATIONS = ['promotion', 'automatic', 'rollback', 'push-event', 'report'] as const;
const CAS_CONFLICT_KINDS = ['rollout-generation-conflict', 'current-rollout-mismatch', 'rollout-status-revision'] as const;
export type CasConflictKind = typeof CAS_CONFLICT_KINDS[number];

/** Seconds; sub-millisecond at the bottom (a cached read), 10 s at the top (a request times out at 30 s). */
export const REQUEST_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export { UNMATCHED_ROUTE };

/** A label value for "no error code" / "no mismatch reason". */
const NONE = 'none';

/** The `code` label of an automatic promotion that did not apply (not an error code: no client is answered with it). */
const SKIPPED = 'automatic-promotion-skipped';

/** An automatic promotion's outcome that issued nothing (src/operations/issueRollout.ts `IssueOutcome`). */
const isSkipped = (value: unknown): boolean => typeof value === 'object' && value !== null && (value as { issued?: unknown }).issued === false;

/** The error an attempt that threw is answered with (as the error handler would: the store already coded outages). */
const thrownError = (err: unknown): AppError => (isAppError(err) ? err : errors.internalError(err));

type HttpLabels = 'method' | 'route' | 'status_code';

export class Metrics implements Telemetry, HttpTelemetry, WebhookTelemetry {
  readonly registry = new Registry();

  readonly httpRequestDuration = new Histogram<HttpLabels>({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration in seconds, by route pattern (never the raw URL), method and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: REQUEST_DURATION_BUCKETS,
    registers: [this.registry],
  });

  /** A counter in this app's registry. */
  private counter<L extends string> (name: string, help: string, labelNames: L[] = []): Counter<L> {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  readonly rollouts = this.counter('cloudly_release_rollouts_total',
    'Promotions and rollbacks by mode (promotion, automatic, rollback) and outcome (success, replayed, conflict, refused, error);' +
    ' code is the error code (none on success)', ['mode', 'outcome', 'code']);

  readonly casConflicts = this.counter('cloudly_release_cas_conflicts_total',
    'Compare-and-swap conflicts: promotions/rollbacks answered rollout-generation-conflict or current-rollout-mismatch,' +
    ' and rollout status writes retried because another report changed the status revision first', ['kind']);

  readonly idempotentReplays = this.counter('cloudly_release_idempotent_replays_total',
    'Requests answered from a stored outcome: promotions/rollbacks with a known Idempotency-Key, push events already recorded,' +
    ' snapshot reports repeating a sequence', ['operation']);

  readonly reports = this.counter('cloudly_release_reports_total',
    'Snapshot reports by outcome (recorded, applied, replayed, refused, error); reason is the stored status\'s mismatchReason' +
    ' for applied/replayed (none when clear) and the error code for refused/error', ['outcome', 'reason']);

  readonly errors = this.counter('cloudly_release_errors_total',
    'Error answers by stable code, REST and TypedRequest alike (TypedRequest errors are HTTP 200, so this is where they show);' +
    ' database-unavailable counts database outages seen by requests', ['code']);

  readonly rolloutOutcomes = this.counter('cloudly_release_rollout_outcomes_total',
    'Rollout milestones by mode and outcome — succeeded (rolled-back for a rollback), failed / mismatched (the first failure before' +
    ' any success), deadline-exceeded — each counted once across processes, by the process whose compare-and-swap decided it', ['mode', 'outcome']);

  readonly automaticRollbacks = this.counter('cloudly_release_automatic_rollbacks_total',
    'Automatic rollbacks by trigger (failed, mismatched, deadline) and outcome (issued, refused)', ['trigger', 'outcome']);

  readonly deployments = this.counter('cloudly_release_deployments_total',
    'Deployments (promotions, manual or automatic, that succeeded) by service id: rate() is the deployment frequency', ['service']);

  readonly changeFailures = this.counter('cloudly_release_change_failures_total',
    'Failed changes by service id: promotions that failed or mismatched before succeeding, or were rolled back or aborted', ['service']);

  readonly leadTime = new Histogram<'service'>({
    name: 'cloudly_release_lead_time_seconds',
    help: 'Lead time of each deployment by service id: from the first observation of its digest (push) to the rollout succeeding',
    labelNames: ['service'],
    buckets: [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600],
    registers: [this.registry],
  });

  readonly timeToRestore = new Histogram<'service'>({
    name: 'cloudly_release_time_to_restore_seconds',
    help: 'Time to restore by service id: from a failed change (its first failure, else the rollback that ended it) to the next success',
    labelNames: ['service'],
    buckets: [30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600],
    registers: [this.registry],
  });

  readonly lifecycleSweeps = this.counter('cloudly_release_lifecycle_sweeps_total',
    'Completed lifecycle sweeps of this process (each looks once at every rollout still in progress or waiting for a follow-up;' +
    ' one the database or a shutdown stopped early counts too, and the next goes on from where it stopped)');

  readonly lifecycleLookedAt = this.counter('cloudly_release_lifecycle_rollouts_looked_at_total',
    'Rollouts the lifecycle sweeps of this process looked at (open: in progress, or waiting for milestones or follow-ups)');

  readonly databaseHeartbeatFailures = this.counter('cloudly_release_mongodb_heartbeat_failures_total',
    'MongoDB server monitor heartbeats that failed (the database was unreachable), counted whether or not requests were waiting');

  readonly webhookDeliveries = this.counter('cloudly_release_webhook_deliveries_total',
    'Webhook events delivered (the receiver answered 2xx), by subscription id; redeliveries of dead letters included', ['subscription']);

  readonly webhookFailures = this.counter('cloudly_release_webhook_failures_total',
    'Webhook attempts that failed, by subscription id and outcome: retry (scheduled again), dead (the event became a dead letter),' +
    ' gone (410: the subscription was disabled)', ['subscription', 'outcome']);

  readonly webhookRetries = this.counter('cloudly_release_webhook_retries_total',
    'Webhook retries scheduled (with backoff) by subscription id', ['subscription']);

  readonly webhookLagSeconds = new Gauge<'subscription'>({
    name: 'cloudly_release_webhook_lag_seconds',
    help: 'Age of the oldest event a subscription has not delivered yet (0: caught up), as of the last delivery pass of this process',
    labelNames: ['subscription'],
    registers: [this.registry],
  });

  readonly webhookLatency = new Histogram<never>({
    name: 'cloudly_release_webhook_delivery_seconds',
    help: 'Latency of webhook attempts the receiver answered with 2xx',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor () {
    collectDefaultMetrics({ register: this.registry });
    // Series an alert rate()s over exist from the start, at 0.
    for (const kind of CAS_CONFLICT_KINDS) this.casConflicts.inc({ kind }, 0);
    for (const operation of REPLAYED_OPERATIONS) this.idempotentReplays.inc({ operation }, 0);
    this.errors.inc({ code: 'database-unavailable' }, 0);
  }

  /** The exposition: Prometheus text format 0.0.4. */
  get contentType (): string {
    return this.registry.contentType;
  }

  exposition (): Promise<string> {
    return this.registry.metrics();
  }

  observeRequest (labels: RequestLabels, seconds: number): void {
    this.httpRequestDuration.observe(labels, seconds);
  }

  /** One coded error answered to a client (REST problem or TypedRequest error envelope). */
  errorAnswered (code: ErrorCode): void {
    this.errors.inc({ code });
  }

  async rollout<T> (mode: TImmutableImageRolloutMode, attempt: Promise<Result<T>>): Promise<Result<T>> {
    let result: Result<T>;
    try {
      result = await attempt;
    } catch (err) {
      this.rolloutRefused(mode, thrownError(err), false);
      throw err;
    }
    if (result.ok && isSkipped(result.value)) {
      // An automatic promotion that did not apply (on hold, already current): counted as refused, under its own label.
      this.rollouts.inc({ mode, outcome: result.replayed ? 'replayed' : 'refused', code: SKIPPED });
      if (result.replayed) this.idempotentReplays.inc({ operation: mode });
    } else if (result.ok) {
      this.rollouts.inc({ mode, outcome: result.replayed ? 'replayed' : 'success', code: NONE });
      if (result.replayed) this.idempotentReplays.inc({ operation: mode });
    } else {
      this.rolloutRefused(mode, result.error, result.replayed);
    }
    return result;
  }

  private rolloutRefused (mode: TImmutableImageRolloutMode, error: AppError, replayed: boolean): void {
    const { code } = error;
    let outcome: RolloutOutcome;
    // A stored refusal replayed for the same key is a replay, not a new conflict.
    if (replayed) {
      outcome = 'replayed';
      this.idempotentReplays.inc({ operation: mode });
    } else if (rolloutRefusalOf(code).casConflict === true) {
      // The catalogue's lost compare-and-swaps of a promotion or rollback (the third kind is a report's status revision).
      outcome = 'conflict';
      this.casConflicts.inc({ kind: code as CasConflictKind });
    } else {
      outcome = errorCatalogue[code].status >= 500 ? 'error' : 'refused';
    }
    this.rollouts.inc({ mode, outcome, code });
  }

  async report<T extends { kind: string, status?: { mismatchReason?: string } }> (attempt: Promise<Result<T>>): Promise<Result<T>> {
    let result: Result<T>;
    try {
      result = await attempt;
    } catch (err) {
      this.reportRefused(thrownError(err));
      throw err;
    }
    if (!result.ok) {
      this.reportRefused(result.error);
      return result;
    }
    const outcome = result.value;
    this.reports.inc({ outcome: outcome.kind, reason: outcome.status?.mismatchReason ?? NONE });
    if (outcome.kind === 'replayed') this.idempotentReplays.inc({ operation: 'report' });
    return result;
  }

  reportRefused (error: AppError): void {
    this.reports.inc({ outcome: errorCatalogue[error.code].status >= 500 ? 'error' : 'refused', reason: error.code });
  }

  pushEventReplayed (): void {
    this.idempotentReplays.inc({ operation: 'push-event' });
  }

  /** A rollout status write lost to a concurrent report (the use case retries it). */
  statusConflict (): void {
    this.casConflicts.inc({ kind: 'rollout-status-revision' });
  }

  milestone (mode: TImmutableImageRolloutMode, outcome: 'succeeded' | 'failed' | 'mismatched' | 'deadline-exceeded'): void {
    this.rolloutOutcomes.inc({ mode, outcome });
  }

  automaticRollback (trigger: string, outcome: 'issued' | 'refused'): void {
    this.automaticRollbacks.inc({ trigger, outcome });
  }

  deployment (serviceId: string, leadTimeSeconds: number | undefined): void {
    this.deployments.inc({ service: serviceId });
    if (leadTimeSeconds !== undefined) this.leadTime.observe({ service: serviceId }, leadTimeSeconds);
  }

  changeFailure (serviceId: string): void {
    this.changeFailures.inc({ service: serviceId });
  }

  restored (serviceId: string, seconds: number): void {
    this.timeToRestore.observe({ service: serviceId }, seconds);
  }

  lifecycleSwept (looked: number): void {
    this.lifecycleSweeps.inc();
    this.lifecycleLookedAt.inc(looked);
  }

  webhookDelivered (subscriptionId: string, latencyMs: number): void {
    this.webhookDeliveries.inc({ subscription: subscriptionId });
    this.webhookLatency.observe(latencyMs / 1000);
  }

  webhookFailed (subscriptionId: string, outcome: 'retry' | 'dead' | 'gone'): void {
    this.webhookFailures.inc({ subscription: subscriptionId, outcome });
  }

  webhookRetried (subscriptionId: string): void {
    this.webhookRetries.inc({ subscription: subscriptionId });
  }

  webhookLag (subscriptionId: string, seconds: number): void {
    this.webhookLagSeconds.set({ subscription: subscriptionId }, seconds);
  }
}
