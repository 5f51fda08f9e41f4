import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, type Fleet } from '../../support/fleet.js';
import {
  createFixtureService, httpCaller, promote, pushRelease, registerCluster, rollback, rolloutHistory, type Caller, type CallerResponse,
} from '../../support/fixtures.js';

/**
 * The compare-and-swap and idempotency claims, proven across several real
 * server processes sharing one database (no in-process lock can help here).
 */
describe('concurrency across server processes', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 3 });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    await registerCluster(callers[0]!, admin, 'c1', ['n1', 'n2']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const via = (i: number): Caller => callers[i % callers.length]!;
  const history = async (serviceId: string) => await rolloutHistory(via(1), admin, serviceId, { limit: 500 });

  it('50 concurrent promotions with the same expected generation over 3 processes: exactly one wins, 20 rounds in a row', async () => {
    const svc = await createFixtureService(via(0), admin);
    const releases = await Promise.all([0, 1, 2].map((i) => pushRelease(via(i), api, svc, { tag: `t${i}` })));
    for (let round = 0; round < 20; round++) {
      const release = releases[round % releases.length]!;
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
        promote(via(i), api, svc.id, release.releaseId, { generation: round })));
      const winners = answers.filter((a) => a.statusCode === 200);
      expect(winners, `round ${round}: ${answers.map((a) => a.statusCode).join(',')}`).toHaveLength(1);
      const plan = winners[0]!.json().service.data.imageDeployment;
      expect(plan.rolloutGeneration).toBe(round + 1);
      for (const loser of answers.filter((a) => a.statusCode !== 200)) {
        expect(loser.statusCode).toBe(409);
        expect(loser.json()).toMatchObject({ code: 'rollout-generation-conflict', currentGeneration: round + 1, currentRolloutId: plan.rolloutId });
      }
      const rollouts = await history(svc.id);
      expect(rollouts).toHaveLength(round + 1);
      expect(rollouts[0]).toMatchObject({ generation: round + 1, rolloutId: plan.rolloutId });
    }
  }, 240_000);

  it('100 concurrent requests with one Idempotency-Key over 3 processes: one effect, the same answer replayed', async () => {
    const svc = await createFixtureService(via(0), admin);
    const a = await pushRelease(via(0), api, svc, { tag: 'a' });
    const b = await pushRelease(via(1), api, svc, { tag: 'b' });
    const key = `ci-${randomBytes(6).toString('hex')}`;
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) =>
      promote(via(i), api, svc.id, a.releaseId, { generation: 0, key })));

    const successes = answers.filter((r) => r.statusCode === 200);
    const inProgress = answers.filter((r) => r.statusCode !== 200);
    expect(successes.length).toBeGreaterThanOrEqual(1);
    for (const r of inProgress) {
      expect(r.statusCode).toBe(409);
      expect(r.json().code).toBe('idempotency-request-in-progress');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    const fresh = successes.filter((r) => r.headers['idempotent-replayed'] !== 'true');
    expect(fresh).toHaveLength(1);
    const body = fresh[0]!.body;
    for (const r of successes) expect(r.body).toBe(body);
    expect(await history(svc.id)).toHaveLength(1);

    // After completion every retry replays the identical body, even once the state moved on.
    const generation1 = JSON.parse(body).service.data.imageDeployment;
    const moved = await promote(via(2), api, svc.id, b.releaseId, { generation: 1, currentRolloutId: generation1.rolloutId });
    expect(moved.statusCode).toBe(200);
    const retries = await Promise.all([0, 1, 2].map((i) => promote(via(i), api, svc.id, a.releaseId, { generation: 0, key })));
    for (const r of retries) {
      expect(r.statusCode).toBe(200);
      expect(r.headers['idempotent-replayed']).toBe('true');
      expect(r.body).toBe(body);
    }
    expect(await history(svc.id)).toHaveLength(2);

    const reused = await promote(via(1), api, svc.id, b.releaseId, { generation: 0, key });
    expect(reused.statusCode).toBe(422);
    expect(reused.json().code).toBe('idempotency-key-reused');
    const missing = await via(2).inject({
      method: 'POST',
      url: `/v1/services/${svc.id}/image-releases/${a.releaseId}/promote`,
      headers: { authorization: `Bearer ${api}` },
      payload: { expectedRolloutGeneration: 2, enableImmutableImage: true },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().code).toBe('idempotency-key-missing');
  }, 120_000);
});

/** Rewrites what differs between two equivalent runs (ids, digests, names, times) to placeholders. */
function normalized (res: CallerResponse, names: Record<string, string>): unknown {
  let text = res.body;
  for (const [value, placeholder] of Object.entries(names)) text = text.split(value).join(placeholder);
  text = text.replace(/ro_[0-9a-f-]{36}/g, '<rollout>').replace(/sha256:[0-9a-f]{64}/g, '<digest>').replace(/\b\d{13}\b/g, '"<time>"');
  return JSON.parse(text);
}

describe('crash safety: the process is killed at each step boundary, the retry completes exactly once', () => {
  let fleet: Fleet;
  let admin: string;
  let api: string;
  beforeAll(async () => {
    // A short lease so that the retry may take over the crashed request's key quickly.
    fleet = await startFleet({ processes: 2, env: { IDEMPOTENCY_LEASE_MS: '700' } });
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    await registerCluster(httpCaller(fleet.servers[0]!.url), admin, 'c1', ['n1', 'n2', 'n3']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  /** Retries while the crashed request still holds the key (as a CI script would, on Retry-After). */
  async function retryUntilDone (send: () => Promise<CallerResponse>): Promise<CallerResponse> {
    for (let i = 0; i < 100; i++) {
      const res = await send();
      if (res.statusCode !== 409 || res.json().code !== 'idempotency-request-in-progress') return res;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the key stayed in progress');
  }

  interface Scenario { service: { id: string, repository: string }, release: string, previous?: string, generation: number, currentRolloutId?: string }

  /** A service with releases a and b; for rollbacks, a and then b promoted first. */
  async function scenario (caller: Caller, forRollback: boolean): Promise<Scenario> {
    const service = await createFixtureService(caller, admin);
    const a = await pushRelease(caller, api, service, { tag: 'a', seed: 'seed-a' });
    const b = await pushRelease(caller, api, service, { tag: 'b', seed: 'seed-b' });
    if (!forRollback) return { service, release: a.releaseId, generation: 0 };
    await promote(caller, api, service.id, a.releaseId, { generation: 0 });
    const second = (await promote(caller, api, service.id, b.releaseId, { generation: 1 })).json().service.data.imageDeployment;
    return { service, release: a.releaseId, previous: b.releaseId, generation: 2, currentRolloutId: second.rolloutId };
  }

  const send = (caller: Caller, kind: 'promotion' | 'rollback', s: Scenario, key: string) => kind === 'promotion'
    ? promote(caller, api, s.service.id, s.release, { generation: s.generation, key })
    : rollback(caller, api, s.service.id, s.release, { generation: s.generation, currentRolloutId: s.currentRolloutId!, key });

  for (const kind of ['promotion', 'rollback'] as const) {
    for (const point of ['after-idempotency-record', 'after-rollout-record', 'after-plan-write', 'after-release-update']) {
      it(`${kind}: killed ${point}`, async () => {
        const healthy = httpCaller(fleet.servers[0]!.url);
        const victim = fleet.servers[1]!;

        // The same request without a crash, for the expected response and state.
        const reference = await scenario(healthy, kind === 'rollback');
        const expected = await send(healthy, kind, reference, 'reference-key');
        expect(expected.statusCode, expected.body).toBe(200);

        const s = await scenario(healthy, kind === 'rollback');
        await victim.restart({ FAULT_INJECTION: point });
        const crashed = await send(httpCaller(victim.url), kind, s, 'the-key').then((r) => r.statusCode, () => 'connection lost');
        expect(crashed).toBe('connection lost');
        expect(await victim.exited).toBeNull(); // killed by a signal, no clean-up ran
        expect(victim.logs.join('\n')).toContain(`FAULT_INJECTION: crashing at ${point}`);
        await victim.restart();

        const retried = await retryUntilDone(() => send(httpCaller(victim.url), kind, s, 'the-key'));
        expect(retried.statusCode, retried.body).toBe(200);
        const replay = await send(healthy, kind, s, 'the-key');
        expect(replay.body).toBe(retried.body);
        expect(replay.headers['idempotent-replayed']).toBe('true');

        const names = (x: Scenario) => ({
          [x.service.id]: '<service>',
          [x.service.repository]: '<repo>',
          [x.release]: '<release>',
          ...(x.previous ? { [x.previous]: '<previous>' } : {}),
        });
        const mine = normalized(retried, names(s)) as { service: { data: Record<string, unknown> } };
        const theirs = normalized(expected, names(reference)) as { service: { data: Record<string, unknown> } };
        delete mine.service.data['name'];
        delete theirs.service.data['name'];
        expect(mine).toEqual(theirs);

        const adminCaller = httpCaller(fleet.servers[0]!.url);
        const rollouts = await rolloutHistory(adminCaller, admin, s.service.id);
        expect(rollouts).toHaveLength(s.generation + 1);
        expect(rollouts.every((r) => r.state === 'applied')).toBe(true);
        const releasesUrl = `/v1/services/${s.service.id}/image-releases`;
        const releases = (await adminCaller.inject({ method: 'GET', url: releasesUrl, headers: { authorization: `Bearer ${admin}` } })).json().releases;
        const target = releases.find((r: { id: string }) => r.id === s.release);
        expect(target.data.promotionCount).toBe(1);
        expect(target.data.acceptedAt).toBeTypeOf('number');
      }, 120_000);
    }
  }
});
