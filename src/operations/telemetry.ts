import type { TImmutableImageRolloutMode } from '../contracts/index.js';
import type { AppError } from '../errors.js';
import type { Result } from './result.js';

/**
 * What the use cases tell the metrics (implemented by src/metrics.ts). Each wrapper passes the
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
}
