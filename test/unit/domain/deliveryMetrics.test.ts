import { describe, expect, it } from 'vitest';
import { deliveryMetrics, metricsWindow, restoreTimes, type MetricsRollout } from '../../../src/domain/deliveryMetrics.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const D0 = Date.UTC(2026, 10, 1);

/**
 * A scripted history with answers worked out by hand (the comments show the arithmetic). The
 * window is the 10 days from D0.
 */
const history: MetricsRollout[] = [
  // Before the window: ignored.
  { rolloutId: 'g0', generation: 0, mode: 'promotion', releaseId: 'rel_z', createdAt: D0 - DAY, succeededAt: D0 - DAY + 5 * MIN },
  // Deployment; lead time 70 min (release first observed at D0).
  { rolloutId: 'g1', generation: 1, mode: 'promotion', releaseId: 'rel_a', createdAt: D0 + HOUR, succeededAt: D0 + HOUR + 10 * MIN },
  // Failed change (a replica failed), rolled back by g3.
  {
    rolloutId: 'g2',
    generation: 2,
    mode: 'promotion',
    releaseId: 'rel_b',
    createdAt: D0 + DAY,
    failure: { status: 'failed', reason: 'replica-failed', at: D0 + DAY + 5 * MIN, by: 'report' },
    ended: { at: D0 + DAY + 20 * MIN, by: 'rolled-back', rolloutId: 'g3' },
  },
  // The rollback restores g2: 25 min after its failure. Not a deployment, not a change.
  { rolloutId: 'g3', generation: 3, mode: 'rollback', releaseId: 'rel_a', createdAt: D0 + DAY + 20 * MIN, succeededAt: D0 + DAY + 30 * MIN },
  // Automatic deployment; lead time 60 min.
  { rolloutId: 'g4', generation: 4, mode: 'automatic', releaseId: 'rel_c', createdAt: D0 + 2 * DAY, succeededAt: D0 + 2 * DAY + 15 * MIN },
  // Superseded before any outcome: not a change.
  {
    rolloutId: 'g5',
    generation: 5,
    mode: 'promotion',
    releaseId: 'rel_d',
    createdAt: D0 + 3 * DAY,
    ended: { at: D0 + 3 * DAY + HOUR, by: 'superseded', rolloutId: 'g6' },
  },
  // Deployment (lead time 65 min), then aborted a day later: a failed change from the abort on.
  {
    rolloutId: 'g6',
    generation: 6,
    mode: 'promotion',
    releaseId: 'rel_e',
    createdAt: D0 + 3 * DAY + HOUR,
    succeededAt: D0 + 3 * DAY + HOUR + 5 * MIN,
    ended: { at: D0 + 4 * DAY, by: 'aborted', rolloutId: 'g7' },
  },
  // The abort's rollback never succeeds (its deadline passed): restores nothing.
  {
    rolloutId: 'g7',
    generation: 7,
    mode: 'rollback',
    releaseId: 'rel_c',
    createdAt: D0 + 4 * DAY,
    failure: { status: 'failed', reason: 'required-replica-missing', at: D0 + 4 * DAY + 10 * MIN, by: 'deadline' },
    ended: { at: D0 + 5 * DAY, by: 'superseded', rolloutId: 'g8' },
  },
  // Deployment (lead time 30 min); restores g6: 1 day 10 min after its abort.
  { rolloutId: 'g8', generation: 8, mode: 'promotion', releaseId: 'rel_f', createdAt: D0 + 5 * DAY, succeededAt: D0 + 5 * DAY + 10 * MIN },
  // Failed change by the deadline, restored only by g10 (after the window): 5 days 4 min.
  {
    rolloutId: 'g9',
    generation: 9,
    mode: 'promotion',
    releaseId: 'rel_g',
    createdAt: D0 + 6 * DAY,
    failure: { status: 'failed', reason: 'required-replica-missing', at: D0 + 6 * DAY + MIN, by: 'deadline' },
  },
  // After the window: not counted itself, but it restores g9.
  { rolloutId: 'g10', generation: 10, mode: 'promotion', releaseId: 'rel_h', createdAt: D0 + 11 * DAY, succeededAt: D0 + 11 * DAY + 5 * MIN },
];

const firstObservedAt = new Map([
  ['rel_a', D0], ['rel_b', D0 + DAY - HOUR], ['rel_c', D0 + 2 * DAY - 45 * MIN], ['rel_d', D0 + 3 * DAY - MIN],
  ['rel_e', D0 + 3 * DAY], ['rel_f', D0 + 5 * DAY - 20 * MIN], ['rel_g', D0 + 6 * DAY - MIN], ['rel_h', D0 + 11 * DAY], ['rel_z', D0 - 2 * DAY],
]);

describe('delivery metrics', () => {
  it('equal the figures computed by hand from a scripted history', () => {
    // Shuffled: the computation must not depend on the order the store returns.
    const shuffled = [...history].sort((a, b) => (a.rolloutId.length - b.rolloutId.length) || b.rolloutId.localeCompare(a.rolloutId));
    const metrics = deliveryMetrics({ serviceId: 'svc', rollouts: shuffled, firstObservedAt, from: D0, to: D0 + 10 * DAY });
    expect(metrics).toEqual({
      serviceId: 'svc',
      window: { from: D0, to: D0 + 10 * DAY, days: 10 },
      // g1, g4, g6, g8.
      deploymentFrequency: { deployments: 4, perDay: 0.4 },
      // 4200, 3600, 3900, 1800 s: median (3600 + 3900) / 2, mean 13 500 / 4.
      leadTime: { count: 4, medianSeconds: 3750, meanSeconds: 3375 },
      // Changes g1, g2, g4, g6, g8, g9 (g5 superseded without an outcome); failed g2, g6, g9.
      changeFailureRate: { changes: 6, failedChanges: 3, rate: 0.5 },
      // g2 restored by g3 after 1500 s, g6 by g8 after 87 000 s, g9 by g10 after 432 240 s: mean 520 740 / 3.
      timeToRestore: { restored: 3, unrestored: 0, medianSeconds: 87_000, meanSeconds: 173_580 },
    });
    // Without g10, nothing has restored g9 yet.
    const before = deliveryMetrics({ serviceId: 'svc', rollouts: history.slice(0, -1), firstObservedAt, from: D0, to: D0 + 10 * DAY });
    expect(before.timeToRestore).toEqual({ restored: 2, unrestored: 1, medianSeconds: 44_250, meanSeconds: 44_250 });
  });

  it('a window with nothing in it has no rates, only zero counts', () => {
    const metrics = deliveryMetrics({ serviceId: 'svc', rollouts: history, firstObservedAt, from: D0 + 20 * DAY, to: D0 + 27 * DAY });
    expect(metrics.deploymentFrequency).toEqual({ deployments: 0, perDay: 0 });
    expect(metrics.leadTime).toEqual({ count: 0, medianSeconds: undefined, meanSeconds: undefined });
    expect(metrics.changeFailureRate).toEqual({ changes: 0, failedChanges: 0, rate: undefined });
  });

  it('each success restores the failed changes no earlier success restored (what the metrics series observe)', () => {
    expect(restoreTimes(history, 'g3', 3, D0 + DAY + 30 * MIN)).toEqual([25 * MIN]);
    expect(restoreTimes(history, 'g8', 8, D0 + 5 * DAY + 10 * MIN)).toEqual([DAY + 10 * MIN]);
    expect(restoreTimes(history, 'g4', 4, D0 + 2 * DAY + 15 * MIN)).toEqual([]);
  });

  it('the window defaults to the 30 days up to now', () => {
    expect(metricsWindow({}, D0)).toEqual({ from: D0 - 30 * DAY, to: D0 });
    expect(metricsWindow({ windowDays: 7, to: D0 + DAY }, 0)).toEqual({ from: D0 - 6 * DAY, to: D0 + DAY });
  });
});
