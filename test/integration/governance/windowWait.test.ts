import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../../src/outbound/metrics.js';
import { rolloutIssuer } from '../../../src/operations/issueRollout.js';
import { STOPPED_RETRY_MS, promoteAfterWindows } from '../../../src/operations/windowPromotion.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import {
  bearer, createFixtureService, fullRolloutHistory, promoteAndSucceed, pushEvent, pushRelease, registerCluster, type FixtureService,
} from '../../support/fixtures.js';

/**
 * A push whose automatic promotion meets a closed window or stop-the-line waits and goes out when
 * promotions open (docs/governance.md "Windows"): the newest push waits, nothing is issued while closed
 * (however often the sweepers look, and without telling the refusal again), and once open exactly one
 * rollout of it is issued — with two sweeping "processes" (their own stores and issuers over the app's
 * database) at once, and a redelivery of the push issuing nothing more. The server's clock is the test's.
 */

const quiet = { info: () => {}, warn: () => {} };
const freeze = {
  name: 'weekend-freeze', kind: 'deny', start: '2025-01-03T16:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=FR', duration: 'P2DT12H',
};

describe('pushes that wait for promotions to open', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();
  const stores: Store[] = [];

  /** A process's window pass over its own store and issuer (what its sweeper runs). */
  function sweeper (): () => Promise<number> {
    const store = openStore({ uri: t.config.MONGODB_URI ?? '', dbName: t.config.MONGODB_DB, timeoutMs: 5_000 });
    stores.push(store);
    const repos = store.repositories;
    const now = (): number => clock;
    const rollouts = rolloutIssuer({ repos, now, leaseMs: 15_000, fault: () => {}, telemetry: new Metrics(), log: quiet });
    return async () => await promoteAfterWindows({ repos, rollouts, now, log: quiet }, () => false);
  }

  beforeAll(async () => {
    t = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 60_000 }, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await t?.close();
  });

  const history = (svc: FixtureService) => fullRolloutHistory(t.app, admin, svc.id);
  /** A service that promotes on push: automatic promotion starts after its first rollout, here promoted and succeeded at `at`. */
  async function automated (promotionPolicy?: Record<string, unknown>): Promise<FixtureService> {
    const svc = await createFixtureService(t.app, admin, {
      deployOnPush: true, replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 }, ...(promotionPolicy ? { promotionPolicy } : {}),
    });
    const first = await pushRelease(t.app, api, svc, { tag: 'v0', observedAt: clock });
    await promoteAndSucceed(t.app, { api, cluster }, svc, first, 0, ['n1']);
    return svc;
  }
  const refusedEvents = async (svc: FixtureService) =>
    (await new EventLogStore(t.database).eventsAfter(svc.id, 0, 100)).filter((e) => e.type === 'promotion.refused');

  it('inside a weekly deny window (across the DST change): the newest push waits and is promoted once at the opening', async () => {
    clock = Date.UTC(2025, 2, 27, 12); // Thursday 27 March 2025: open
    const svc = await automated({ windows: [freeze] });
    const [a, b] = [sweeper(), sweeper()];
    clock = Date.UTC(2025, 2, 29, 12); // Saturday 29 March 2025: frozen until Monday 04:00 CEST (02:00Z)
    const older = await pushRelease(t.app, api, svc, { tag: 'v1', observedAt: clock });
    expect(older.body['autoPromotion']).toMatchObject({ outcome: 'queued', reason: expect.stringContaining('promotion-window-closed') });
    clock += 60_000;
    const newerEvent = pushEvent(svc, { tag: 'v2', observedAt: clock });
    const push = () => t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: newerEvent });
    const newer = await push();
    expect(newer.json().autoPromotion).toMatchObject({ outcome: 'queued', reason: expect.stringContaining('2025-03-31T02:00:00.000Z') });
    expect(await history(svc)).toHaveLength(1);
    expect(await refusedEvents(svc)).toHaveLength(2);

    // Still closed: the sweepers issue nothing and tell nothing new.
    clock = Date.UTC(2025, 2, 31, 1, 59);
    expect(await Promise.all([a(), b(), a(), b()])).toEqual([0, 0, 0, 0]);
    expect(await history(svc)).toHaveLength(1);
    expect(await refusedEvents(svc)).toHaveLength(2);

    // Open: one rollout, of the newest push, whoever sweeps.
    clock = Date.UTC(2025, 2, 31, 2);
    const issued = await Promise.all([a(), b(), a(), b()]);
    expect(issued.reduce((x, y) => x + y, 0)).toBe(1);
    const rollouts = await history(svc);
    expect(rollouts).toHaveLength(2);
    expect(rollouts.filter((r) => r.mode === 'automatic')).toMatchObject([{ releaseId: newerEvent['releaseId'] }]);
    expect(await Promise.all([a(), b()])).toEqual([0, 0]);

    // The newer push's redelivery gets its decision back; nothing more is issued.
    const redelivered = await push();
    expect(redelivered.statusCode, redelivered.body).toBe(200);
    expect(redelivered.json()).toMatchObject({ duplicate: true, autoPromotion: { outcome: 'queued', replayed: true } });
    expect(await history(svc)).toHaveLength(2);
    clock = Date.now();
  });

  it('under stop-the-line: the push waits until it is lifted, then goes out once', async () => {
    clock = Date.now();
    const svc = await automated();
    const sweep = sweeper();
    const stop = { governance: { stopTheLine: { active: true, reason: 'incident 4711' } } };
    expect((await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: stop })).statusCode).toBe(200);
    try {
      const event = pushEvent(svc, { tag: 'v1', observedAt: clock });
      const res = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
      expect(res.json().autoPromotion).toMatchObject({ outcome: 'queued', reason: expect.stringContaining('stop-the-line') });
      clock += 60_000;
      expect(await sweep()).toBe(0);
      expect(await history(svc)).toHaveLength(1);
    } finally {
      expect((await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: { governance: {} } })).statusCode).toBe(200);
    }
    // Stop-the-line names no opening: the wait is tried again every STOPPED_RETRY_MS.
    clock += STOPPED_RETRY_MS;
    expect(await sweep()).toBe(1);
    expect((await history(svc)).map((r) => r.mode).sort()).toEqual(['automatic', 'promotion']);
    expect(await sweep()).toBe(0);
    clock = Date.now();
  });
});
