import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import type { RolloutHistoryItem } from '../../../src/domain/history.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushEvent, registerCluster, registryHost, rollback, rolloutHistory, type FixtureService } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

/**
 * Delivery metrics (src/domain/deliveryMetrics.ts) of a real service driven through the API on a
 * clock the test sets before every step (`now` of the use cases), so that every time in the
 * history is known: promotions that succeed, fail (a replica reported `failed`), recover, are
 * rolled back, aborted, superseded, automatically promoted and failed by the progress deadline.
 * The expected figures are worked out by hand below (the arithmetic is in the comments) and
 * compared with GET /v1/services/:id/delivery-metrics and with the delivery series on /metrics.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** The script's time origin: a whole minute (idempotency records are kept 48 h from the clock, so it stays near the real time). */
const T0 = Math.floor(Date.now() / MIN) * MIN;
const at = (minutes: number): number => T0 + minutes * MIN;

/** One sample of the Prometheus text exposition, found by its complete label set. */
function sample (text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(',');
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = (match[2] ?? '').split(/,(?=[a-zA-Z_]+=")/).filter(Boolean).sort().join(',');
    if (got === wanted) return Number(match[3]);
  }
  return undefined;
}

describe('delivery metrics of a scripted history', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = at(0);
  let svc: FixtureService;
  /** The rollout of each generation, as the script issued it. */
  const rolloutOf = new Map<number, IImmutableImageDeploymentPlan>();
  const releases: Record<string, string> = {};

  const services = () => t.db.collection<{ _id: string, rolloutStatus?: { rolloutId: string, lifecycle?: { open: boolean } } }>('services');
  const history = async (): Promise<RolloutHistoryItem[]> => await rolloutHistory(t.app, admin, svc.id);
  const item = async (generation: number): Promise<RolloutHistoryItem | undefined> => (await history()).find((r) => r.generation === generation);
  const currentPlan = async (): Promise<IImmutableImageDeploymentPlan> =>
    (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service.data.imageDeployment;

  /** The clock at `minutes` after T0 (it only moves forward). */
  const setClock = (minutes: number): void => {
    expect(at(minutes)).toBeGreaterThanOrEqual(clock);
    clock = at(minutes);
  };

  /** A push of release `name` (a digest of its own), first observed at `observedMinutes`. */
  async function push (name: string, observedMinutes: number) {
    const event = pushEvent(svc, { tag: name, seed: `${svc.id}-${name}`, observedAt: at(observedMinutes) });
    const res = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
    expect(res.statusCode, res.body).toBe(201);
    releases[name] = event['releaseId'] as string;
    return res.json().autoPromotion as { outcome: string, reason?: string, rolloutGeneration?: number };
  }

  /** Records the plan now current, which must be of `generation`. */
  async function issued (generation: number): Promise<IImmutableImageDeploymentPlan> {
    const plan = await currentPlan();
    expect(plan.rolloutGeneration).toBe(generation);
    expect(plan.createdAt).toBe(clock);
    rolloutOf.set(generation, plan);
    return plan;
  }

  async function promoteRelease (name: string, generation: number): Promise<IImmutableImageDeploymentPlan> {
    const res = await promote(t.app, api, svc.id, releases[name] as string, { generation: generation - 1 });
    expect(res.statusCode, res.body).toBe(200);
    return await issued(generation);
  }

  let sequence = 0;
  /** n1's one replica for the plan: running and verified, or `failed`. */
  async function report (plan: IImmutableImageDeploymentPlan, replica: 'verified' | 'failed'): Promise<string> {
    const deployments = [verifiedReplica(plan, svc.id, 'n1', 0, replica === 'failed' ? { status: 'failed' } : {})];
    const body = reportBody(plan, svc.id, { sequence: ++sequence, session: 'coreflow-n1', nodeNames: ['n1'], deployments, reportedAt: clock });
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(cluster), payload: body });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().status.status;
  }

  /** Waits until the history shows the generation so (the lifecycle pass has copied its milestones). */
  async function historyShows (generation: number, expected: Partial<RolloutHistoryItem>): Promise<void> {
    await eventually(`generation ${generation} ${JSON.stringify(expected)}`, async () => {
      expect(await item(generation)).toMatchObject(expected);
    }, 200, 50);
  }

  const metrics = (query = '', token = admin) =>
    t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/delivery-metrics${query}`, headers: bearer(token) });

  beforeAll(async () => {
    t = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 100 }, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
    const repository = `team/dora-${randomBytes(4).toString('hex')}`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        deployOnPush: true,
        // One replica, counted as soon as it is reported; an hour without progress fails a rollout.
        rolloutPolicy: { stabilityWindowSeconds: 0, progressDeadlineSeconds: 3600 },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    svc = { id: created.json().service.id, repository };

    // Releases A, F and B are pushed before the first promotion (automation is not on yet).
    expect(await push('A', 0)).toEqual({ outcome: 'skipped', reason: 'not-enabled' });
    setClock(5);
    expect(await push('F', 5)).toEqual({ outcome: 'skipped', reason: 'not-enabled' });
    setClock(30);
    expect(await push('B', 30)).toEqual({ outcome: 'skipped', reason: 'not-enabled' });

    // g1: promote A at 40, verified at 50.
    setClock(40);
    const g1 = await promoteRelease('A', 1);
    setClock(50);
    expect(await report(g1, 'verified')).toBe('succeeded');
    await historyShows(1, { outcome: 'succeeded', succeededAt: at(50) });

    // g2: promote B at 60, its replica fails at 65, rolled back to A (g3) at 70, which is verified at 80.
    setClock(60);
    const g2 = await promoteRelease('B', 2);
    setClock(65);
    expect(await report(g2, 'failed')).toBe('failed');
    await historyShows(2, { outcome: 'failed', failedAt: at(65), failedBy: 'report', failureReason: 'replica-failed' });
    setClock(70);
    const rolledBack = await rollback(t.app, api, svc.id, releases['A'] as string, { generation: 2, currentRolloutId: g2.rolloutId });
    expect(rolledBack.statusCode, rolledBack.body).toBe(200);
    const g3 = await issued(3);
    setClock(80);
    expect(await report(g3, 'verified')).toBe('rolled-back');
    await historyShows(3, { mode: 'rollback', outcome: 'rolled-back', succeededAt: at(80) });

    // C is pushed at 100 (observed at 95): the rollback holds automation.
    setClock(100);
    expect(await push('C', 95)).toEqual({ outcome: 'skipped', reason: 'on-hold' });

    // g4: promote C at 110 (lifts the hold), verified at 120, aborted at 150 (g5: back to A), which is verified at 160.
    setClock(110);
    const g4 = await promoteRelease('C', 4);
    setClock(120);
    expect(await report(g4, 'verified')).toBe('succeeded');
    await historyShows(4, { outcome: 'succeeded', succeededAt: at(120) });
    setClock(150);
    const abortBody = { expectedCurrentRolloutId: g4.rolloutId, expectedRolloutGeneration: 4 };
    const abortRequest = { method: 'POST' as const, url: `/v1/services/${svc.id}/rollout/abort`, headers: { ...bearer(api), 'idempotency-key': 'abort-g4' } };
    const aborted = await t.app.inject({ ...abortRequest, payload: abortBody });
    expect(aborted.statusCode, aborted.body).toBe(200);
    expect(aborted.json().service.data.imageDeployment).toMatchObject({ mode: 'rollback', releaseId: releases['A'], rollbackOfRolloutId: g4.rolloutId });
    // The same request again is the same answer, and no second rollout.
    const replayed = await t.app.inject({ ...abortRequest, payload: abortBody });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toBe(aborted.body);
    const g5 = await issued(5);
    setClock(160);
    expect(await report(g5, 'verified')).toBe('rolled-back');
    await historyShows(5, { outcome: 'rolled-back', succeededAt: at(160), trigger: { kind: 'abort' } });
    await historyShows(4, { endedAt: at(150), endedBy: { kind: 'aborted', rolloutId: g5.rolloutId } });

    // D is pushed at 200 (observed at 205 — the registry's clock is ahead): the abort holds automation.
    setClock(200);
    expect(await push('D', 205)).toEqual({ outcome: 'skipped', reason: 'on-hold' });

    // g6: promote D at 210, its replica fails at 215, then recovers: verified at 225.
    setClock(210);
    const g6 = await promoteRelease('D', 6);
    setClock(215);
    expect(await report(g6, 'failed')).toBe('failed');
    await historyShows(6, { outcome: 'failed', failedAt: at(215) });
    setClock(225);
    expect(await report(g6, 'verified')).toBe('succeeded');
    await historyShows(6, { outcome: 'succeeded', succeededAt: at(225), failedAt: at(215) });

    // g7: E is pushed at 300 (observed at 290): promoted automatically, verified at 320.
    setClock(300);
    expect(await push('E', 290)).toMatchObject({ outcome: 'promoted', rolloutGeneration: 7 });
    const g7 = await issued(7);
    expect(g7.mode).toBe('automatic');
    setClock(320);
    expect(await report(g7, 'verified')).toBe('succeeded');
    await historyShows(7, { outcome: 'succeeded', succeededAt: at(320) });

    // g8: promote B again at 330, superseded at 335 by g9 (F) before any report.
    setClock(330);
    await promoteRelease('B', 8);
    setClock(335);
    const g9 = await promoteRelease('F', 9);
    // No report for g9: at 400 its hour without progress (from 335) has passed; the sweeper fails it then.
    setClock(400);
    await historyShows(9, { outcome: 'failed', failedBy: 'deadline', failedAt: at(400), failureReason: 'required-replica-missing' });
    await eventually('the lifecycle of g9 closed', async () => {
      const doc = await services().findOne({ _id: svc.id });
      expect(doc?.rolloutStatus).toMatchObject({ rolloutId: g9.rolloutId, lifecycle: { open: false } });
    }, 200, 50);
  });
  afterAll(async () => { await t.close(); });

  it('the history has each rollout\'s outcome and times as scripted', async () => {
    const rows = (await history()).map((r) => [r.generation, r.mode, r.outcome, r.createdAt, r.succeededAt, r.failedAt, r.endedAt, r.endedBy?.kind]);
    expect(rows.reverse()).toEqual([
      [1, 'promotion', 'succeeded', at(40), at(50), undefined, at(60), 'superseded'],
      [2, 'promotion', 'failed', at(60), undefined, at(65), at(70), 'rolled-back'],
      [3, 'rollback', 'rolled-back', at(70), at(80), undefined, at(110), 'superseded'],
      [4, 'promotion', 'succeeded', at(110), at(120), undefined, at(150), 'aborted'],
      [5, 'rollback', 'rolled-back', at(150), at(160), undefined, at(210), 'superseded'],
      [6, 'promotion', 'succeeded', at(210), at(225), at(215), at(300), 'superseded'],
      [7, 'automatic', 'succeeded', at(300), at(320), undefined, at(330), 'superseded'],
      [8, 'promotion', 'superseded', at(330), undefined, undefined, at(335), 'superseded'],
      [9, 'promotion', 'failed', at(335), undefined, at(400), undefined, undefined],
    ]);
  });

  /*
   * The figures by hand. First observations: A 0, F 5, B 30, C 95, D 205, E 290 (minutes after T0).
   *
   * Deployments (promotions, manual or automatic, that succeeded; by succeededAt):
   *   g1 (A) at 50, g4 (C) at 120, g6 (D) at 225, g7 (E) at 320                      → 4
   * Lead times (succeededAt − first observation of the release):
   *   g1 50 − 0 = 50 min = 3000 s; g4 120 − 95 = 25 min = 1500 s;
   *   g6 225 − 205 = 20 min = 1200 s; g7 320 − 290 = 30 min = 1800 s
   *   sorted 1200, 1500, 1800, 3000: median (1500 + 1800) / 2 = 1650 s; mean 7500 / 4 = 1875 s
   * Changes (promotions issued in the window that reached an outcome): g1, g2, g4, g6, g7, g9
   *   (g3 and g5 are rollbacks, g8 was superseded before any outcome)                  → 6
   * Failed changes: g2 (failed at 65), g4 (aborted at 150, after succeeding), g6 (failed at 215
   *   before succeeding), g9 (failed by the deadline at 400)                            → 4; rate 4 / 6
   * Time to restore (from the failure to the next success of it or a later rollout):
   *   g2: 65 → g3 rolled back at 80 = 15 min = 900 s; g4: 150 → g5 at 160 = 10 min = 600 s;
   *   g6: 215 → g6 itself at 225 = 10 min = 600 s; g9: nothing succeeded since     → unrestored 1
   *   restored 3: sorted 600, 600, 900: median 600 s; mean 2100 / 3 = 700 s
   */
  const leadTimes = [3000, 1500, 1200, 1800];
  const restoreTimes = [900, 600, 600];
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

  it('GET delivery-metrics equals the figures computed by hand', async () => {
    const res = await metrics(`?windowDays=1&to=${T0 + DAY}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      serviceId: svc.id,
      window: { from: T0, to: T0 + DAY, days: 1 },
      deploymentFrequency: { deployments: 4, perDay: 4 },
      leadTime: { count: 4, medianSeconds: 1650, meanSeconds: 1875 },
      changeFailureRate: { changes: 6, failedChanges: 4, rate: 4 / 6 },
      timeToRestore: { restored: 3, unrestored: 1, medianSeconds: 600, meanSeconds: 700 },
    });
    expect(sum(leadTimes) / leadTimes.length).toBe(1875);
    expect(sum(restoreTimes) / restoreTimes.length).toBe(700);
  });

  it('the window: its length and end, the default (30 days up to now), and both boundaries', async () => {
    const get = async (query: string) => {
      const res = await metrics(query);
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    // Two days ending at T0 + 1 day: the same events, half the frequency.
    const twoDays = await get(`?windowDays=2&to=${T0 + DAY}`);
    expect(twoDays.window).toEqual({ from: T0 - DAY, to: T0 + DAY, days: 2 });
    expect(twoDays.deploymentFrequency).toEqual({ deployments: 4, perDay: 2 });

    // The default: 30 days up to the clock (at 400).
    const byDefault = await get('');
    expect(byDefault.window).toEqual({ from: at(400) - 30 * DAY, to: at(400), days: 30 });
    expect(byDefault.deploymentFrequency).toEqual({ deployments: 4, perDay: 4 / 30 });
    expect(byDefault.changeFailureRate).toEqual({ changes: 6, failedChanges: 4, rate: 4 / 6 });

    // Up to 200 (one day): deployments g1 (50) and g4 (120), lead times 3000 and 1500 s: median = mean = 2250 s.
    // Changes issued before 200: g1, g2, g4; failed g2 and g4 (restored after 900 and 600 s: median = mean = 750 s).
    const early = await get(`?windowDays=1&to=${at(200)}`);
    expect(early).toMatchObject({
      window: { from: at(200) - DAY, to: at(200), days: 1 },
      deploymentFrequency: { deployments: 2, perDay: 2 },
      leadTime: { count: 2, medianSeconds: 2250, meanSeconds: 2250 },
      changeFailureRate: { changes: 3, failedChanges: 2, rate: 2 / 3 },
      timeToRestore: { restored: 2, unrestored: 0, medianSeconds: 750, meanSeconds: 750 },
    });

    // The end is exclusive: up to 50 exactly, g1's success (at 50) is not in; a millisecond later it is.
    const beforeFirst = await get(`?windowDays=1&to=${at(50)}`);
    expect(beforeFirst.deploymentFrequency).toEqual({ deployments: 0, perDay: 0 });
    expect(beforeFirst.leadTime).toEqual({ count: 0 });
    // g1 was issued at 40, in the window, and its outcome counts whenever it came.
    expect(beforeFirst.changeFailureRate).toEqual({ changes: 1, failedChanges: 0, rate: 0 });
    expect((await get(`?windowDays=1&to=${at(50) + 1}`)).deploymentFrequency).toEqual({ deployments: 1, perDay: 1 });
    // The start is inclusive: a day ending a day after g1's issue (at 40) still holds it; a millisecond later it does not.
    expect((await get(`?windowDays=1&to=${at(40) + DAY}`)).changeFailureRate.changes).toBe(6);
    expect((await get(`?windowDays=1&to=${at(40) + DAY + 1}`)).changeFailureRate.changes).toBe(5);

    // Nothing in it: zero counts and no rates or averages at all.
    const empty = await get(`?windowDays=1&to=${at(30)}`);
    expect(empty).toEqual({
      serviceId: svc.id,
      window: { from: at(30) - DAY, to: at(30), days: 1 },
      deploymentFrequency: { deployments: 0, perDay: 0 },
      leadTime: { count: 0 },
      changeFailureRate: { changes: 0, failedChanges: 0 },
      timeToRestore: { restored: 0, unrestored: 0 },
    });
  });

  it('an unknown service is 404, a bad query value 400 naming it; every reader may read it, a cluster may not', async () => {
    const unknown = await t.app.inject({ method: 'GET', url: '/v1/services/svc_missing/delivery-metrics', headers: bearer(admin) });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('service-not-found');

    const bad: Array<[string, string]> = [
      ['windowDays=0', '/querystring/windowDays'],
      ['windowDays=367', '/querystring/windowDays'],
      ['windowDays=week', '/querystring/windowDays'],
      ['to=0', '/querystring/to'],
      ['to=-5', '/querystring/to'],
      ['to=yesterday', '/querystring/to'],
      // Past the last instant a Date can hold (and past 2^53: no longer an exact integer).
      ['to=8640000000000001', '/querystring/to'],
      ['to=99999999999999999999', '/querystring/to'],
      ['since=1', '/querystring/since'],
    ];
    for (const [query, field] of bad) {
      const res = await metrics(`?${query}`);
      expect(res.statusCode, `${query}: ${res.body}`).toBe(400);
      expect(res.json().code, query).toBe('validation-failed');
      expect(res.json().problems.map((p: { field: string }) => p.field), query).toContain(field);
    }

    for (const role of ['admin', 'user', 'api'] as const) {
      const res = await metrics('', await t.token(role));
      expect(res.statusCode, `${role}: ${res.body}`).toBe(200);
      expect(res.json().deploymentFrequency.deployments, role).toBe(4);
    }
    const byCluster = await metrics('', cluster);
    expect(byCluster.statusCode).toBe(403);
    expect(byCluster.json().code).toBe('forbidden');
    const anonymous = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/delivery-metrics` });
    expect(anonymous.statusCode).toBe(401);
  });

  it('a query number that is not an integer is refused, not truncated into another window', async () => {
    // Each of these would silently name a different window: 1.5 days read as 1, `to` of 1.8e12 read as 1 ms after the epoch.
    const queries = ['windowDays=1.5', 'windowDays=2.9', 'windowDays=1e1', `to=${T0 + DAY}.5`, 'to=1.8e12'];
    const answered: string[] = [];
    for (const query of queries) {
      const res = await metrics(`?${query}`);
      if (res.statusCode !== 400) answered.push(`${query} → ${res.statusCode} window ${JSON.stringify(res.json().window)}`);
      else expect(res.json().code, query).toBe('validation-failed');
    }
    expect(answered).toEqual([]);
  });

  it('the delivery series on /metrics carry the same counts as the REST figures', async () => {
    const res = await metrics(`?windowDays=1&to=${T0 + DAY}`);
    const rest = res.json();
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const service = { service: svc.id };
    const series = {
      deployments: sample(text, 'cloudly_release_deployments_total', service),
      changeFailures: sample(text, 'cloudly_release_change_failures_total', service),
      leadTimeCount: sample(text, 'cloudly_release_lead_time_seconds_count', service),
      leadTimeSum: sample(text, 'cloudly_release_lead_time_seconds_sum', service),
      restoreCount: sample(text, 'cloudly_release_time_to_restore_seconds_count', service),
      restoreSum: sample(text, 'cloudly_release_time_to_restore_seconds_sum', service),
    };
    expect(series).toEqual({
      deployments: rest.deploymentFrequency.deployments,
      changeFailures: rest.changeFailureRate.failedChanges,
      leadTimeCount: rest.leadTime.count,
      leadTimeSum: rest.leadTime.meanSeconds * rest.leadTime.count,
      restoreCount: rest.timeToRestore.restored,
      restoreSum: rest.timeToRestore.meanSeconds * rest.timeToRestore.restored,
    });
    // And the same as by hand.
    expect(series).toEqual({
      deployments: 4, changeFailures: 4, leadTimeCount: 4, leadTimeSum: sum(leadTimes), restoreCount: 3, restoreSum: sum(restoreTimes),
    });
    // Histogram buckets: cumulative lead times ≤ 1800 s: 1200, 1500, 1800 → 3; ≤ 900 s restore: all 3.
    expect(sample(text, 'cloudly_release_lead_time_seconds_bucket', { ...service, le: '1800' })).toBe(3);
    expect(sample(text, 'cloudly_release_lead_time_seconds_bucket', { ...service, le: '3600' })).toBe(4);
    expect(sample(text, 'cloudly_release_time_to_restore_seconds_bucket', { ...service, le: '300' })).toBe(0);
    expect(sample(text, 'cloudly_release_time_to_restore_seconds_bucket', { ...service, le: '900' })).toBe(3);
  });

  it('the rollout outcome series count each milestone once, by mode', async () => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const outcome = (mode: string, name: string) => sample(text, 'cloudly_release_rollout_outcomes_total', { mode, outcome: name }) ?? 0;
    // Succeeded: g1, g4, g6 (promotion), g7 (automatic), g3, g5 (rollback); failed: g2, g6; the deadline: g9.
    expect({
      promotionSucceeded: outcome('promotion', 'succeeded'),
      automaticSucceeded: outcome('automatic', 'succeeded'),
      rollbackSucceeded: outcome('rollback', 'succeeded'),
      promotionFailed: outcome('promotion', 'failed'),
      promotionDeadline: outcome('promotion', 'deadline-exceeded'),
      mismatched: outcome('promotion', 'mismatched'),
    }).toEqual({ promotionSucceeded: 3, automaticSucceeded: 1, rollbackSucceeded: 2, promotionFailed: 2, promotionDeadline: 1, mismatched: 0 });
  });
});
