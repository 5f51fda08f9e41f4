import { Type, type Static } from '@sinclair/typebox';
import type { RolloutRecord } from './rollouts.js';

/**
 * Delivery metrics (the DORA four) of one service over a time window, computed from its stored
 * rollout history — a pure function of the records and each release's first observation.
 * Definitions (docs/lifecycle.md "Delivery metrics" says the same):
 *
 * - a **deployment** is a promotion (manual or automatic) that succeeded; it belongs to the
 *   window its `succeededAt` falls in. Frequency = deployments / window days.
 * - **lead time** of a deployment = its `succeededAt` − its release's `firstObservedAt` (the
 *   first push of that digest): how long a change took from the registry to running verified.
 * - a **change** is a promotion issued (`createdAt`) in the window that reached an outcome: it
 *   succeeded, failed or mismatched, or was rolled back / aborted. Superseded before any outcome,
 *   or still in progress: not counted. A change **failed** when it failed or mismatched before
 *   succeeding, or was rolled back or aborted (after succeeding too). Change-failure rate =
 *   failed changes / changes.
 * - **time to restore** of a failed change = from the failure (its first failure, else the
 *   rollback that ended it) to the next success of this or any later rollout (even one after
 *   the window: the failure is the window's, its recovery time is whatever it took); a failure
 *   nothing restored yet is counted as unrestored.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

export const DeliveryMetricsQuery = Type.Object({
  windowDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, description: 'window length in days (default 30)' })),
  to: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 8_640_000_000_000_000,
    description: 'window end, ms since the epoch (default: now; at most the last instant a date can hold)',
  })),
}, { additionalProperties: false });
export type DeliveryMetricsQuery = Static<typeof DeliveryMetricsQuery>;

const Seconds = Type.Number({ minimum: 0 });

export const DeliveryMetrics = Type.Object({
  serviceId: Type.String(),
  window: Type.Object({ from: Type.Integer(), to: Type.Integer(), days: Type.Integer() }),
  deploymentFrequency: Type.Object({ deployments: Type.Integer(), perDay: Type.Number() }),
  leadTime: Type.Object({ count: Type.Integer(), medianSeconds: Type.Optional(Seconds), meanSeconds: Type.Optional(Seconds) }),
  changeFailureRate: Type.Object({
    changes: Type.Integer(),
    failedChanges: Type.Integer(),
    rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'absent when there was no change' })),
  }),
  timeToRestore: Type.Object({
    restored: Type.Integer(),
    unrestored: Type.Integer(),
    medianSeconds: Type.Optional(Seconds),
    meanSeconds: Type.Optional(Seconds),
  }),
});
export type DeliveryMetrics = Static<typeof DeliveryMetrics>;

/** The rollout fields the metrics read. */
export type MetricsRollout = Pick<RolloutRecord, 'rolloutId' | 'generation' | 'mode' | 'releaseId' | 'createdAt' | 'succeededAt' | 'failure' | 'ended'>;

export interface DeliveryMetricsInput {
  serviceId: string;
  rollouts: readonly MetricsRollout[];
  /** releaseId → firstObservedAt */
  firstObservedAt: ReadonlyMap<string, number>;
  from: number;
  to: number;
}

const isPromotion = (r: MetricsRollout): boolean => r.mode === 'promotion' || r.mode === 'automatic';
const inWindow = (t: number | undefined, from: number, to: number): t is number => t !== undefined && t >= from && t < to;

function median (values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

const mean = (values: number[]): number | undefined => (values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length);

const seconds = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : Math.round(ms) / 1000);

/** When a change failed (undefined: it did not): its first failure before success, else the rollback or abort that ended it. */
export function changeFailedAt (r: MetricsRollout): number | undefined {
  if (r.failure && (r.succeededAt === undefined || r.failure.at < r.succeededAt)) return r.failure.at;
  if (r.ended && (r.ended.by === 'rolled-back' || r.ended.by === 'aborted')) return r.ended.at;
  return undefined;
}

/**
 * The failed changes a success restores (for the metrics, as it happens): every failed change up
 * to the rollout that succeeded that no earlier success restored — each one's time to restore in ms.
 */
export function restoreTimes (history: readonly MetricsRollout[], rolloutId: string, generation: number, succeededAt: number): number[] {
  const earlier = history.filter((r) => r.rolloutId !== rolloutId && r.generation <= generation);
  return [...earlier, ...history.filter((r) => r.rolloutId === rolloutId)].flatMap((r) => {
    const failedAt = changeFailedAt(r);
    if (failedAt === undefined || failedAt > succeededAt || !isPromotion(r)) return [];
    const restoredBefore = history.some((later) => later.rolloutId !== rolloutId && later.generation >= r.generation &&
      later.succeededAt !== undefined && later.succeededAt >= failedAt && later.succeededAt < succeededAt);
    return restoredBefore ? [] : [succeededAt - failedAt];
  });
}

const reachedOutcome = (r: MetricsRollout): boolean => r.succeededAt !== undefined || changeFailedAt(r) !== undefined;

export function deliveryMetrics (input: DeliveryMetricsInput): DeliveryMetrics {
  const { from, to } = input;
  const days = Math.max(1, Math.round((to - from) / DAY_MS));
  const byGeneration = [...input.rollouts].sort((a, b) => a.generation - b.generation);

  const deployments = byGeneration.filter((r) => isPromotion(r) && inWindow(r.succeededAt, from, to));
  const leadTimes = deployments.flatMap((r) => {
    const observed = input.firstObservedAt.get(r.releaseId);
    return observed === undefined || r.succeededAt === undefined ? [] : [Math.max(0, r.succeededAt - observed)];
  });

  const changes = byGeneration.filter((r) => isPromotion(r) && inWindow(r.createdAt, from, to) && reachedOutcome(r));
  const failed = changes.filter((r) => changeFailedAt(r) !== undefined);
  const restoreTimes: number[] = [];
  let unrestored = 0;
  for (const r of failed) {
    const failedAt = changeFailedAt(r) ?? r.createdAt;
    const restore = byGeneration.find((later) => later.generation >= r.generation && later.succeededAt !== undefined && later.succeededAt >= failedAt);
    if (restore?.succeededAt === undefined) unrestored++;
    else restoreTimes.push(restore.succeededAt - failedAt);
  }

  return {
    serviceId: input.serviceId,
    window: { from, to, days },
    deploymentFrequency: { deployments: deployments.length, perDay: deployments.length / days },
    leadTime: { count: leadTimes.length, medianSeconds: seconds(median(leadTimes)), meanSeconds: seconds(mean(leadTimes)) },
    changeFailureRate: { changes: changes.length, failedChanges: failed.length, rate: changes.length === 0 ? undefined : failed.length / changes.length },
    timeToRestore: { restored: restoreTimes.length, unrestored, medianSeconds: seconds(median(restoreTimes)), meanSeconds: seconds(mean(restoreTimes)) },
  };
}

/** The window a query names: `windowDays` (default 30) ending at `to` (default now). */
export function metricsWindow (query: DeliveryMetricsQuery, now: number): { from: number, to: number } {
  const to = query.to ?? now;
  return { from: to - (query.windowDays ?? 30) * DAY_MS, to };
}
