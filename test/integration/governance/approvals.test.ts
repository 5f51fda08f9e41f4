import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, callTypedRequest, identity, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, fullRolloutHistory, promote, pushRelease, registerCluster, type FixtureService } from '../../support/fixtures.js';

/**
 * Approvals through the real app on a real database (docs/governance.md "Approvals"): a covered
 * promotion becomes a promotion request (202 approval-required, nothing issued, the answer replayed
 * for its Idempotency-Key); the requester cannot approve it; two distinct approvers issue exactly one
 * rollout under the generation it named; a request another rollout overtook is void, and so is one
 * that expired without its quorum.
 */

const approvals = { required: 2, approvers: [{ role: 'admin' }, { role: 'api' }], requestTtlSeconds: 3600 };

describe('approvals', () => {
  let t: TestApp;
  let admin: string;
  let requester: string;
  let alice: string;
  let bob: string;
  let reader: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({}, { now: () => clock });
    admin = await t.token('admin');
    [requester, alice, bob, reader] = await Promise.all([
      t.token('api', { subject: 'ci-pipeline' }), t.token('admin', { subject: 'alice' }),
      t.token('api', { subject: 'bob' }), t.token('user', { subject: 'carol' }),
    ]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  }, 60_000);
  afterAll(async () => { await t?.close(); });
  beforeEach(() => { clock = Date.now(); });

  const approve = (svc: FixtureService, requestId: string, token: string) =>
    t.app.inject({ method: 'POST', url: `/v1/services/${svc.id}/promotion-requests/${requestId}/approve`, headers: bearer(token) });
  const serviceOf = async (svc: FixtureService) => (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json();

  async function requested (svc: FixtureService, releaseId: string, generation: number, key?: string) {
    const res = await promote(t.app, requester, svc.id, releaseId, { generation, ...(key ? { key } : {}), reason: 'ship it' });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ code: 'approval-required', promotionRequest: { required: 2, approvals: 0, expectedRolloutGeneration: generation } });
    return res.json().promotionRequest.requestId as string;
  }

  it('a covered promotion is a request: nothing issued, the answer replayed for its key; the requester never approves it', async () => {
    const svc = await createFixtureService(t.app, admin, { promotionPolicy: { approvals } });
    const a = await pushRelease(t.app, requester, svc);
    const before = JSON.stringify(await serviceOf(svc));
    const requestId = await requested(svc, a.releaseId, 0, 'same-key');
    expect(await requested(svc, a.releaseId, 0, 'same-key')).toBe(requestId);
    expect(JSON.stringify(await serviceOf(svc))).toBe(before);
    expect(await fullRolloutHistory(t.app, admin, svc.id)).toHaveLength(0);

    const self = await approve(svc, requestId, requester);
    expect(self.statusCode, self.body).toBe(403);
    expect(self.json()).toMatchObject({ code: 'approval-not-allowed', reason: 'self-approval' });
    const notListed = await approve(svc, requestId, reader);
    expect(notListed.json()).toMatchObject({ code: 'approval-not-allowed', reason: 'not-an-approver' });

    const first = await approve(svc, requestId, alice);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().promotionRequest).toMatchObject({ state: 'pending', approvals: [{ subject: 'alice' }] });
    const twice = await approve(svc, requestId, alice);
    expect(twice.json()).toMatchObject({ code: 'approval-not-allowed', reason: 'already-approved' });
    expect(await fullRolloutHistory(t.app, admin, svc.id)).toHaveLength(0);

    const second = await approve(svc, requestId, bob);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().promotionRequest).toMatchObject({ state: 'issued', rolloutId: expect.any(String) });
    expect(second.json().service.data.imageDeployment).toMatchObject({ releaseId: a.releaseId, rolloutGeneration: 1 });
    const history = await fullRolloutHistory(t.app, admin, svc.id);
    expect(history).toHaveLength(1);
    expect(history[0]?.reason).toContain('approved by alice, bob');

    // Over TypedRequest too: the list, and an approval of an issued request changes nothing.
    const typed = await callTypedRequest(t.app, 'getPromotionRequests', { identity: identity(reader), serviceId: svc.id });
    expect(typed.json().response.promotionRequests[0]).toMatchObject({ requestId, state: 'issued' });
    const typedApproval = await callTypedRequest(t.app, 'approvePromotionRequest', { identity: identity(admin), serviceId: svc.id, requestId });
    expect(typedApproval.json().response.promotionRequest.state).toBe('issued');

    // Read back; a late approval changes nothing.
    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/promotion-requests/${requestId}`, headers: bearer(reader) });
    expect(read.json().promotionRequest).toMatchObject({ state: 'issued', rolloutId: second.json().promotionRequest.rolloutId });
    expect((await approve(svc, requestId, admin)).json().promotionRequest.state).toBe('issued');
    expect(await fullRolloutHistory(t.app, admin, svc.id)).toHaveLength(1);
  });

  it('a request whose generation moved is void; so is one that expired without its quorum', async () => {
    const svc = await createFixtureService(t.app, admin, { promotionPolicy: { approvals: { ...approvals, appliesTo: ['promotion'] } } });
    const a = await pushRelease(t.app, requester, svc, { tag: 'a' });
    const b = await pushRelease(t.app, requester, svc, { tag: 'b' });
    const overtaken = await requested(svc, a.releaseId, 0);
    expect((await approve(svc, overtaken, alice)).statusCode).toBe(200);
    // Another rollout comes first: an automatic one is not covered by this policy (appliesTo: promotion only) — a second request, approved, is.
    const other = await requested(svc, b.releaseId, 0);
    await approve(svc, other, alice);
    expect((await approve(svc, other, bob)).json().promotionRequest.state).toBe('issued');
    const moved = await approve(svc, overtaken, bob);
    expect(moved.statusCode, moved.body).toBe(409);
    expect(moved.json()).toMatchObject({ code: 'promotion-request-void', reason: 'generation-moved', currentGeneration: 1 });

    const late = await requested(svc, a.releaseId, 1);
    clock += 3601_000;
    const expired = await approve(svc, late, alice);
    expect(expired.statusCode, expired.body).toBe(409);
    expect(expired.json()).toMatchObject({ code: 'promotion-request-void', reason: 'expired' });
    const listed = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/promotion-requests`, headers: bearer(reader) });
    expect(listed.json().promotionRequests.map((r: { state: string }) => r.state)).toEqual(['void', 'issued', 'void']);
  });
});
