import { describe, expect, it } from 'vitest';
import type { GlobalGovernance, IPromotionWindow } from '../../../../src/contracts/promotionPolicy.js';
import type { PrincipalRef } from '../../../../src/domain/governance/approvals.js';
import {
  approveBreakGlass, breakGlassCovers, breakGlassRequestRefusal, breakGlassState, type BreakGlassGrant,
} from '../../../../src/domain/governance/breakGlass.js';
import { freezeDecision, pipelineRefusal } from '../../../../src/domain/governance/gate.js';
import { effectivePromotionPolicy } from '../../../../src/domain/governance/policy.js';

const t = (iso: string): number => Date.parse(iso);
const alice: PrincipalRef = { subject: 'alice', role: 'admin' };
const bob: PrincipalRef = { subject: 'bob', role: 'admin' };
const carol: PrincipalRef = { subject: 'carol', role: 'api' };

const weekendFreeze: IPromotionWindow = {
  name: 'weekend-freeze',
  kind: 'deny',
  start: '2025-01-03T16:00',
  timeZone: 'Europe/Berlin',
  rrule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=16',
  durationSeconds: 60 * 3600,
};
const policy = effectivePromotionPolicy({ windows: [weekendFreeze], breakGlass: { allowed: true, maxSeconds: 1800 } });
/** Saturday of the spring-forward weekend: inside the freeze, which ends Monday 31 March 03:00Z. */
const saturday = t('2025-03-29T12:00:00Z');
const grant: BreakGlassGrant = {
  grantId: 'bg_1', serviceId: 'svc', releaseId: 'v3-hotfix', requester: alice, reason: 'CVE fix for checkout', createdAt: saturday,
};
const approved: BreakGlassGrant = { ...grant, approval: { approver: bob, at: saturday + 60_000 } };
const promotion = { intent: 'promotion' as const, serviceId: 'svc', releaseId: 'v3-hotfix', policy };

describe('freeze: stop-the-line, windows, break-glass', () => {
  it('a promotion inside a weekly deny window is refused with the window and the next opening (across the Berlin DST change)', () => {
    const decision = freezeDecision({ ...promotion, at: saturday });
    expect(decision).toMatchObject({ pass: false, opensAt: t('2025-03-31T03:00:00Z'), error: { code: 'promotion-window-closed', statusCode: 423 } });
    if (decision.pass) return;
    expect(decision.error.message).toContain("the service deny window 'weekend-freeze'");
    expect(decision.error.message).toContain('they open at 2025-03-31T03:00:00.000Z');
  });

  it('a rollback, an abort and an automatic rollback inside it go through', () => {
    for (const intent of ['rollback', 'abort', 'automatic-rollback'] as const) {
      expect(freezeDecision({ ...promotion, intent, at: saturday }), intent).toEqual({ pass: true, via: 'exempt' });
    }
  });

  it('global windows close every service, on top of its own', () => {
    const holiday: IPromotionWindow = { name: 'holiday', kind: 'deny', start: '2025-04-01T00:00', timeZone: 'Europe/Berlin', duration: 'P1D' };
    const global: GlobalGovernance = { windows: [holiday] };
    expect(freezeDecision({ ...promotion, policy: effectivePromotionPolicy(undefined), global, at: t('2025-04-01T10:00:00Z') }))
      .toMatchObject({ pass: false, error: { details: { window: 'holiday', scope: 'global' } } });
    expect(freezeDecision({ ...promotion, global, at: t('2025-04-02T10:00:00Z') })).toEqual({ pass: true, via: 'open' });
  });

  it('stop-the-line refuses every promotion, open window or not, break-glass or not; rollbacks and aborts pass', () => {
    const global: GlobalGovernance = { stopTheLine: { active: true, reason: 'incident 42', by: 'alice', since: saturday } };
    const monday = t('2025-03-31T10:00:00Z');
    for (const intent of ['promotion', 'automatic-promotion', 'pipeline-promotion'] as const) {
      expect(freezeDecision({ ...promotion, intent, global, at: monday }), intent)
        .toMatchObject({ pass: false, error: { code: 'stop-the-line', statusCode: 423, details: { reason: 'incident 42', by: 'alice' } } });
    }
    expect(freezeDecision({ ...promotion, global, breakGlass: approved, at: saturday + 120_000 }))
      .toMatchObject({ pass: false, error: { code: 'stop-the-line' } });
    expect(freezeDecision({ ...promotion, intent: 'abort', global, at: monday })).toEqual({ pass: true, via: 'exempt' });
    expect(freezeDecision({ ...promotion, global: { stopTheLine: { active: false } }, at: monday })).toEqual({ pass: true, via: 'open' });
  });

  it('break-glass passes the freeze once, within its time box, for its release only', () => {
    const inBox = saturday + 120_000;
    expect(freezeDecision({ ...promotion, breakGlass: approved, at: inBox }))
      .toEqual({ pass: true, via: 'break-glass', grantId: 'bg_1', until: saturday + 60_000 + 1_800_000 });
    expect(freezeDecision({ ...promotion, breakGlass: approved, at: saturday + 60_000 + 1_800_000 }))
      .toMatchObject({ pass: false, error: { code: 'break-glass-not-available', details: { reason: 'expired' } } });
    expect(freezeDecision({ ...promotion, breakGlass: { ...approved, used: { rolloutId: 'ro_5', at: inBox } }, at: inBox + 1 }))
      .toMatchObject({ pass: false, error: { details: { reason: 'used' } } });
    expect(freezeDecision({ ...promotion, releaseId: 'v4', breakGlass: approved, at: inBox }))
      .toMatchObject({ pass: false, error: { details: { reason: 'other-release' } } });
    expect(freezeDecision({ ...promotion, breakGlass: grant, at: inBox })).toMatchObject({ pass: false, error: { details: { reason: 'awaiting-approval' } } });
    expect(freezeDecision({ ...promotion, intent: 'automatic-promotion', breakGlass: approved, at: inBox }))
      .toMatchObject({ pass: false, error: { details: { reason: 'not-a-promotion' } } });
    // Outside the freeze a grant is not needed and not used.
    expect(freezeDecision({ ...promotion, breakGlass: approved, at: t('2025-03-31T10:00:00Z') })).toEqual({ pass: true, via: 'open' });
  });
});

describe('break-glass grants', () => {
  it('need the policy to allow them and a reason', () => {
    expect(breakGlassRequestRefusal(effectivePromotionPolicy(undefined), 'hotfix'))
      .toMatchObject({ code: 'break-glass-not-available', details: { reason: 'not-allowed' } });
    expect(breakGlassRequestRefusal(policy, '  ')).toMatchObject({ code: 'validation-failed' });
    expect(breakGlassRequestRefusal(policy, 'hotfix')).toBeUndefined();
    expect(breakGlassCovers(effectivePromotionPolicy({ windows: [weekendFreeze] }), approved, { ...promotion, at: saturday + 120_000 }))
      .toMatchObject({ covers: false, error: { details: { reason: 'not-allowed' } } });
  });

  it('one approval from someone else: never the requester; an admin, or one the approval policy admits', () => {
    expect(approveBreakGlass(policy, grant, alice, saturday + 1000))
      .toMatchObject({ ok: false, error: { code: 'approval-not-allowed', details: { reason: 'self-approval' } } });
    expect(approveBreakGlass(policy, grant, carol, saturday + 1000)).toMatchObject({ ok: false, error: { details: { reason: 'not-an-approver' } } });
    expect(approveBreakGlass(policy, grant, bob, saturday + 1000))
      .toEqual({ ok: true, approval: { approver: bob, at: saturday + 1000 }, until: saturday + 1000 + 1_800_000 });
    const withApprovals = effectivePromotionPolicy({
      windows: [weekendFreeze], breakGlass: { allowed: true }, approvals: { required: 2, approvers: [{ subject: 'carol' }] },
    });
    expect(approveBreakGlass(withApprovals, grant, carol, saturday + 1000)).toMatchObject({ ok: true });
    expect(approveBreakGlass(withApprovals, grant, bob, saturday + 1000)).toMatchObject({ ok: false, error: { details: { reason: 'not-an-approver' } } });
    expect(approveBreakGlass(policy, approved, carol, saturday + 120_000)).toMatchObject({ ok: false, error: { details: { reason: 'already-approved' } } });
  });

  it('is time-boxed: approved within maxSeconds of the request, active maxSeconds from the approval', () => {
    expect(breakGlassState(policy.breakGlass, grant, saturday + 1_799_999)).toEqual({ state: 'awaiting-approval', approveBy: saturday + 1_800_000 });
    expect(breakGlassState(policy.breakGlass, grant, saturday + 1_800_000)).toEqual({ state: 'expired', at: saturday + 1_800_000 });
    expect(approveBreakGlass(policy, grant, bob, saturday + 1_800_000)).toMatchObject({ ok: false, error: { details: { reason: 'expired' } } });
    expect(breakGlassState(policy.breakGlass, approved, saturday + 60_000 + 1_799_999)).toEqual({ state: 'active', until: saturday + 60_000 + 1_800_000 });
  });
});

describe('pipelines as an admission rule', () => {
  const digest = `sha256:${'c'.repeat(64)}`;
  const pipelined = effectivePromotionPolicy({ pipeline: { requires: [{ serviceId: 'staging', soakSeconds: 3600 }] } });
  const facts = [{ serviceId: 'staging', rollouts: [{ rolloutId: 'r1', digest, issuedAt: 0, succeededAt: 1000 }] }];

  it('refuses a digest not yet soaked with the time left; a rollback passes', () => {
    expect(pipelineRefusal(digest, pipelined, facts, 1000 + 600_000, 'promotion'))
      .toMatchObject({ code: 'pipeline-stage-not-satisfied', statusCode: 409, details: { stage: 'staging', missing: 'not-soaked', remainingSeconds: 3000 } });
    expect(pipelineRefusal(digest, pipelined, facts, 1000 + 600_000, 'rollback')).toBeNull();
    expect(pipelineRefusal(digest, pipelined, facts, 1000 + 3_600_000, 'pipeline-promotion')).toBeNull();
    expect(pipelineRefusal(digest, effectivePromotionPolicy(undefined), [], 0, 'promotion')).toBeNull();
  });
});
