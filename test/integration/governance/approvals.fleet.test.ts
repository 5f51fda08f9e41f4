import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createFixtureService, fullRolloutHistory, httpCaller, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';

/**
 * Separation of duties under concurrency (docs/governance.md "Approvals"): two server processes on
 * one database; in each round a promotion request needing two approvals gets 20 approve calls at
 * once — 10 by each of two distinct approvers, spread over both processes. Exactly one rollout is
 * issued per request, every call is answered (200, or 403 already-approved), and the request ends
 * issued with exactly the two approvers.
 */
const ROUNDS = 5;

describe('approvals across processes', () => {
  let fleet: Fleet;
  beforeAll(async () => { fleet = await startFleet({ processes: 2 }); }, 180_000);
  afterAll(async () => { await fleet?.close(); });

  it(`${ROUNDS} rounds of 20 concurrent approvals by two approvers over 2 processes: one rollout per request`, async () => {
    const callers = fleet.servers.map((s) => httpCaller(s.url));
    const [first] = callers;
    if (!first) throw new Error('no server');
    const admin = await fleet.token('admin');
    const [requester, alice, bob] = await Promise.all([
      fleet.token('api', { subject: 'ci' }), fleet.token('admin', { subject: 'alice' }), fleet.token('api', { subject: 'bob' }),
    ]);
    await registerCluster(first, admin, 'c1', ['n1']);
    const svc = await createFixtureService(first, admin, { promotionPolicy: { approvals: { required: 2, approvers: [{ role: 'admin' }, { role: 'api' }] } } });

    for (let round = 0; round < ROUNDS; round++) {
      const release = await pushRelease(first, requester, svc, { tag: `r${round}` });
      const asked = await promote(first, requester, svc.id, release.releaseId, { generation: round });
      expect(asked.statusCode, asked.body).toBe(202);
      const requestId = asked.json().promotionRequest.requestId as string;
      const calls = Array.from({ length: 20 }, (_, i) => callers[i % callers.length]!.inject({
        method: 'POST', url: `/v1/services/${svc.id}/promotion-requests/${requestId}/approve`, headers: bearer(i % 2 === 0 ? alice : bob),
      }));
      const answers = await Promise.all(calls);
      for (const answer of answers) {
        expect([200, 403], answer.body).toContain(answer.statusCode);
        if (answer.statusCode === 403) expect(answer.json().reason).toBe('already-approved');
      }
      const history = await fullRolloutHistory(first, admin, svc.id);
      expect(history, `round ${round}`).toHaveLength(round + 1);
      const read = (await first.inject({ method: 'GET', url: `/v1/services/${svc.id}/promotion-requests/${requestId}`, headers: bearer(admin) })).json();
      expect(read.promotionRequest.state).toBe('issued');
      expect(read.promotionRequest.approvals.map((a: { subject: string }) => a.subject).sort()).toEqual(['alice', 'bob']);
      expect(history[0]).toMatchObject({ rolloutId: read.promotionRequest.rolloutId, releaseId: release.releaseId });
    }
  }, 120_000);
});
