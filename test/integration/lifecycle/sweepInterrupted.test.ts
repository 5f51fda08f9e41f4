/**
 * The lifecycle sweeper (src/operations/lifecycle.ts) when the database fails it or the process stops:
 * - a sweep that meets `database-unavailable` stops there (the next sweep goes on from that rollout)
 *   instead of trying every other due rollout against a database that is away — each try costs a
 *   server selection timeout, so a sweep over thousands of due rollouts in an outage lasted hours;
 * - a sweep stops between two rollouts once the sweeper is stopped, so SIGTERM (app.close) does not
 *   wait for the rest of a long sweep (shutdown was held until SHUTDOWN_TIMEOUT_MS, exit 1).
 * The database misbehaves through a proxy that counts the commands sent to it; no sleeps prove
 * anything: the sweeper's own counter and the proxy's counts are the evidence.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, promotedService, registerCluster, type FixtureService } from '../../support/fixtures.js';
import { startMisbehavingProxy, type MisbehavingProxy } from '../../support/misbehavingProxy.js';
import { eventually } from '../../support/wait.js';
import { mapLimit } from '../faults/helpers.js';

const DUE = 24;
const WRITES = ['insert', 'update', 'delete', 'findAndModify'];

describe('the lifecycle sweeper when the database fails it, and when the process stops', () => {
  let proxy: MisbehavingProxy;
  let t: TestApp | undefined;
  let tokens: { admin: string, api: string };
  let clock = Date.now();

  beforeAll(async () => {
    proxy = await startMisbehavingProxy(inject('mongoUri'));
    t = await buildTestApp({ MONGODB_URI: proxy.uri, LIFECYCLE_SWEEP_INTERVAL_MS: 100 }, { now: () => clock });
    const [admin, api] = await Promise.all([t.token('admin'), t.token('api')]);
    tokens = { admin, api };
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });

  afterAll(async () => {
    proxy?.resume();
    await t?.close();
    await proxy?.close();
  });

  /** `count` services promoted with a 30 s progress deadline and no report: all due once the clock moves a minute. */
  async function dueRollouts (count: number): Promise<FixtureService[]> {
    const promoted = await mapLimit(Array.from({ length: count }, (_, i) => i), 6, async () =>
      await promotedService(t!.app, tokens, { clusterIds: ['c1'], replicasPerNode: 1, rolloutPolicy: { progressDeadlineSeconds: 30 } }));
    return promoted.map((p) => p.svc);
  }

  async function sweeps (): Promise<number> {
    const metrics = (await t!.app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(metrics.split('\n').find((l) => l.startsWith('cloudly_release_lifecycle_sweeps_total '))?.split(' ')[1]);
  }

  const writesSent = (): number => WRITES.reduce((sum, name) => sum + (proxy.sent.get(name) ?? 0), 0);

  it('a sweep that meets database-unavailable stops there, and the sweeps after the database is back decide every due rollout', async () => {
    const services = await dueRollouts(DUE);
    proxy.refuseWrites();
    clock += 60_000;
    const before = await sweeps();
    // Three sweeps ended after the refusals began: at least two whole sweeps met a database that refuses every write.
    await eventually('three sweeps against the refusing database', async () => { expect(await sweeps()).toBeGreaterThanOrEqual(before + 3); }, 600, 50);
    const refused = proxy.refused;
    // Each whole sweep used to try all DUE deadline decisions (>= 2 × DUE refusals by now); now each tries one and stops.
    expect(refused, `${refused} writes refused over the sweeps`).toBeGreaterThan(0);
    expect(refused, `${refused} writes refused over the sweeps`).toBeLessThan(DUE);

    proxy.resume();
    await eventually('every due rollout failed by its deadline once the database takes writes again', async () => {
      const views = await Promise.all(services.map(async (svc) =>
        (await t!.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(tokens.admin) })).json()));
      expect(views.filter((v) => v.status?.status === 'failed' && v.lifecycle?.deadlineExceeded !== undefined).length).toBe(DUE);
    }, 600, 100);
  }, 120_000);

  it('a sweep in progress when the process stops ends after the rollout it is on', async () => {
    proxy.resume();
    const services = await dueRollouts(12);
    // Every command answered 300 ms late: a sweep over 12 due rollouts takes several seconds.
    proxy.slow(300);
    const writesBefore = writesSent();
    clock += 60_000;
    await eventually('the sweeper decides the first of them', async () => { expect(writesSent()).toBeGreaterThan(writesBefore); }, 600, 20);
    const closing = t!;
    t = undefined;
    const atStop = writesSent();
    await closing.close();
    const after = writesSent() - atStop;
    // The rollout in progress finishes its decision (a few writes); the other due rollouts are left to the next process.
    expect(after, `${after} writes after the stop began (${services.length} rollouts were due)`).toBeLessThan(services.length / 2);
  }, 120_000);
});
