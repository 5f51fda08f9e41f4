import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { STATUS_EVENTS_KEPT, type StatusEvent } from '../../../src/domain/rolloutStatus.js';
import type { StatusSnapshot } from '../../../src/domain/ports/index.js';
import { stripAccessToken } from '../../../src/http/accessToken.js';
import { planDelivery, planOpening, serveOpening, StatusHub, type ResetReason, type StatusListener } from '../../../src/http/sse/hub.js';
import { buildTestApp, logCapture, type TestApp } from '../../support/app.js';
import {
  createFixtureService, httpCaller, promote, promotedService, pushRelease, registerCluster, type Caller, bearer,
} from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody, verifiedReplica } from '../../support/reports.js';
import { openSse, type SseClient } from '../../support/sse.js';
import { eventually, sleep } from '../../support/wait.js';

const revisions = (events: StatusEvent[]) => events.map((e) => e.revision);
const isIncreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);

// ---------------------------------------------------------------------------------------
// Two real server processes: every client sees every change, whichever process made it.
// ---------------------------------------------------------------------------------------

describe('rollout status events across server processes', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;
  let c1: string;
  let c2: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    c1 = await fleet.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
    c2 = await fleet.token('cluster', { clusterId: 'c2', subject: 'coreflow-c2' });
    await registerCluster(callers[0]!, admin, 'c1', ['n1', 'n2']);
    await registerCluster(callers[1]!, admin, 'c2', ['m1']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const eventsUrl = (i: number, serviceId: string, query = '') => `${fleet.servers[i]!.url}/v1/services/${serviceId}/rollout/events${query}`;

  it('a client on each process receives the same ordered changes, including those made through the other process; ' +
    'Last-Event-ID resumes exactly after', async () => {
    const svc = await createFixtureService(callers[0]!, admin, { clusterIds: ['c1', 'c2'], replicasPerNode: 2 });
    const release = await pushRelease(callers[1]!, api, svc, { tag: 'v1' });
    const clients: SseClient[] = [];
    try {
      clients.push(await openSse(eventsUrl(0, svc.id), bearer(admin)));
      clients.push(await openSse(eventsUrl(1, svc.id), bearer(api)));
      for (const c of clients) {
        expect(c.status).toBe(200);
        expect(c.headers.get('content-type')).toMatch(/^text\/event-stream/);
        expect(c.headers.get('cache-control')).toBe('no-store');
        expect(c.headers.get('x-accel-buffering')).toBe('no');
      }

      const promoted = await promote(callers[0]!, api, svc.id, release.releaseId, { generation: 0 });
      expect(promoted.statusCode, promoted.body).toBe(200);
      const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;

      // Reports alternate between the two processes.
      const report = (sequence: number, nodeNames: string[], deployments: Array<Record<string, unknown>>) =>
        reportBody(plan, svc.id, { sequence, nodeNames, deployments });
      const replica = (node: string, index: number, overrides: Parameters<typeof verifiedReplica>[4] = {}) =>
        verifiedReplica(plan, svc.id, node, index, overrides);
      const reports: Array<[string, Record<string, unknown>]> = [
        [c1, report(1, ['n1', 'n2'], [replica('n1', 0, { status: 'starting', evidence: null })])],
        [c1, report(2, ['n1', 'n2'], ['n1', 'n2'].flatMap((n) => [0, 1].map((i) => replica(n, i, { evidence: null }))))],
        [c2, report(1, ['m1'], [replica('m1', 0), replica('m1', 1, { status: 'failed' })])],
        [c2, report(2, ['m1'], [0, 1].map((i) => replica('m1', i, { evidence: null })))],
        [c1, report(3, ['n1', 'n2'], fullReplicas(plan, svc.id, ['n1', 'n2']))],
        [c1, report(3, ['n1', 'n2'], fullReplicas(plan, svc.id, ['n1', 'n2']))], // a replay: no change
        [c2, report(3, ['m1'], fullReplicas(plan, svc.id, ['m1']))],
      ];
      const send = async (i: number, token: string, body: Record<string, unknown>): Promise<string> => {
        const res = await callers[i % 2]!.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
        expect(res.statusCode, res.body).toBe(200);
        return res.json().status.status as string;
      };
      let last = '';
      for (const [i, [token, body]] of reports.entries()) last = await send(i, token, body);
      expect(last).toBe('succeeded');

      for (const c of clients) await c.waitFor('succeeded', (x) => x.statuses().some((e) => e.status === 'succeeded'));
      const atSucceeded = clients[0]!.statuses();

      // Resume after the 2nd event (on either process): exactly the rest, nothing before, nothing twice.
      const resumeAfter = String(atSucceeded[1]!.revision);
      const resumed = [
        await openSse(eventsUrl(1, svc.id), { ...bearer(admin), 'last-event-id': resumeAfter }),
        await openSse(eventsUrl(0, svc.id, `?after=${resumeAfter}`), bearer(admin)),
      ];
      clients.push(...resumed);
      for (const c of resumed) await c.waitFor('the rest', (x) => x.statuses().length >= atSucceeded.length - 2);
      // A fresh connection gets only the current state.
      const fresh = await openSse(eventsUrl(1, svc.id), bearer(admin));
      clients.push(fresh);
      await fresh.waitFor('the current state', (x) => x.messages.length >= 1);

      // The barrier: one more change (a replica of m1 fails), made after all of the above. A stream sends in
      // revision order, so once a client has this marker, everything it was ever going to be sent before it —
      // a duplicate, an invented or a repeated event — has arrived: "nothing more" is checked, not waited for.
      expect(await send(1, c2, report(4, ['m1'], [replica('m1', 0), replica('m1', 1, { status: 'failed' })]))).toBe('failed');
      const storedLog = async () =>
        (await (await fleet.db()).collection('services').findOne({ _id: svc.id as never }))?.['statusEvents'] as StatusEvent[];
      const stored = await storedLog();
      const marker = stored.at(-1)!;
      expect(marker.status).toBe('failed');
      expect(marker.revision).toBeGreaterThan(atSucceeded.at(-1)!.revision);
      for (const c of clients) await c.waitFor('the marker', (x) => x.statuses().some((e) => e.revision === marker.revision));

      const [seen, seenOther] = clients.map((c) => c.statuses()) as [StatusEvent[], StatusEvent[]];
      expect(seen).toEqual(seenOther);
      expect(seen.at(-1)).toEqual(marker);
      const a = seen.slice(0, -1);
      expect(a).toEqual(atSucceeded);
      expect(isIncreasing(revisions(seen))).toBe(true);
      expect(a.map((e) => e.status)).toEqual(['pending', 'deploying', 'deploying', 'failed', 'verifying', 'verifying', 'succeeded']);
      expect(a.at(-1)).toMatchObject({ status: 'succeeded', rolloutId: plan.rolloutId, verifiedReplicaCount: 6 });
      // Both opened before the promotion: first the current state (no status event yet), then every change.
      for (const c of clients.slice(0, 2)) {
        expect(c.messages[0]).toEqual({ id: '0', event: 'reset', data: JSON.stringify({ reason: 'up-to-date', revision: 0 }) });
        expect(c.messages.slice(1).map((m) => m.id)).toEqual(revisions(seen).map(String));
      }
      // Exactly the stored log: nothing skipped, nothing invented.
      expect(seen).toEqual(stored);
      for (const c of resumed) expect(c.statuses()).toEqual([...a.slice(2), marker]);
      expect(fresh.statuses()).toEqual([a.at(-1), marker]);
    } finally {
      await Promise.all(clients.map(async (c) => await c.close()));
    }
  }, 90_000);

  it('SIGTERM with open streams: the process drains promptly and ends them', async () => {
    const server = await fleet.add();
    const svc = await createFixtureService(callers[0]!, admin, { clusterIds: ['c1'] });
    const streamUrl = `${server.url}/v1/services/${svc.id}/rollout/events`;
    const streams = await Promise.all([0, 1, 2].map(async () => await openSse(streamUrl, bearer(admin))));
    try {
      const started = Date.now();
      const code = await Promise.race([server.kill('SIGTERM'), sleep(8_000).then(() => 'timeout' as const)]);
      expect(code, fleet.logs()).toBe(0);
      expect(Date.now() - started).toBeLessThan(5_000);
      await Promise.race([Promise.all(streams.map(async (s) => await s.ended)), sleep(2_000)]);
      for (const s of streams) expect(s.comments).toContain('server shutting down, reconnect');
    } finally {
      await Promise.all(streams.map(async (s) => await s.close()));
      await server.kill('SIGKILL');
    }
  }, 60_000);
});

// ---------------------------------------------------------------------------------------
// One process: auth, errors, access_token, keep-alives, resets, shutdown.
// ---------------------------------------------------------------------------------------

describe('rollout status events in one process', () => {
  let t: TestApp;
  let base: string;
  let admin: string;
  let api: string;
  let c2: string;
  // The production logger (loggerOptions(config)) at trace: what an operator's logs would hold.
  const logs = logCapture();
  const logLines = logs.lines;

  beforeAll(async () => {
    t = await buildTestApp({ LOG_LEVEL: 'trace' }, { logStream: logs.stream, statusStream: { pollIntervalMs: 50, heartbeatMs: 200 } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    admin = await t.token('admin');
    api = await t.token('api');
    c2 = await t.token('cluster', { clusterId: 'c2', subject: 'coreflow-c2' });
    await registerCluster(t.app, admin, 'c2', ['m1']);
  });
  afterAll(async () => { await t?.close(); });

  const url = (serviceId: string, query = '') => `${base}/v1/services/${serviceId}/rollout/events${query}`;

  /** A service on m1 with one replica, promoted: revision 1 = pending. */
  async function promoted () {
    const { svc, plan } = await promotedService(t.app, { admin, api }, { clusterIds: ['c2'], replicasPerNode: 1 });
    let sequence = 0;
    /** Alternates the replica between failed and running+verified: one status event each. */
    const toggle = async (failed: boolean) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/deployment-snapshots',
        headers: bearer(c2),
        payload: reportBody(plan, svc.id, {
          sequence: ++sequence,
          nodeNames: ['m1'],
          deployments: [verifiedReplica(plan, svc.id, 'm1', 0, failed ? { status: 'failed' } : {})],
        }),
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().status.status as string;
    };
    return { svc, plan, toggle };
  }

  it('refuses before streaming: 401 without a token, 403 for a cluster token, 404 for an unknown service, 400 for a bad Last-Event-ID', async () => {
    const { svc } = await promoted();
    const get = async (u: string, headers: Record<string, string> = {}) => {
      const res = await fetch(u, { headers, signal: AbortSignal.timeout(5_000) });
      return { status: res.status, type: res.headers.get('content-type'), body: await res.json() as Record<string, unknown> };
    };
    expect(await get(url(svc.id))).toMatchObject({ status: 401, type: 'application/problem+json; charset=utf-8', body: { code: 'unauthenticated' } });
    expect(await get(url(svc.id), bearer(c2))).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    expect(await get(url('svc_missing'), bearer(admin))).toMatchObject({ status: 404, body: { code: 'service-not-found' } });
    expect(await get(url(svc.id), { ...bearer(admin), 'last-event-id': 'abc' })).toMatchObject({ status: 400, body: { code: 'validation-failed' } });
    expect(await get(url(svc.id, '?after=-1'), bearer(admin))).toMatchObject({ status: 400, body: { code: 'validation-failed' } });
    expect(await get(url(svc.id, '?access_token='), {})).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });
  });

  it('a stream ends when the token that opened it expires (a reconnect needs a valid token)', async () => {
    const { svc } = await promoted();
    const shortLived = await t.token('user', { ttlSeconds: 2 });
    const client = await openSse(url(svc.id), bearer(shortLived));
    try {
      await client.waitFor('the current state', (c) => c.statuses().length === 1);
      await client.ended;
      expect(client.comments).toContain('token expired, reconnect with a new one');
      const again = await fetch(url(svc.id), { headers: bearer(shortLived), signal: AbortSignal.timeout(5_000) });
      expect(again.status).toBe(401);
    } finally {
      await client.close();
    }
  });

  it('streams the current state, then each change, with keep-alives in between', async () => {
    const { svc, toggle } = await promoted();
    const client = await openSse(url(svc.id), bearer(api));
    try {
      await client.waitFor('the current state', (c) => c.statuses().length === 1);
      expect(client.messages[0]).toMatchObject({ id: '1', event: 'status' });
      expect(client.statuses()[0]).toMatchObject({ revision: 1, status: 'pending' });
      expect(await toggle(false)).toBe('succeeded');
      expect(await toggle(true)).toBe('failed');
      await client.waitFor('two changes', (c) => c.statuses().length === 3);
      expect(client.statuses().map((e) => [e.revision, e.status])).toEqual([[1, 'pending'], [2, 'succeeded'], [3, 'failed']]);
      await client.waitFor('a keep-alive', (c) => c.comments.includes('keep-alive'), 5_000);
    } finally {
      await client.close();
    }
  });

  it('every stream starts with an event: with nothing to replay (no status event yet, or resumed at the current revision) ' +
    'a reset up-to-date with the current state; no status event twice; then each change', async () => {
    const parsed = (c: SseClient) => c.messages.map((m) => ({ ...m, data: JSON.parse(m.data) as unknown }));
    // Sent when the stream opens, not at a later poll or keep-alive (those come every 50 and 200 ms here).
    const FIRST_EVENT_MS = 2_000;

    // A service never promoted: revision 0, no status event. Fresh, or resumed at 0 (the header or ?after=).
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c2'], replicasPerNode: 1 });
    const fresh = [
      await openSse(url(svc.id), bearer(api)),
      await openSse(url(svc.id), { ...bearer(api), 'last-event-id': '0' }),
      await openSse(url(svc.id, '?after=0'), bearer(api)),
    ];
    const promotedOnes: SseClient[] = [];
    try {
      for (const c of fresh) await c.waitFor('the first event', (x) => x.messages.length >= 1, FIRST_EVENT_MS);
      for (const c of fresh) expect(parsed(c)).toEqual([{ id: '0', event: 'reset', data: { reason: 'up-to-date', revision: 0 } }]);
      // The first change after it is a status event, as on any stream.
      const release = await pushRelease(t.app, api, svc, { tag: 'v1' });
      expect((await promote(t.app, api, svc.id, release.releaseId, { generation: 0 })).statusCode).toBe(200);
      for (const c of fresh) await c.waitFor('the promotion', (x) => x.statuses().length === 1);
      for (const c of fresh) expect(c.statuses()).toMatchObject([{ revision: 1, status: 'pending' }]);

      // A promoted service (revision 1): a client resuming at 1 already has event 1. It gets the current
      // state as a reset (id 1), not event 1 again; then revision 2 as a status event.
      const { svc: other, toggle } = await promoted();
      const latest = (await t.db.collection('services').findOne({ _id: other.id as never }))?.['statusEvents'].at(-1) as StatusEvent;
      expect(latest.revision).toBe(1);
      promotedOnes.push(
        await openSse(url(other.id), { ...bearer(admin), 'last-event-id': '1' }),
        await openSse(url(other.id, '?after=1'), bearer(admin)),
      );
      for (const c of promotedOnes) await c.waitFor('the first event', (x) => x.messages.length >= 1, FIRST_EVENT_MS);
      for (const c of promotedOnes) expect(parsed(c)).toEqual([{ id: '1', event: 'reset', data: { reason: 'up-to-date', revision: 1, latest } }]);
      const next = await toggle(false);
      for (const c of promotedOnes) await c.waitFor('the next change', (x) => x.statuses().length === 1);
      for (const c of promotedOnes) {
        expect(c.statuses()).toMatchObject([{ revision: 2, status: next }]);
        expect(c.messages.map((m) => [m.event, m.id])).toEqual([['reset', '1'], ['status', '2']]);
      }
    } finally {
      await Promise.all([...fresh, ...promotedOnes].map(async (c) => await c.close()));
    }
  });

  it('notices disconnects: each closed client leaves the hub', async () => {
    const { svc } = await promoted();
    const clients = [await openSse(url(svc.id), bearer(api)), await openSse(url(svc.id), bearer(admin))];
    try {
      for (const c of clients) await c.waitFor('the current state', (x) => x.statuses().length === 1);
      expect(await openStreams(svc.id)).toBe(2);
      await clients[0]!.close();
      await eventually('one stream open', async () => expect(await openStreams(svc.id)).toBe(1), 200, 25);
      await clients[1]!.close();
      await eventually('no stream open', async () => expect(await openStreams(svc.id)).toBe(0), 200, 25);
    } finally {
      await Promise.all(clients.map(async (c) => await c.close()));
    }
  });

  /** How many streams this process has open for the service (from its logs: opened − closed, logged on 'close'). */
  async function openStreams (serviceId: string): Promise<number> {
    const entries = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e['serviceId'] === serviceId);
    return entries.filter((e) => e['msg'] === 'status stream opened').length - entries.filter((e) => e['msg'] === 'status stream closed').length;
  }

  it('accepts ?access_token= for EventSource, and the token never reaches a log line', async () => {
    const { svc } = await promoted();
    const token = await t.token('user', { subject: 'browser-user' });
    const client = await openSse(url(svc.id, `?access_token=${encodeURIComponent(token)}&after=0`));
    try {
      expect(client.status).toBe(200);
      await client.waitFor('the stored events', (c) => c.statuses().length === 1);
    } finally {
      await client.close();
    }
    const wrong = await fetch(url(svc.id, `?access_token=${encodeURIComponent(token)}x`), { signal: AbortSignal.timeout(5_000) });
    expect(wrong.status).toBe(401);
    const other = await fetch(`${base}/v1/services/${svc.id}?access_token=${encodeURIComponent(token)}`, { signal: AbortSignal.timeout(5_000) });
    expect(other.status).toBe(401); // only the stream accepts it
    await eventually('no stream open', async () => expect(await openStreams(svc.id)).toBe(0), 200, 25);
    const urls = logLines.filter((l) => l.includes(svc.id) && l.includes('"url"'));
    expect(urls.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(line).not.toContain(token);
      expect(line).not.toContain(token.slice(-20)); // the signature, however the token was encoded
    }
  });

  it('a client more than 100 changes behind, or from an unknown revision, gets a reset with the current state, then the changes after it', async () => {
    const { svc, toggle } = await promoted();
    for (let i = 0; i < STATUS_EVENTS_KEPT + 2; i++) await toggle(i % 2 === 1);
    const current = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) })).json();
    const latest = (await t.db.collection('services').findOne({ _id: svc.id as never }))?.['statusEvents'].at(-1) as StatusEvent;
    expect(latest.revision).toBe(current.revision);

    const behind = await openSse(url(svc.id), { ...bearer(admin), 'last-event-id': '1' });
    const future = await openSse(url(svc.id, '?after=999999'), bearer(admin));
    try {
      for (const c of [behind, future]) await c.waitFor('a reset', (x) => x.messages.length >= 1);
      const parsed = (c: SseClient) => c.messages.map((m) => ({ ...m, data: JSON.parse(m.data) as unknown }));
      const reset = (reason: ResetReason) => [{ id: String(latest.revision), event: 'reset', data: { reason, revision: current.revision, latest } }];
      expect(parsed(behind)).toEqual(reset('events-missed'));
      expect(parsed(future)).toEqual(reset('unknown-revision'));
      const next = await toggle(latest.status !== 'failed');
      for (const c of [behind, future]) await c.waitFor('the next change', (x) => x.statuses().length === 1);
      expect(behind.statuses()[0]).toMatchObject({ revision: latest.revision + 1, status: next });
    } finally {
      await Promise.all([behind.close(), future.close()]);
    }
  }, 60_000);

  it('app.close() does not hang on open streams: they are ended', async () => {
    const own = await buildTestApp({}, { statusStream: { pollIntervalMs: 50 } });
    let client: SseClient | undefined;
    try {
      await own.app.listen({ host: '127.0.0.1', port: 0 });
      const ownAdmin = await own.token('admin');
      const svc = await createFixtureService(own.app, ownAdmin, { withPlacement: false });
      const ownPort = (own.app.server.address() as AddressInfo).port;
      client = await openSse(`http://127.0.0.1:${ownPort}/v1/services/${svc.id}/rollout/events`, bearer(ownAdmin));
      expect(client.status).toBe(200);
      const started = Date.now();
      await Promise.race([own.close(), sleep(5_000).then(() => { throw new Error('app.close() hung on an open SSE connection'); })]);
      expect(Date.now() - started).toBeLessThan(3_000);
      await Promise.race([client.ended, sleep(2_000)]);
      expect(client.comments).toContain('server shutting down, reconnect');
    } finally {
      await client?.close();
      await own.close().catch(() => undefined);
    }
  });
});

// ---------------------------------------------------------------------------------------
// The hub and the gap rule against a fake source.
// ---------------------------------------------------------------------------------------

describe('StatusHub and planDelivery', () => {
  const ev = (revision: number): StatusEvent => ({
    revision,
    rolloutId: 'ro_1',
    rolloutGeneration: 1,
    status: 'deploying',
    requiredReplicaCount: 1,
    observedReplicaCount: 0,
    healthyReplicaCount: 0,
    verifiedReplicaCount: 0,
    failedReplicaCount: 0,
    at: revision,
  });
  /** A service document's log: `revision` with the last 100 of `events`. */
  class FakeSource {
    revision = 0;
    log: StatusEvent[] = [];
    polls: Array<[string, number]> = [];
    pollsOf (serviceId: string): number { return this.polls.filter(([s]) => s === serviceId).length; }
    push (withEvent = true): void {
      this.revision++;
      if (withEvent) this.log = [...this.log, ev(this.revision)].slice(-STATUS_EVENTS_KEPT);
    }

    async statusEventsAfter (serviceId: string, revision: number): Promise<StatusSnapshot | null> {
      this.polls.push([serviceId, revision]);
      return serviceId === 'gone' ? null : { revision: this.revision, events: this.log.filter((e) => e.revision > revision) };
    }
  }
  class FakeListener implements StatusListener {
    ready = true;
    got: number[] = [];
    resets: Array<[ResetReason, number | undefined]> = [];
    ended: string | undefined;
    constructor (public cursor: number) {}
    send (events: StatusEvent[]) { this.got.push(...events.map((e) => e.revision)); }
    reset (reason: ResetReason, _revision: number, latest: StatusEvent | undefined) { this.resets.push([reason, latest?.revision]); }
    heartbeat () {}
    end (why: string) { this.ended = why; }
  }

  it('planDelivery: the events after the cursor; a reset only when a gap is possible', () => {
    const full = { revision: 250, events: Array.from({ length: STATUS_EVENTS_KEPT }, (_, i) => ev(151 + i)) };
    expect(planDelivery(160, full)).toEqual({ kind: 'events', events: full.events.slice(10) });
    // Exactly 100 behind: every event after the cursor is still kept (151 is the one right after 150).
    expect(planDelivery(150, full)).toEqual({ kind: 'events', events: full.events });
    expect(planDelivery(149, full)).toMatchObject({ kind: 'reset', reason: 'events-missed' });
    expect(planDelivery(251, full)).toMatchObject({ kind: 'reset', reason: 'unknown-revision', latest: ev(250) });
    // Not full: nothing was ever dropped, whatever the cursor.
    expect(planDelivery(0, { revision: 7, events: [ev(3), ev(7)] })).toEqual({ kind: 'events', events: [ev(3), ev(7)] });
  });

  it('planOpening: never nothing — the replay, the latest for a fresh client, else a reset up-to-date with the current state', () => {
    const log = { revision: 7, events: [ev(3), ev(6)] }; // revision 7 came without an event
    expect(planOpening(undefined, log)).toEqual({ kind: 'events', events: [ev(6)] });
    expect(planOpening(2, log)).toEqual({ kind: 'events', events: [ev(3), ev(6)] });
    expect(planOpening(6, log)).toEqual({ kind: 'reset', reason: 'up-to-date', latest: ev(6) });
    expect(planOpening(7, log)).toEqual({ kind: 'reset', reason: 'up-to-date', latest: ev(6) });
    expect(planOpening(8, log)).toMatchObject({ kind: 'reset', reason: 'unknown-revision', latest: ev(6) });
    const none = { revision: 0, events: [] };
    expect(planOpening(undefined, none)).toEqual({ kind: 'reset', reason: 'up-to-date', latest: undefined });
    expect(planOpening(0, none)).toEqual({ kind: 'reset', reason: 'up-to-date', latest: undefined });
    // After the opening, polls with nothing new send nothing.
    expect(planDelivery(7, log)).toEqual({ kind: 'events', events: [] });
    const opened = new FakeListener(0);
    serveOpening(opened, 7, log);
    expect([opened.resets, opened.got, opened.cursor]).toEqual([[['up-to-date', 6]], [], 7]);
  });

  it('one poll loop per watched service, each listener served from its own cursor, stopped when the last one leaves', async () => {
    const source = new FakeSource();
    for (let i = 0; i < 3; i++) source.push();
    const hub = new StatusHub({ source, pollIntervalMs: 10 });
    try {
      const a = new FakeListener(1);
      const b = new FakeListener(3);
      const offA = hub.subscribe('svc', a);
      const offB = hub.subscribe('svc', b);
      expect(hub.watched()).toEqual({ svc: 2 });
      await eventually('a is served', async () => expect(a.got).toEqual([2, 3]), 200, 25);
      source.push(false); // a revision without an event (a report that changed no count)
      source.push();
      await eventually('a and b are served', async () => expect([a.got, b.got]).toEqual([[2, 3, 5], [5]]), 200, 25);
      expect(new Set(source.polls.map(([s]) => s))).toEqual(new Set(['svc']));
      offA();
      offB();
      expect(hub.watched()).toEqual({});
      const polls = source.pollsOf('svc');
      // The barrier: a loop for another service, same interval, started after svc's last timer was set. Timers of
      // one duration fire in the order they were set, so once it has polled 3 times a svc loop still running would
      // have polled at least twice more.
      const offWitness = hub.subscribe('witness', new FakeListener(0));
      await eventually('the witness service is polled 3 times', async () => source.pollsOf('witness') >= 3, 200, 25);
      offWitness();
      expect(source.pollsOf('svc')).toBeLessThanOrEqual(polls + 1); // at most the one in flight
    } finally {
      hub.close();
    }
  });

  it('a listener that stops reading keeps its cursor and catches up when it drains; ' +
    'one that fell out of the window gets a reset', async () => {
    const source = new FakeSource();
    source.push();
    const hub = new StatusHub({ source, pollIntervalMs: 10 });
    try {
      const slow = new FakeListener(1);
      const gone = new FakeListener(0);
      hub.subscribe('svc', slow);
      hub.subscribe('gone', gone);
      slow.ready = false;
      for (let i = 0; i < 5; i++) source.push();
      // The barrier: a reading listener on the same service from the same cursor. Once it has the five events, a
      // poll ran that would have served slow as well, were a listener that does not read served.
      const witness = new FakeListener(1);
      const offWitness = hub.subscribe('svc', witness);
      await eventually('the witness has the five events', async () => expect(witness.got).toEqual([2, 3, 4, 5, 6]), 200, 25);
      offWitness();
      expect(slow.got).toEqual([]);
      slow.ready = true;
      hub.kick('svc');
      await eventually('slow catches up', async () => expect(slow.got).toEqual([2, 3, 4, 5, 6]), 200, 25);
      slow.ready = false;
      for (let i = 0; i < STATUS_EVENTS_KEPT + 5; i++) source.push();
      slow.ready = true;
      await eventually('slow is reset', async () => expect(slow.resets).toEqual([['events-missed', source.revision]]), 200, 25);
      expect(slow.got).toEqual([2, 3, 4, 5, 6]);
      source.push();
      await eventually('slow gets the next event', async () => expect(slow.got.at(-1)).toBe(source.revision), 200, 25);
      await eventually('gone is ended', async () => expect(gone.ended).toBe('service-gone'), 200, 25);
      expect(hub.watched()).toEqual({ svc: 1 });
    } finally {
      hub.close();
    }
  });

  it('close() ends every listener and refuses new ones', () => {
    const hub = new StatusHub({ source: new FakeSource(), pollIntervalMs: 10 });
    const a = new FakeListener(0);
    hub.subscribe('svc', a);
    hub.close();
    expect(a.ended).toBe('shutdown');
    const late = new FakeListener(0);
    hub.subscribe('svc', late);
    expect(late.ended).toBe('shutdown');
    expect(hub.watched()).toEqual({});
  });

  it('stripAccessToken takes the token out of the URL and keeps everything else verbatim', () => {
    const req = (url: string) => ({ url }) as unknown as Parameters<typeof stripAccessToken>[0];
    expect(stripAccessToken(req('/v1/services/s/rollout/events?after=3&access_token=abc.def'))).toBe('/v1/services/s/rollout/events?after=3');
    expect(stripAccessToken(req('/v1/x?access%5Ftoken=abc&tag=a%20b'))).toBe('/v1/x?tag=a%20b');
    expect(stripAccessToken(req('/v1/x?tag=access_token'))).toBe('/v1/x?tag=access_token');
    expect(stripAccessToken(req('/v1/x'))).toBe('/v1/x');
  });
});
