import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  approvalsFor, countedApprovals, decideApproval, quorumReachable, requestExpiresAt, requestState,
  type Approval, type PrincipalRef, type PromotionRequest,
} from '../../../../src/domain/governance/approvals.js';
import { effectivePromotionPolicy, type EffectiveApprovals } from '../../../../src/domain/governance/policy.js';

const T = 1_800_000_000_000;
const alice: PrincipalRef = { subject: 'alice', role: 'admin', type: 'human' };
const bob: PrincipalRef = { subject: 'bob', role: 'admin', type: 'human' };
const carol: PrincipalRef = { subject: 'carol', role: 'user', type: 'human' };
const ci: PrincipalRef = { subject: 'ci-bot', role: 'api', type: 'machine' };

const policy = effectivePromotionPolicy({ approvals: { required: 2, approvers: [{ role: 'admin' }, { subject: 'carol' }], requestTtlSeconds: 3600 } });
const approvals = policy.approvals as EffectiveApprovals;
const request: PromotionRequest = {
  requestId: 'pr_1',
  serviceId: 'svc',
  releaseId: 'v3',
  intent: 'promotion',
  requester: alice,
  expectedRolloutGeneration: 7,
  createdAt: T,
  expiresAt: requestExpiresAt(approvals, T),
};
const now = { at: T + 60_000, currentGeneration: 7 };
const approval = (who: PrincipalRef, at = T + 1000, key?: string): Approval => ({ approver: who, at, ...(key === undefined ? {} : { key }) });

describe('which operations need approvals', () => {
  it('promotions of every kind by default; rollbacks and aborts only when listed; an automatic rollback never', () => {
    for (const intent of ['promotion', 'automatic-promotion', 'pipeline-promotion'] as const) expect(approvalsFor(policy, intent), intent).toBe(approvals);
    for (const intent of ['rollback', 'abort', 'automatic-rollback'] as const) expect(approvalsFor(policy, intent), intent).toBeUndefined();
    const strict = effectivePromotionPolicy({ approvals: { required: 1, approvers: [{ role: 'admin' }], appliesTo: ['promotion', 'rollback', 'abort'] } });
    expect(approvalsFor(strict, 'rollback')).toBeDefined();
    expect(approvalsFor(strict, 'abort')).toBeDefined();
    expect(approvalsFor(strict, 'automatic-rollback')).toBeUndefined();
    expect(approvalsFor(strict, 'automatic-promotion')).toBeUndefined();
    expect(approvalsFor(effectivePromotionPolicy(undefined), 'promotion')).toBeUndefined();
  });

  it('a request expires after requestTtlSeconds; a quorum of named subjects that only the requester could complete is unreachable', () => {
    expect(request.expiresAt).toBe(T + 3_600_000);
    const named = { ...approvals, approvers: [{ subject: 'alice' }, { subject: 'bob' }] };
    expect(quorumReachable(named, alice)).toBe(false);
    expect(quorumReachable(named, carol)).toBe(true);
    expect(quorumReachable(approvals, alice), 'a role admits any number').toBe(true);
  });
});

describe('deciding an approval', () => {
  it('the requester can never approve their own request, whatever role they hold', () => {
    const decision = decideApproval(approvals, request, [], { ...alice, role: 'admin' }, now);
    expect(decision).toMatchObject({ outcome: 'refused', error: { code: 'approval-not-allowed', details: { reason: 'self-approval' } } });
  });

  it('only a listed role or subject may approve', () => {
    expect(decideApproval(approvals, request, [], ci, now)).toMatchObject({ outcome: 'refused', error: { details: { reason: 'not-an-approver' } } });
    expect(decideApproval(approvals, request, [], carol, now), 'carol is named').toMatchObject({ outcome: 'recorded', remaining: 1 });
    expect(decideApproval(approvals, request, [], { subject: 'dave', role: 'user' }, now)).toMatchObject({ outcome: 'refused' });
  });

  it('approvers are distinct: the same principal twice is refused and would not count twice', () => {
    expect(decideApproval(approvals, request, [approval(bob)], { ...bob, role: 'admin' }, now))
      .toMatchObject({ outcome: 'refused', error: { code: 'approval-not-allowed', details: { reason: 'already-approved' } } });
    expect(countedApprovals(approvals, request, [approval(bob), approval(bob, T + 2000)])).toHaveLength(1);
  });

  it('the approval that completes the quorum issues, naming the approvers; a later approval of an issued request records nothing', () => {
    const first = decideApproval(approvals, request, [], bob, now);
    expect(first).toEqual({ outcome: 'recorded', approval: { approver: bob, at: now.at }, remaining: 1 });
    const second = decideApproval(approvals, request, [approval(bob)], carol, now);
    const carolNow = { approver: carol, at: now.at };
    expect(second).toEqual({ outcome: 'quorum-reached', approval: carolNow, approvedBy: [approval(bob), carolNow] });
    expect(decideApproval(approvals, { ...request, issued: { rolloutId: 'ro_9', at: now.at } }, [approval(bob), approval(carol)], ci, now))
      .toEqual({ outcome: 'issued', rolloutId: 'ro_9' });
  });

  it('a quorum reached but not issued yet (a crash in between) is completed by the next approval, or by the same one retried', () => {
    const given = [approval(bob, T + 1000, 'k-bob'), approval(carol, T + 2000, 'k-carol')];
    expect(decideApproval(approvals, request, given, carol, { ...now, key: 'k-carol' })).toEqual({ outcome: 'quorum-reached', approvedBy: given });
    expect(decideApproval(approvals, request, given, carol, now), 'carol again, another key').toEqual({ outcome: 'quorum-reached', approvedBy: given });
    // A retried approval while still pending answers as the first time, and records nothing new.
    expect(decideApproval(approvals, request, [given[0] as Approval], bob, { ...now, key: 'k-bob' }))
      .toEqual({ outcome: 'recorded', approval: given[0], remaining: 1 });
  });

  it('expired without its quorum: void; a quorum reached before the expiry survives it', () => {
    const late = { at: request.expiresAt, currentGeneration: 7 };
    expect(decideApproval(approvals, request, [approval(bob)], carol, late))
      .toMatchObject({ outcome: 'refused', error: { code: 'promotion-request-void', details: { reason: 'expired' } } });
    expect(requestState(approvals, request, [approval(bob), approval(carol)], late)).toMatchObject({ state: 'approved' });
    // An approval given at or after the expiry never counts.
    expect(countedApprovals(approvals, request, [approval(bob), approval(carol, request.expiresAt)])).toHaveLength(1);
  });

  it('the service generation moved since the request: void, even with the quorum reached', () => {
    const moved = { at: now.at, currentGeneration: 8 };
    const decision = decideApproval(approvals, request, [approval(bob)], carol, moved);
    expect(decision).toMatchObject({
      outcome: 'refused', error: { code: 'promotion-request-void', details: { reason: 'generation-moved', currentGeneration: 8 } },
    });
    expect(requestState(approvals, request, [approval(bob), approval(carol)], moved)).toEqual({ state: 'void', reason: 'generation-moved' });
  });

  it('approvals from principals the policy no longer admits do not count', () => {
    const narrowed = { ...approvals, approvers: [{ subject: 'carol' }] };
    expect(requestState(narrowed, request, [approval(bob), approval(carol)], now)).toMatchObject({ state: 'pending', remaining: 1 });
  });
});

describe('properties', () => {
  const principals = [alice, bob, carol, ci, { subject: 'bob', role: 'user' as const }, { subject: 'erin', role: 'admin' as const }];

  it('a request is approved exactly when N distinct admitted principals other than the requester approved within its life', () => {
    const given = fc.array(fc.record({ who: fc.constantFrom(...principals), offset: fc.integer({ min: -10_000, max: 4_000_000 }) }), { maxLength: 8 });
    fc.assert(fc.property(given, fc.integer({ min: 1, max: 3 }), (list, required) => {
      const policyN = { ...approvals, required };
      const approvalsGiven = list.map(({ who, offset }) => approval(who, T + offset));
      const eligible = new Set(approvalsGiven
        .filter((a) => a.at >= T && a.at < request.expiresAt && a.approver.subject !== 'alice')
        .filter((a) => a.approver.role === 'admin' || a.approver.subject === 'carol')
        .map((a) => a.approver.subject));
      const state = requestState(policyN, request, approvalsGiven, { at: T + 10, currentGeneration: 7 });
      expect(state.state).toBe(eligible.size >= required ? 'approved' : 'pending');
      if (state.state === 'approved') {
        expect(new Set(state.approvedBy.map((a) => a.approver.subject)).size).toBe(required);
        expect(state.approvedBy.some((a) => a.approver.subject === 'alice')).toBe(false);
      }
    }), { numRuns: 300 });
  });

  it('no sequence of approvals issues twice: after the quorum every decision is quorum-reached (the store lets one issue) or refused', () => {
    fc.assert(fc.property(fc.array(fc.constantFrom(...principals), { maxLength: 10 }), (sequence) => {
      const given: Approval[] = [];
      let reached = false;
      for (const [i, who] of sequence.entries()) {
        const decision = decideApproval(approvals, request, given, who, { at: T + 1000 + i, currentGeneration: 7 });
        if (reached) expect(['quorum-reached', 'refused']).toContain(decision.outcome);
        const recorded = decision.outcome === 'recorded' || decision.outcome === 'quorum-reached' ? decision.approval : undefined;
        if (recorded !== undefined) given.push(recorded);
        if (decision.outcome === 'quorum-reached') reached = true;
        if (decision.outcome === 'refused' && who.subject === 'alice') expect(decision.error.details['reason']).toBe('self-approval');
      }
      expect(given.some((a) => a.approver.subject === 'alice')).toBe(false);
      expect(new Set(given.map((a) => a.approver.subject)).size).toBe(given.length);
    }), { numRuns: 300 });
  });
});
