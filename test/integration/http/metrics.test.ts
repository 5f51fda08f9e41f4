import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getMetricsFromIterator, type PromHistogramData, type PromLabels, type PromMetric, type PromMetrics } from 'prom2javascript';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { REQUEST_DURATION_BUCKETS } from '../../../src/outbound/metrics.js';
import { buildTestApp, callTypedRequest, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, pushEvent, pushRelease, promote, registerCluster, rollback } from '../../support/fixtures.js';
import { fullReplicas, reportBody, reportVerified, verifiedReplica } from '../../support/reports.js';

/**
 * A scrape parsed by a Prometheus text-format parser, with exact lookups: a series is found by its
 * complete label set. prom2javascript throws on a line it cannot read and groups labelled
 * histograms by their labels (parse-prometheus-text-format merges them into one unlabelled series:
 * its open issue #13). It cannot read NaN, which the format allows and prom-client writes as `Nan`
 * for event-loop-lag statistics when no delay was sampled since the previous scrape: only those
 * lines are set aside, and every other line must parse.
 */
class Scrape {
  private constructor (readonly text: string, readonly metrics: PromMetrics) {}

  static async parse (text: string): Promise<Scrape> {
    const lines = text.split('\n');
    const notANumber = lines.filter((line) => / Nan$/.test(line));
    for (const line of notANumber) expect(line).toMatch(/^nodejs_eventloop_lag_[a-z0-9_]+ Nan$/);
    return new Scrape(text, await getMetricsFromIterator(lines.filter((line) => !notANumber.includes(line))[Symbol.iterator]()));
  }

  family (name: string, type: 'counter' | 'gauge' | 'histogram'): PromMetric {
    const family = this.metrics[name];
    expect(family, `${name} is exposed`).toBeDefined();
    expect(family?.type, name).toBe(type);
    return family as PromMetric;
  }

  private find (name: string, labels: PromLabels): { labels: PromLabels } | undefined {
    const series: Array<{ labels: PromLabels }> = this.metrics[name]?.data ?? [];
    const matching = series.filter((s) => sameLabels(s.labels, labels));
    expect(matching.length, `${name}${JSON.stringify(labels)} appears at most once`).toBeLessThanOrEqual(1);
    return matching[0];
  }

  /** A counter's value; undefined when the series does not exist. */
  value (name: string, labels: PromLabels = {}): number | undefined {
    return (this.find(name, labels) as { value?: number } | undefined)?.value;
  }

  /** A counter's value, 0 for a series that does not exist yet. */
  counter (name: string, labels: PromLabels = {}): number {
    return this.value(name, labels) ?? 0;
  }

  histogram (name: string, labels: PromLabels): PromHistogramData | undefined {
    return this.find(name, labels) as PromHistogramData | undefined;
  }

  /** Every label set of a family (to compare whole sets, not just the ones a test expects). */
  labelSets (name: string): PromLabels[] {
    return (this.metrics[name]?.data ?? []).map((s) => s.labels);
  }
}

const sameLabels = (a: PromLabels, b: PromLabels): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v);

const sortLabelSets = (sets: PromLabels[]): string[] => sets.map((s) => JSON.stringify(Object.entries(s).sort())).sort();

describe('GET /metrics', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let c1: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    c1 = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
  });
  afterAll(async () => { await t.close(); });

  const scrape = async (): Promise<Scrape> => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    return Scrape.parse(res.body);
  };

  it('counts promotions, rollbacks, conflicts, replays, reports and errors exactly, with bounded labels', async () => {
    await registerCluster(t.app, admin, 'c1', ['n1']);
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 2 });
    const plain = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 2 });
    const first = pushEvent(svc, { tag: 'a' });
    expect((await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: first })).statusCode).toBe(201);
    // The same event again: already recorded, an idempotent replay.
    expect((await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: first })).statusCode).toBe(200);
    const a = first['releaseId'] as string;
    const b = (await pushRelease(t.app, api, svc, { tag: 'b' })).releaseId;
    const never = (await pushRelease(t.app, api, svc, { tag: 'never-promoted' })).releaseId;

    // Promotions: one success, the same request again (replay), a stale generation (conflict),
    // a wrong current rollout (conflict), then a second success.
    const p1 = await promote(t.app, api, svc.id, a, { generation: 0, key: 'promote-a' });
    expect(p1.statusCode, p1.body).toBe(200);
    const ro1 = p1.json().service.data.imageDeployment.rolloutId as string;
    const replay = await promote(t.app, api, svc.id, a, { generation: 0, key: 'promote-a' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const stale = await promote(t.app, api, svc.id, b, { generation: 0 });
    expect(stale.json().code).toBe('rollout-generation-conflict');
    const mismatch = await promote(t.app, api, svc.id, b, { generation: 1, currentRolloutId: 'ro_not-the-current-one' });
    expect(mismatch.json().code).toBe('current-rollout-mismatch');
    const p2 = await promote(t.app, api, svc.id, b, { generation: 1, currentRolloutId: ro1 });
    expect(p2.statusCode, p2.body).toBe(200);
    const second = p2.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;

    // Rollbacks: one refused (never promoted), one success.
    const refused = await rollback(t.app, api, svc.id, never, { generation: 2, currentRolloutId: second.rolloutId });
    expect(refused.json().code).toBe('rollback-target-not-accepted');
    const rb = await rollback(t.app, api, svc.id, a, { generation: 2, currentRolloutId: second.rolloutId });
    expect(rb.statusCode, rb.body).toBe(200);
    const plan = rb.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;

    // Reports: applied (clear), the same sequence again (replayed), applied with a mismatch,
    // a report for the superseded rollout (refused), one without the capability (refused before
    // the domain), and one for a service without immutable policy (recorded).
    const send = (body: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(c1), payload: body });
    const applied = await send(reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1'], deployments: fullReplicas(plan, svc.id, ['n1']) }));
    expect(applied.json()).toMatchObject({ outcome: 'applied', status: { status: 'rolled-back' } });
    const again = await send(reportBody(plan, svc.id, { sequence: 1, nodeNames: ['n1'], deployments: fullReplicas(plan, svc.id, ['n1']) }));
    expect(again.json().outcome).toBe('replayed');
    const otherDigest = `sha256:${'f'.repeat(64)}`;
    const wrongDigest = [verifiedReplica(plan, svc.id, 'n1', 0), verifiedReplica(plan, svc.id, 'n1', 1, { evidence: { resolvedDigest: otherDigest } })];
    const mismatched = await send(reportBody(plan, svc.id, { sequence: 2, nodeNames: ['n1'], deployments: wrongDigest }));
    expect(mismatched.json()).toMatchObject({ outcome: 'applied', status: { status: 'mismatched', mismatchReason: 'pulled-digest-mismatch' } });
    const old = await send(reportBody(second, svc.id, { sequence: 3, nodeNames: ['n1'], deployments: [] }));
    expect(old.json().code).toBe('stale-rollout-report');
    const unknownCapability = { reporterCapabilities: { immutableImageDeploymentVersion: 2 } };
    const noCapability = await send(reportBody(plan, svc.id, { sequence: 4, nodeNames: ['n1'], deployments: [], envelope: unknownCapability }));
    expect(noCapability.json().code).toBe('runtime-capability-missing');
    const recorded = await send({ serviceId: plain.id, deployments: [], reportedAt: Date.now() });
    expect(recorded.json().outcome).toBe('recorded');

    // Reads: the same route pattern for two services; an unknown route; a TypedRequest error (HTTP 200).
    for (const id of [svc.id, plain.id]) {
      expect((await t.app.inject({ method: 'GET', url: `/v1/services/${id}`, headers: bearer(admin) })).statusCode).toBe(200);
    }
    expect((await t.app.inject({ method: 'GET', url: `/nowhere/${svc.id}` })).statusCode).toBe(404);
    const tr = await callTypedRequest(t.app, 'getServiceById', { identity: { jwt: admin }, serviceId: 'svc_missing' });
    expect(tr.statusCode).toBe(200);
    expect(tr.json().error.data.code).toBe('service-not-found');

    const m = await scrape();

    // Promotions and rollbacks: mode × outcome × code, every series exactly.
    m.family('cloudly_release_rollouts_total', 'counter');
    const rollouts = (mode: string, outcome: string, code: string) => m.counter('cloudly_release_rollouts_total', { mode, outcome, code });
    expect(rollouts('promotion', 'success', 'none')).toBe(2);
    expect(rollouts('promotion', 'replayed', 'none')).toBe(1);
    expect(rollouts('promotion', 'conflict', 'rollout-generation-conflict')).toBe(1);
    expect(rollouts('promotion', 'conflict', 'current-rollout-mismatch')).toBe(1);
    expect(rollouts('rollback', 'success', 'none')).toBe(1);
    expect(rollouts('rollback', 'refused', 'rollback-target-not-accepted')).toBe(1);
    expect(m.labelSets('cloudly_release_rollouts_total')).toHaveLength(6);

    m.family('cloudly_release_cas_conflicts_total', 'counter');
    expect(m.counter('cloudly_release_cas_conflicts_total', { kind: 'rollout-generation-conflict' })).toBe(1);
    expect(m.counter('cloudly_release_cas_conflicts_total', { kind: 'current-rollout-mismatch' })).toBe(1);
    // Reports arrived one after another: no status write lost a race (the series exists at 0).
    expect(m.value('cloudly_release_cas_conflicts_total', { kind: 'rollout-status-revision' })).toBe(0);

    m.family('cloudly_release_idempotent_replays_total', 'counter');
    expect(m.counter('cloudly_release_idempotent_replays_total', { operation: 'promotion' })).toBe(1);
    expect(m.counter('cloudly_release_idempotent_replays_total', { operation: 'push-event' })).toBe(1);
    expect(m.counter('cloudly_release_idempotent_replays_total', { operation: 'report' })).toBe(1);
    expect(m.counter('cloudly_release_idempotent_replays_total', { operation: 'rollback' })).toBe(0);
    expect(m.counter('cloudly_release_idempotent_replays_total', { operation: 'automatic' })).toBe(0);

    m.family('cloudly_release_reports_total', 'counter');
    expect(sortLabelSets(m.labelSets('cloudly_release_reports_total'))).toEqual(sortLabelSets([
      { outcome: 'applied', reason: 'none' },
      { outcome: 'replayed', reason: 'none' },
      { outcome: 'applied', reason: 'pulled-digest-mismatch' },
      { outcome: 'refused', reason: 'stale-rollout-report' },
      { outcome: 'refused', reason: 'runtime-capability-missing' },
      { outcome: 'recorded', reason: 'none' },
    ]));
    for (const labels of m.labelSets('cloudly_release_reports_total')) {
      expect(m.counter('cloudly_release_reports_total', labels), JSON.stringify(labels)).toBe(1);
    }

    // Every coded error answer, REST and TypedRequest (whose HTTP status is 200) alike.
    m.family('cloudly_release_errors_total', 'counter');
    const errors = Object.fromEntries(m.labelSets('cloudly_release_errors_total').map((l) => [l['code'], m.counter('cloudly_release_errors_total', l)]));
    expect(errors).toEqual({
      'rollout-generation-conflict': 1,
      'current-rollout-mismatch': 1,
      'rollback-target-not-accepted': 1,
      'stale-rollout-report': 1,
      'runtime-capability-missing': 1,
      'service-not-found': 1,
      'not-found': 1,
      'database-unavailable': 0,
    });
    m.family('cloudly_release_mongodb_heartbeat_failures_total', 'counter');
    expect(m.counter('cloudly_release_mongodb_heartbeat_failures_total')).toBe(0);

    // Request durations: labelled with the route pattern, never a raw URL or an id.
    const http = m.family('http_request_duration_seconds', 'histogram');
    // Ids never appear — but for the service label of the delivery series (services are admin-made, their number the operator's).
    const delivery = new RegExp('^cloudly_release_(deployments_total|change_failures_total|' +
      'lead_time_seconds_(bucket|sum|count)|time_to_restore_seconds_(bucket|sum|count))\\{');
    const withIds = m.text.split('\n').filter((line) => line.includes(svc.id) || line.includes(ro1));
    for (const line of withIds) expect(delivery.test(line) && line.includes(`service="${svc.id}"`) && !line.includes(ro1), line).toBe(true);
    const series = http.data as PromHistogramData[];
    const routes = new Set(series.map((s) => s.labels['route']));
    for (const route of routes) expect(route === '(unmatched)' || /^\/[A-Za-z0-9/:_-]*$/.test(route ?? ''), route).toBe(true);
    const count = (method: string, route: string, status: number) =>
      m.histogram('http_request_duration_seconds', { method, route, status_code: String(status) })?.count ?? 0;
    const promoteRoute = '/v1/services/:serviceId/image-releases/:releaseId/promote';
    expect(count('POST', promoteRoute, 200)).toBe(3);
    expect(count('POST', promoteRoute, 409)).toBe(2);
    expect(count('POST', '/v1/services/:serviceId/image-releases/:releaseId/rollback', 200)).toBe(1);
    expect(count('POST', '/v1/services/:serviceId/image-releases/:releaseId/rollback', 409)).toBe(1);
    expect(count('GET', '/v1/services/:serviceId', 200)).toBe(2);
    expect(count('POST', '/v1/services', 201)).toBe(2);
    expect(count('PUT', '/v1/clusters/:clusterId', 200)).toBe(1);
    expect(count('POST', '/v1/registry/push-events', 201)).toBe(3);
    expect(count('POST', '/v1/registry/push-events', 200)).toBe(1);
    expect(count('POST', '/v1/deployment-snapshots', 200)).toBe(4);
    expect(count('POST', '/v1/deployment-snapshots', 409)).toBe(1);
    expect(count('POST', '/v1/deployment-snapshots', 422)).toBe(1);
    expect(count('POST', '/typedrequest', 200)).toBe(1);
    expect(count('GET', '(unmatched)', 404)).toBe(1);
    // Nothing else was requested (this scrape is observed after it is answered).
    const total = series.reduce((n, s) => n + s.count, 0);
    expect(total).toBe(3 + 2 + 1 + 1 + 2 + 2 + 1 + 3 + 1 + 4 + 1 + 1 + 1 + 1);

    // Histograms: every configured bucket, cumulative, +Inf equal to _count, a plausible _sum.
    for (const s of series) {
      const { buckets } = s;
      expect(Object.keys(buckets).sort()).toEqual([...REQUEST_DURATION_BUCKETS.map(String), '+Inf'].sort());
      const counts = [...REQUEST_DURATION_BUCKETS.map(String), '+Inf'].map((le) => Number(buckets[le]));
      for (let i = 1; i < counts.length; i++) expect(counts[i], JSON.stringify(s)).toBeGreaterThanOrEqual(counts[i - 1] ?? 0);
      expect(counts.at(-1)).toBe(s.count);
      expect(s.sum).toBeGreaterThan(0);
    }

    // The scrape itself shows up in the next one, and counters only grow.
    const next = await scrape();
    expect(next.histogram('http_request_duration_seconds', { method: 'GET', route: '/metrics', status_code: '200' })?.count).toBe(1);
    expect(next.counter('cloudly_release_rollouts_total', { mode: 'promotion', outcome: 'success', code: 'none' })).toBe(2);
  });

  it('counts automatic promotions: promoted, replayed for a repeated event, refused while on hold', async () => {
    const rollouts = (m: Scrape, mode: string, outcome: string, code: string) => m.counter('cloudly_release_rollouts_total', { mode, outcome, code });
    const before = await scrape();
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1, deployOnPush: true });
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    expect(a.body['autoPromotion']).toMatchObject({ outcome: 'skipped', reason: 'not-enabled' });
    const first = await promote(t.app, api, svc.id, a.releaseId, { generation: 0 });
    // A push promotes once the current rollout has settled.
    await reportVerified(t.app, await t.token('cluster'), first.json().service.data.imageDeployment, svc.id, ['n1']);
    const b = pushEvent(svc, { tag: 'b' });
    const pushed = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: b });
    expect(pushed.json().autoPromotion).toMatchObject({ outcome: 'promoted', rolloutGeneration: 2 });
    const again = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: b });
    expect(again.json().autoPromotion).toMatchObject({ outcome: 'promoted', replayed: true });
    const current = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service.data.imageDeployment;
    expect((await rollback(t.app, api, svc.id, a.releaseId, { generation: 2, currentRolloutId: current.rolloutId })).statusCode).toBe(200);
    const held = await pushRelease(t.app, api, svc, { tag: 'c' });
    expect(held.body['autoPromotion']).toMatchObject({ outcome: 'skipped', reason: 'on-hold' });
    expect(first.statusCode).toBe(200);

    const after = await scrape();
    const delta = (mode: string, outcome: string, code: string) => rollouts(after, mode, outcome, code) - rollouts(before, mode, outcome, code);
    // `not-enabled` before the first explicit promotion never reaches the lifecycle: not counted.
    expect(delta('automatic', 'success', 'none')).toBe(1);
    expect(delta('automatic', 'replayed', 'none')).toBe(1);
    expect(delta('automatic', 'refused', 'automatic-promotion-skipped')).toBe(1);
    expect(delta('promotion', 'success', 'none')).toBe(1);
    expect(delta('rollback', 'success', 'none')).toBe(1);
    const replays = (m: Scrape, operation: string) => m.counter('cloudly_release_idempotent_replays_total', { operation });
    expect(replays(after, 'automatic') - replays(before, 'automatic')).toBe(1);
    expect(replays(after, 'push-event') - replays(before, 'push-event')).toBe(1);
    // Skipped automation is not an error answer: the push events themselves succeeded.
    expect(after.counter('cloudly_release_errors_total', { code: 'automatic-promotion-skipped' })).toBe(0);
  });

  it('has the default process metrics in each app\'s own registry', async () => {
    const m = await scrape();
    m.family('process_cpu_user_seconds_total', 'counter');
    m.family('process_resident_memory_bytes', 'gauge');
    m.family('nodejs_heap_size_used_bytes', 'gauge');
    m.family('nodejs_eventloop_lag_seconds', 'gauge');
    // The OpenAPI document lists it, without a token requirement.
    const doc = t.app.swagger() as { paths: Record<string, { get?: { security?: unknown[] } }> };
    expect(doc.paths['/metrics']?.get?.security).toEqual([]);
  });
});

describe('GET /metrics of another app: its own registry, METRICS_TOKEN, an unreachable database', () => {
  let t: TestApp;
  const token = 'scrape-token-0123456789';

  beforeAll(async () => {
    // Port 1 refuses at once: every request that needs the database answers database-unavailable.
    t = await buildTestApp({ METRICS_TOKEN: token, MONGODB_URI: 'mongodb://127.0.0.1:1/', MONGODB_TIMEOUT_MS: 200 });
  });
  afterAll(async () => { await t.close(); });

  it('requires the bearer token when METRICS_TOKEN is set', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(none.statusCode).toBe(401);
    expect(none.json().code).toBe('unauthenticated');
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(`${token}x`) });
    expect(wrong.statusCode).toBe(401);
    const right = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(token) });
    expect(right.statusCode).toBe(200);
    const doc = t.app.swagger() as { paths: Record<string, { get?: { security?: unknown[] } }> };
    expect(doc.paths['/metrics']?.get?.security).toEqual([{ bearer: [] }]);
  });

  it('counts database-unavailable answers and failed heartbeats, and nothing of the other app', async () => {
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    const admin = await t.token('admin');
    const read = await t.app.inject({ method: 'GET', url: '/v1/services/svc_any', headers: bearer(admin) });
    expect(read.json().code).toBe('database-unavailable');
    // Rejected by the router before any hook runs: counted as an error answer, not timed.
    const malformed = await t.app.inject({ method: 'GET', url: '/v1/services/%E0%A4%A' });
    expect(malformed.json()).toMatchObject({ status: 400, code: 'validation-failed' });

    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(token) });
    const m = await Scrape.parse(res.body);
    expect(m.counter('cloudly_release_errors_total', { code: 'database-unavailable' })).toBe(2);
    // The two 401s of the previous test.
    expect(m.counter('cloudly_release_errors_total', { code: 'unauthenticated' })).toBe(2);
    expect(m.counter('cloudly_release_errors_total', { code: 'validation-failed' })).toBe(1);
    expect(m.labelSets('http_request_duration_seconds').filter((l) => l['status_code'] === '400')).toEqual([]);
    expect(m.counter('cloudly_release_mongodb_heartbeat_failures_total')).toBeGreaterThanOrEqual(1);
    expect(m.histogram('http_request_duration_seconds', { method: 'GET', route: '/readyz', status_code: '503' })?.count).toBe(1);
    // A fresh registry: the first app's promotions are not here.
    expect(m.labelSets('cloudly_release_rollouts_total')).toEqual([]);
    expect(m.labelSets('cloudly_release_reports_total')).toEqual([]);
  });
});
