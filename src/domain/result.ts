import type { AppError, Problem } from '../errors.js';
import { errors } from '../errors.js';
import type { Principal } from './principal.js';
import type { Log } from './ports/index.js';

/**
 * What every use case answers: the data, or the refusal (a coded error from the catalogue),
 * and whether it was answered from a stored outcome (the same Idempotency-Key, a repeated
 * event or report). Expected cases are results, never exceptions; only the unexpected throws.
 */
export type Result<T> =
  | { ok: true, value: T, replayed: boolean }
  | { ok: false, error: AppError, replayed: boolean };

export const success = <T>(value: T, replayed = false): Result<T> => ({ ok: true, value, replayed });

export const refusal = <T = never>(error: AppError, replayed = false): Result<T> => ({ ok: false, error, replayed });

/** A refusal for problems found in the input (fields relative to the use case's input). */
export const invalid = <T = never>(problems: readonly Problem[]): Result<T> => refusal(errors.validationFailed(problems));

/** Who asks, and where its log lines go: what a use case knows of the request. */
export interface Actor {
  principal: Principal;
  log: Log;
}
