import { describe, expect, it } from 'vitest';
import {
  autoRollbackCause, deadlineReason, firedTriggers, effectiveRolloutPolicy, hasProgressed, isSettled, lastVerifiedRelease, replicaStability,
  rolloutPolicyProblems, stabilityStateOf, tagFilterRefusal, triggerOf, type FailureMilestone, type RolloutLifecycle, type VerifiedRelease,
} from '../../../src/domain/lifecycle.js';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';

const W = 10;
const policy = { stabilityWindowSeconds: W, clockToleranceSeconds: 5 };
const T = 1_800_000_000_000;

/** One report about one replica, received at `receivedAt`, with the reporter's clock `skewMs` ahead. */
const report = (receivedAt: number, opts: { previous?: ReturnType<typeof replicaStability>, deployedAt?: number, skewMs?: number, verified?: boolean } = {}) =>
  replicaStability({
    previous: opts.previous,
    running: true,
    verified: opts.verified ?? true,
    deployedAt: opts.deployedAt,
    reportedAt: receivedAt + (opts.skewMs ?? 0),
    receivedAt,
    policy,
  });

describe('stability window', () => {
  it('a replica reported verified at t and again at t + W/2 does not count; at t + W it does', () => {
    const first = report(T);
    expect(first).toMatchObject({ stable: false, runningStable: false, verifiedSince: T, runningSince: T });
    const half = report(T + (W / 2) * 1000, { previous: first });
    expect(half.stable).toBe(false);
    const full = report(T + W * 1000, { previous: half });
    expect(full).toMatchObject({ stable: true, runningStable: true, verifiedSince: T });
  });

  it('a single report whose task has run W already counts at once', () => {
    expect(report(T, { deployedAt: T - W * 1000 })).toMatchObject({ stable: true, verifiedSince: T - W * 1000 });
    // One second short of the window: not yet.
    expect(report(T, { deployedAt: T - (W - 1) * 1000 }).stable).toBe(false);
  });

  it('a report whose reportedAt is off from the receipt time by more than the tolerance does not shorten the window, whatever deployedAt says', () => {
    for (const skewMs of [6_000, -6_000, 3_600_000]) {
      const r = report(T, { deployedAt: T + skewMs - 86_400_000, skewMs });
      expect(r, `skew ${skewMs}`).toMatchObject({ stable: false, verifiedSince: T });
    }
    // Within the tolerance the report's own times count.
    expect(report(T, { deployedAt: T + 4_000 - W * 1000, skewMs: 4_000 }).stable).toBe(true);
  });

  it('a break in the run starts the window again; a deployedAt in the future of its own report is ignored', () => {
    const first = report(T);
    const broken = replicaStability({ previous: first, running: false, verified: false, reportedAt: T + 5_000, receivedAt: T + 5_000, policy });
    expect(broken).toEqual({ runningStable: false, stable: false });
    expect(report(T + 11_000, { previous: broken }).verifiedSince).toBe(T + 11_000);
    expect(report(T, { deployedAt: T + 60_000 })).toMatchObject({ verifiedSince: T, stable: false });
  });

  it('deployedAt counts for a replica seen for the first time only: one an earlier report showed not verified (not running) ' +
    'starts its run at the report that first shows it verified (running)', () => {
    const longAgo = T - 3_600_000;
    const mismatched = report(T, { deployedAt: longAgo, verified: false });
    // Running for an hour by its own times (healthy at once), not verified.
    expect(mismatched).toMatchObject({ runningSince: longAgo, runningStable: true, stable: false });
    const verifiedNow = report(T + 1_000, { previous: mismatched, deployedAt: longAgo });
    expect(verifiedNow).toMatchObject({ verifiedSince: T + 1_000, stable: false, runningSince: longAgo });
    const stopped = replicaStability({ previous: verifiedNow, running: false, verified: false, reportedAt: T + 2_000, receivedAt: T + 2_000, policy });
    const runningAgain = report(T + 3_000, { previous: stopped, deployedAt: longAgo });
    expect(runningAgain).toMatchObject({ runningSince: T + 3_000, verifiedSince: T + 3_000, runningStable: false, stable: false });
  });

  it('a replica left out of the previous report, on a node the reporter reported before, is not seen for the first time: deployedAt does not count', () => {
    const longAgo = T - 3_600_000;
    const again = replicaStability({ nodeSeenBefore: true, running: true, verified: true, deployedAt: longAgo, reportedAt: T, receivedAt: T, policy });
    expect(again).toMatchObject({ runningSince: T, verifiedSince: T, stable: false });
    const newNode = replicaStability({ nodeSeenBefore: false, running: true, verified: true, deployedAt: longAgo, reportedAt: T, receivedAt: T, policy });
    expect(newNode).toMatchObject({ verifiedSince: longAgo, stable: true });
  });

  it('running without verified evidence counts as healthy after the window, never as verified', () => {
    const first = report(T, { verified: false });
    const later = report(T + W * 1000, { previous: first, verified: false });
    expect(later).toMatchObject({ runningStable: true, stable: false, runningSince: T });
    expect(later.verifiedSince).toBeUndefined();
  });

  it('window 0: counted at the first report', () => {
    expect(replicaStability({
      running: true, verified: true, reportedAt: T, receivedAt: T, policy: { stabilityWindowSeconds: 0, clockToleranceSeconds: 5 },
    }).stable).toBe(true);
  });

  it('describes where a replica stands at the time of a read', () => {
    expect(stabilityStateOf({ verifiedSince: T, stable: false }, W, T + 4_500)).toEqual({ state: 'not-yet-stable', elapsedSeconds: 4, windowSeconds: W });
    expect(stabilityStateOf({ verifiedSince: T, stable: false }, W, T + 10_000)).toEqual({ state: 'waiting-for-report', stableSince: T + 10_000 });
    expect(stabilityStateOf({ verifiedSince: T, stable: true }, W, T)).toEqual({ state: 'stable' });
    expect(stabilityStateOf({ stable: false }, W, T)).toBeUndefined();
  });
});

describe('progress and the deadline', () => {
  it('progress is a count growing beyond its maximum', () => {
    const max = { observed: 4, healthy: 2, verified: 1 };
    expect(hasProgressed(max, { observed: 4, healthy: 2, verified: 1 })).toBe(false);
    expect(hasProgressed(max, { observed: 3, healthy: 2, verified: 2 })).toBe(true);
    expect(hasProgressed(max, { observed: 2, healthy: 1, verified: 0 })).toBe(false);
  });

  it('the deadline names what is missing', () => {
    expect(deadlineReason(4, { observed: 3, healthy: 3, verified: 3 })).toBe('required-replica-missing');
    expect(deadlineReason(4, { observed: 4, healthy: 2, verified: 2 })).toBe('replica-unhealthy');
    expect(deadlineReason(4, { observed: 4, healthy: 4, verified: 3 })).toBe('runtime-attestation-missing');
  });

  it('settled: succeeded, decided, failed or mismatched, or past the deadline', () => {
    const open: RolloutLifecycle = { progress: { observed: 0, healthy: 0, verified: 0, at: T }, changes: 0, open: true };
    const p = effectiveRolloutPolicy({ progressDeadlineSeconds: 60 });
    expect(isSettled('deploying', open, p, T + 59_999)).toBe(false);
    expect(isSettled('deploying', open, p, T + 60_000)).toBe(true);
    expect(isSettled('failed', open, p, T)).toBe(true);
    expect(isSettled('deploying', { ...open, succeededAt: T }, p, T)).toBe(true);
  });
});

describe('automatic rollback', () => {
  const plan = (mode: IImmutableImageDeploymentPlan['mode']) => ({ mode } as IImmutableImageDeploymentPlan);
  const failure = (over: Partial<FailureMilestone>): FailureMilestone => ({ status: 'failed', reason: 'replica-failed', at: T, by: 'report', ...over });

  it('fires on the chosen triggers only, and never for a rollback', () => {
    const on = effectiveRolloutPolicy({ autoRollback: { enabled: true, triggers: ['deadline'] } });
    const wanted = (p: IImmutableImageDeploymentPlan, policy: typeof on, f: FailureMilestone) =>
      autoRollbackCause(p, policy, firedTriggers({ failure: f }, { status: 'deploying' }))?.trigger;
    expect(wanted(plan('promotion'), on, failure({ by: 'deadline', reason: 'required-replica-missing' }))).toBe('deadline');
    expect(wanted(plan('promotion'), on, failure({}))).toBeUndefined();
    expect(wanted(plan('rollback'), on, failure({ by: 'deadline' }))).toBeUndefined();
    expect(wanted(plan('automatic'), effectiveRolloutPolicy({ autoRollback: { enabled: true } }), failure({ status: 'mismatched' }))).toBe('mismatched');
    expect(wanted(plan('promotion'), effectiveRolloutPolicy(undefined), failure({}))).toBeUndefined();
    expect([failure({}), failure({ status: 'mismatched' }), failure({ by: 'deadline' })].map(triggerOf)).toEqual(['failed', 'mismatched', 'deadline']);
  });

  it('a chosen trigger met after a first failure on another one still fires; after a success nothing does', () => {
    const mismatchOnly = effectiveRolloutPolicy({ autoRollback: { enabled: true, triggers: ['mismatched'] } });
    const deadlineOnly = effectiveRolloutPolicy({ autoRollback: { enabled: true, triggers: ['deadline'] } });
    const firstFailed = { failure: failure({}) };
    expect(autoRollbackCause(plan('promotion'), mismatchOnly, firedTriggers(firstFailed, { status: 'mismatched', mismatchReason: 'pulled-digest-mismatch' })))
      .toEqual({ trigger: 'mismatched', status: 'mismatched', reason: 'pulled-digest-mismatch', by: 'report' });
    expect(autoRollbackCause(plan('promotion'), mismatchOnly, firedTriggers(firstFailed, { status: 'failed' }))).toBeUndefined();
    const decided = { ...firstFailed, deadline: { at: T, reason: 'required-replica-missing' as const, lastProgressAt: T, deadlineSeconds: 60 } };
    expect(autoRollbackCause(plan('promotion'), deadlineOnly, firedTriggers(decided, { status: 'failed' }))?.trigger).toBe('deadline');
    // The deadline's `failed` is the deadline trigger, not a replica's failure.
    expect(firedTriggers({ deadline: decided.deadline }, { status: 'failed' }).map((f) => f.trigger)).toEqual(['deadline']);
    expect(firedTriggers({ ...decided, succeededAt: T }, { status: 'mismatched' })).toEqual([]);
  });

  it('returns to the newest verified release that is not the digest deployed now', () => {
    const v = (generation: number, releaseId: string, digest: string): VerifiedRelease =>
      ({ rolloutId: `ro_${generation}`, generation, releaseId, requestedDigest: digest, mode: 'promotion', succeededAt: T + generation });
    const verified = [v(1, 'rel_a', 'sha256:a'), v(3, 'rel_b', 'sha256:b'), v(2, 'rel_c', 'sha256:c')];
    expect(lastVerifiedRelease(verified, { releaseId: 'rel_d', requestedDigest: 'sha256:d' })?.releaseId).toBe('rel_b');
    expect(lastVerifiedRelease(verified, { releaseId: 'rel_b', requestedDigest: 'sha256:b' })?.releaseId).toBe('rel_c');
    expect(lastVerifiedRelease([v(1, 'rel_a', 'sha256:a')], { releaseId: 'rel_a', requestedDigest: 'sha256:a' })).toBeUndefined();
    expect(lastVerifiedRelease(undefined, undefined)).toBeUndefined();
  });
});

describe('automatic promotion filter', () => {
  it('a glob pattern and a semver range, each on its own or both', () => {
    const glob = effectiveRolloutPolicy({ automaticPromotion: { tagPattern: 'release-*.?' } });
    expect(tagFilterRefusal(glob, 'release-12.3')).toBeUndefined();
    expect(tagFilterRefusal(glob, 'release-12.34')).toMatch(/does not match/);
    expect(tagFilterRefusal(glob, 'xrelease-1.2')).toMatch(/does not match/);
    const range = effectiveRolloutPolicy({ automaticPromotion: { semverRange: '^2.1.0' } });
    expect(tagFilterRefusal(range, 'v2.4.1')).toBeUndefined();
    expect(tagFilterRefusal(range, '2.1.0')).toBeUndefined();
    expect(tagFilterRefusal(range, 'v3.0.0')).toMatch(/outside the semver range/);
    expect(tagFilterRefusal(range, 'latest')).toMatch(/not a semantic version/);
    // At most one leading v, and nothing else before the version.
    for (const tag of ['vv2.4.1', '=2.4.1', ' 2.4.1', 'v=2.4.1']) expect(tagFilterRefusal(range, tag), tag).toMatch(/not a semantic version/);
    const both = effectiveRolloutPolicy({ automaticPromotion: { tagPattern: 'v*', semverRange: '>=1' } });
    expect(tagFilterRefusal(both, '1.2.3')).toMatch(/does not match/);
    expect(tagFilterRefusal(both, 'v1.2.3')).toBeUndefined();
    // Regular-expression characters in a pattern are literal.
    expect(tagFilterRefusal(effectiveRolloutPolicy({ automaticPromotion: { tagPattern: 'a.b+' } }), 'axbb')).toMatch(/does not match/);
  });

  it('an unparseable semver range is named as a problem of its field', () => {
    expect(rolloutPolicyProblems({ automaticPromotion: { semverRange: 'not a range' } }, '/rolloutPolicy'))
      .toEqual([{ field: '/rolloutPolicy/automaticPromotion/semverRange', message: expect.stringContaining('semver range') }]);
    expect(rolloutPolicyProblems({ automaticPromotion: { semverRange: '>=1.2 <2' } }, '/rolloutPolicy')).toEqual([]);
  });

  it('defaults: deadline 600 s, window 10 s, tolerance 5 s, no automatic rollback', () => {
    expect(effectiveRolloutPolicy(undefined)).toEqual({
      progressDeadlineSeconds: 600,
      stabilityWindowSeconds: 10,
      clockToleranceSeconds: 5,
      autoRollback: { enabled: false, triggers: ['failed', 'mismatched', 'deadline'] },
      automaticPromotion: {},
    });
  });
});
