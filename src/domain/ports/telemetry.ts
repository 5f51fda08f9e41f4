import type { TImmutableImageRolloutMode } from '../../contracts/index.js';
import type { AppError, ErrorCode } from '../../errors.js';
import type { Result } from '../result.js';

/**
 * What the use cases tell the metrics (implemented by src/outbound/metrics.ts). Each wrapper passes the
 * attempt's result (or error) through unchanged and counts it once it settles.
 */
export interface Telemetry {
  /** A promotion or rollback, manual or automatic, by mode and outcome. */
  rollout<T>(mode: TImmutableImageRolloutMode, attempt: Promise<Result<T>>): Promise<Result<T>>;
  /** A snapshot report by outcome and reason. */
  report<T extends { kind: string, status?: { mismatchReason?: string } }>(attempt: Promise<Result<T>>): Promise<Result<T>>;
  /** A snapshot report refused before its input was even validated (e.g. `runtime-capability-missing`). */
  reportRefused(error: AppError): void;
  /** A push event that was already recorded (same eventId): an idempotent replay. */
  pushEventReplayed(): void;
  /** A rollout status compare-and-swap lost to a concurrent report (which the use case retries). */
  statusConflict(): void;
  /** A lifecycle milestone this process decided (the compare-and-swap winner counts it: once across processes). */
  milestone(mode: TImmutableImageRolloutMode, outcome: 'succeeded' | 'failed' | 'mismatched' | 'deadline-exceeded'): void;
  /** An automatic rollback attempt that ended: issued, or refused (no verified release, lost to a concurrent rollout, …). */
  automaticRollback(trigger: string, outcome: 'issued' | 'refused'): void;
  /** Delivery metrics as events: a promotion succeeded (its lead time when known), a change failed, a failure restored. */
  deployment(serviceId: string, leadTimeSeconds: number | undefined): void;
  changeFailure(serviceId: string): void;
  restored(serviceId: string, seconds: number): void;
  /** One lifecycle sweep completed (every open rollout looked at once). */
  lifecycleSwept(looked: number): void;
}

/** The label values of one timed HTTP request: the route PATTERN (never the raw URL), method and status code. */
export interface RequestLabels { readonly method: string, readonly route: string, readonly status_code: string }

/** The route label of requests that matched no route (bounded, unlike the raw URL). */
export const UNMATCHED_ROUTE = '(unmatched)';

/** What the HTTP adapters tell the metrics and read of them (implemented by src/outbound/metrics.ts). */
export interface HttpTelemetry {
  /** One request's duration under its labels (the caller keeps the label objects: the hot path allocates nothing). */
  observeRequest(labels: RequestLabels, seconds: number): void;
  /** One coded error answered to a client (REST problem or TypedRequest error envelope). */
  errorAnswered(code: ErrorCode): void;
  /** The exposition (GET /metrics) and its content type. */
  readonly contentType: string;
  exposition(): Promise<string>;
}
