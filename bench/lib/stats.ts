/** Latency samples (ms) of one measured block, or several blocks merged. */
export interface Samples {
  /** Completed operations (any outcome). */
  ops: number;
  /** Wall-clock time of the blocks, summed (ms). */
  elapsedMs: number;
  latenciesMs: number[];
  /** Outcome counts, e.g. `200`, `409`, `error:ECONNRESET`. */
  outcomes: Record<string, number>;
  /** CPU time (ms) of each process of interest during the blocks, by name. */
  cpuMs: Record<string, number>;
}

export interface Summary {
  ops: number;
  elapsedMs: number;
  /** ops per second over the measured wall-clock time. */
  throughput: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
  outcomes: Record<string, number>;
  /** CPU ms per operation, by process (server, db, client, floor). */
  cpuPerOpMs: Record<string, number>;
}

export const emptySamples = (): Samples => ({ ops: 0, elapsedMs: 0, latenciesMs: [], outcomes: {}, cpuMs: {} });

export function merge (into: Samples, more: Samples): Samples {
  into.ops += more.ops;
  into.elapsedMs += more.elapsedMs;
  for (const v of more.latenciesMs) into.latenciesMs.push(v);
  for (const [k, n] of Object.entries(more.outcomes)) into.outcomes[k] = (into.outcomes[k] ?? 0) + n;
  for (const [k, n] of Object.entries(more.cpuMs)) into.cpuMs[k] = (into.cpuMs[k] ?? 0) + n;
  return into;
}

/** Nearest-rank percentile: the smallest sample with at least p of the samples at or below it. */
export function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1] as number;
}

export function summarize (s: Samples): Summary {
  const sorted = [...s.latenciesMs].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  const cpuPerOpMs: Record<string, number> = {};
  for (const [k, ms] of Object.entries(s.cpuMs)) cpuPerOpMs[k] = s.ops > 0 ? ms / s.ops : Number.NaN;
  return {
    ops: s.ops,
    elapsedMs: s.elapsedMs,
    throughput: s.elapsedMs > 0 ? (s.ops * 1000) / s.elapsedMs : Number.NaN,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    mean: sorted.length > 0 ? sum / sorted.length : Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
    outcomes: s.outcomes,
    cpuPerOpMs,
  };
}

export const countOutcome = (outcomes: Record<string, number>, key: string): void => {
  outcomes[key] = (outcomes[key] ?? 0) + 1;
};
