/**
 * The database as a whole, as the service needs it (issue 24): reachable, conforming to what every
 * guarantee of the design rests on (single-document atomicity, unique indexes, the commands the store
 * uses), and carrying the index plan. The store implements it; src/app.ts, /readyz and the start-up
 * path use it.
 */

/** `passed`: as MongoDB does. `degraded`: an optional feature is missing (documented fallback). `refused`: a guarantee would break. */
export type ConformanceOutcome = 'passed' | 'degraded' | 'refused';

/** One line of the conformance check. */
export interface ConformanceCheck {
  /** The guarantee or feature it checks, as docs/operations.md names it (`single-document atomicity`, `unique indexes`, …). */
  guarantee: string;
  /** How it was checked, in a few words (`compare-and-swap findOneAndUpdate`). */
  check: string;
  outcome: ConformanceOutcome;
  /** What the server did, one line. */
  detail: string;
}

export interface ConformanceReport {
  /** The server as it names itself (buildInfo), e.g. `FerretDB v1.24.2 (reports MongoDB 7.0.42)`. */
  server: string;
  checks: ConformanceCheck[];
  /** The first refused check: the server breaks a guarantee and is not used. */
  refused?: ConformanceCheck;
  /** How long the check took, connections included. */
  elapsedMs: number;
}

/** An index of the plan the database refused to create. */
export interface IndexRefusal {
  collection: string;
  name: string;
  /** A unique index carries a guarantee: without it the service is not ready. */
  unique: boolean;
  /** A TTL index is optional: the periodic sweep removes what it would have. */
  ttl: boolean;
  /** The server's answer, bounded: `NotImplemented (238): Index option "expireAfterSeconds" is not implemented yet`. */
  reason: string;
}

export interface IndexPlanOutcome {
  /** How many indexes of the plan exist now (created, or already there). */
  created: number;
  refused: IndexRefusal[];
}

export interface DatabaseHealth {
  /** True when the database answers a ping within `timeoutMs`. Never throws. */
  ping(timeoutMs: number): Promise<boolean>;
  /** The conformance check passed (or is not required), and every unique index of the plan exists. */
  readonly ready: boolean;
  /**
   * Runs the conformance check unless it passed before (then answers that report; undefined when the
   * check is not required). Throws `database-refused` when the server breaks a guarantee (kept: every
   * later call and every repository call answer the same), `database-unavailable` when it did not
   * answer (the next call tries again).
   */
  verifyConformance(): Promise<ConformanceReport | undefined>;
  /**
   * Creates each index of the plan on its own, so one refused index leaves the others created. Answers
   * the refused optional ones (TTL, and indexes that only make queries faster); throws `database-refused`
   * naming the first refused unique index (the guarantees need them); `database-unavailable` as always.
   */
  ensureIndexes(): Promise<IndexPlanOutcome>;
  /** Both, for /readyz: the check, then the index plan. */
  prepare(): Promise<void>;
}
