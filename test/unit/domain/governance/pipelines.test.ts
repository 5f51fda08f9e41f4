import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digestsEligibleAt, pipelineVerdict, stageVerdict, type StageFacts, type StageRollout } from '../../../../src/domain/governance/pipelines.js';

const T = 1_800_000_000_000;
const s = (seconds: number): number => T + seconds * 1000;
const D1 = `sha256:${'1'.repeat(64)}`;
const D2 = `sha256:${'2'.repeat(64)}`;
const HOUR = 3600;

const staging = (rollouts: StageRollout[]): StageFacts => ({ serviceId: 'svc-staging', serviceName: 'shop-staging', rollouts });
const stage = { serviceId: 'svc-staging', soakSeconds: HOUR };
const rollout = (id: string, digest: string, issuedAt: number, more: Partial<StageRollout> = {}): StageRollout =>
  ({ rolloutId: id, digest, issuedAt, ...more });

describe('one stage', () => {
  it('never promoted there', () => {
    expect(stageVerdict(D1, stage, staging([rollout('r1', D2, s(0), { succeededAt: s(10) })]), s(5000)))
      .toEqual({ serviceId: 'svc-staging', serviceName: 'shop-staging', soakSeconds: HOUR, satisfied: false, missing: 'never-promoted' });
    expect(stageVerdict(D1, stage, undefined, s(0))).toMatchObject({ satisfied: false, missing: 'never-promoted' });
    // A rollout issued after the instant asked about does not exist yet.
    expect(stageVerdict(D1, stage, staging([rollout('r1', D1, s(100))]), s(50))).toMatchObject({ missing: 'never-promoted' });
  });

  it('promoted, not succeeded yet: in progress, or replaced before it succeeded', () => {
    expect(stageVerdict(D1, stage, staging([rollout('r1', D1, s(0))]), s(60))).toMatchObject({ missing: 'not-succeeded', rolloutId: 'r1', inProgress: true });
    const replaced = rollout('r1', D1, s(0), { ended: { at: s(30), kind: 'superseded' } });
    expect(stageVerdict(D1, stage, staging([replaced]), s(60))).toMatchObject({ missing: 'not-succeeded', inProgress: false });
  });

  it('succeeded and still there: not soaked, with the time left, until exactly the soak has passed', () => {
    const facts = staging([rollout('r1', D1, s(0), { succeededAt: s(100) })]);
    expect(stageVerdict(D1, stage, facts, s(100 + 1200))).toMatchObject({
      satisfied: false, missing: 'not-soaked', rolloutId: 'r1', succeededAt: s(100), ranSeconds: 1200, remainingSeconds: 2400, soakedAt: s(100 + HOUR),
    });
    expect(stageVerdict(D1, stage, facts, s(100 + HOUR) - 1)).toMatchObject({ missing: 'not-soaked', remainingSeconds: 1 });
    expect(stageVerdict(D1, stage, facts, s(100 + HOUR))).toMatchObject({ satisfied: true, rolloutId: 'r1', succeededAt: s(100), soakedAt: s(100 + HOUR) });
  });

  it('soaked and then superseded by a newer build: still verified there', () => {
    const facts = staging([rollout('r1', D1, s(0), { succeededAt: s(100), ended: { at: s(100 + 2 * HOUR), kind: 'superseded' } })]);
    expect(stageVerdict(D1, stage, facts, s(10 * HOUR))).toMatchObject({ satisfied: true, soakedAt: s(100 + HOUR) });
  });

  it('replaced before the soak ended: not soaked, how long it ran, and no time left (promote it there again)', () => {
    const facts = staging([rollout('r1', D1, s(0), { succeededAt: s(100), ended: { at: s(700), kind: 'superseded' } })]);
    const verdict = stageVerdict(D1, stage, facts, s(10 * HOUR));
    expect(verdict).toMatchObject({ missing: 'not-soaked', ranSeconds: 600 });
    expect(verdict).not.toHaveProperty('remainingSeconds');
  });

  it('failed there', () => {
    const facts = staging([rollout('r1', D1, s(0), { failure: { at: s(50), reason: 'replica-failed' } })]);
    expect(stageVerdict(D1, stage, facts, s(60))).toMatchObject({ missing: 'failed', rolloutId: 'r1', failedAt: s(50), reason: 'replica-failed' });
  });

  it('revoked there: refused, and an earlier soaked rollout of the digest no longer counts; a later success that soaks does', () => {
    const soakedThenSuperseded = rollout('r1', D1, s(0), { succeededAt: s(10), ended: { at: s(2 * HOUR), kind: 'superseded' } });
    const revoked = rollout('r2', D1, s(3 * HOUR), { succeededAt: s(3 * HOUR + 10), revokedAt: s(5 * HOUR) });
    expect(stageVerdict(D1, stage, staging([soakedThenSuperseded, revoked]), s(5 * HOUR) - 1), 'before the revocation').toMatchObject({ satisfied: true });
    expect(stageVerdict(D1, stage, staging([soakedThenSuperseded, revoked]), s(6 * HOUR)))
      .toMatchObject({ missing: 'revoked', rolloutId: 'r2', revokedAt: s(5 * HOUR) });
    const again = rollout('r3', D1, s(7 * HOUR), { succeededAt: s(7 * HOUR + 10) });
    expect(stageVerdict(D1, stage, staging([soakedThenSuperseded, revoked, again]), s(7 * HOUR + 20))).toMatchObject({ missing: 'not-soaked' });
    expect(stageVerdict(D1, stage, staging([soakedThenSuperseded, revoked, again]), s(8 * HOUR + 10))).toMatchObject({ satisfied: true, rolloutId: 'r3' });
  });

  it('rolled back or aborted away from it there: refused, whatever earlier rollouts of it did', () => {
    for (const kind of ['rolled-back', 'aborted'] as const) {
      const facts = staging([
        rollout('r1', D1, s(0), { succeededAt: s(10), ended: { at: s(2 * HOUR), kind: 'superseded' } }),
        rollout('r2', D1, s(3 * HOUR), { succeededAt: s(3 * HOUR + 10), ended: { at: s(3 * HOUR + 600), kind } }),
      ]);
      expect(stageVerdict(D1, stage, facts, s(9 * HOUR)), kind)
        .toMatchObject({ missing: 'rolled-back', rolloutId: 'r2', endedAt: s(3 * HOUR + 600), by: kind });
    }
  });

  it('a rollback that rolled back to the digest there counts as a success of it', () => {
    const facts = staging([rollout('rb', D1, s(0), { succeededAt: s(20) })]);
    expect(stageVerdict(D1, { ...stage, soakSeconds: 0 }, facts, s(20))).toMatchObject({ satisfied: true, soakedAt: s(20) });
  });
});

describe('a pipeline of stages', () => {
  const pipeline = { requires: [{ serviceId: 'svc-staging', soakSeconds: HOUR }, { serviceId: 'svc-canary', soakSeconds: 600 }], automaticPromotion: true };
  const canary = (rollouts: StageRollout[]): StageFacts => ({ serviceId: 'svc-canary', rollouts });

  it('no pipeline: allowed', () => {
    expect(pipelineVerdict(D1, undefined, [], s(0))).toEqual({ allowed: true, stages: [] });
  });

  it('refused by the first stage that is not satisfied, in the policy\'s order, and says when it will be eligible if only soaks remain', () => {
    const facts = [staging([rollout('s1', D1, s(0), { succeededAt: s(100) })]), canary([rollout('c1', D1, s(200), { succeededAt: s(300) })])];
    const soaking = pipelineVerdict(D1, pipeline, facts, s(1000));
    expect(soaking).toMatchObject({
      allowed: false, refusedBy: { serviceId: 'svc-staging', missing: 'not-soaked', remainingSeconds: 2700 }, eligibleAt: s(100 + HOUR),
    });
    expect(soaking.stages.map((v) => v.satisfied)).toEqual([false, true]);
    const allowed = pipelineVerdict(D1, pipeline, facts, s(100 + HOUR));
    expect(allowed).toMatchObject({ allowed: true, eligibleAt: s(100 + HOUR) });
    expect(allowed).not.toHaveProperty('refusedBy');
    const missingCanary = pipelineVerdict(D1, pipeline, [facts[0] as StageFacts], s(100 + HOUR));
    expect(missingCanary).toMatchObject({ allowed: false, refusedBy: { serviceId: 'svc-canary', missing: 'never-promoted' } });
    expect(missingCanary).not.toHaveProperty('eligibleAt');
  });

  it('automatic promotion: the digests that became eligible, oldest first, once each (exclude), only when enabled', () => {
    const facts = [
      staging([
        rollout('s1', D1, s(0), { succeededAt: s(100), ended: { at: s(5000), kind: 'superseded' } }),
        rollout('s2', D2, s(5000), { succeededAt: s(5100) }),
      ]),
      canary([rollout('c1', D1, s(200), { succeededAt: s(300) }), rollout('c2', D2, s(5200), { succeededAt: s(5300) })]),
    ];
    expect(digestsEligibleAt(pipeline, facts, s(5000))).toEqual([{ digest: D1, eligibleAt: s(100 + HOUR) }]);
    expect(digestsEligibleAt(pipeline, facts, s(5100 + HOUR))).toEqual([{ digest: D1, eligibleAt: s(100 + HOUR) }, { digest: D2, eligibleAt: s(5100 + HOUR) }]);
    expect(digestsEligibleAt(pipeline, facts, s(5100 + HOUR), { since: s(100 + HOUR) })).toEqual([{ digest: D2, eligibleAt: s(5100 + HOUR) }]);
    expect(digestsEligibleAt(pipeline, facts, s(5100 + HOUR), { exclude: new Set([D1]) })).toEqual([{ digest: D2, eligibleAt: s(5100 + HOUR) }]);
    expect(digestsEligibleAt({ ...pipeline, automaticPromotion: false }, facts, s(9 * HOUR))).toEqual([]);
    expect(digestsEligibleAt(undefined, facts, s(9 * HOUR))).toEqual([]);
  });
});

describe('properties', () => {
  const rolloutsArb = fc.array(fc.record({
    digest: fc.constantFrom(D1, D2),
    issued: fc.integer({ min: 0, max: 20_000 }),
    success: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
    failure: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
    revoked: fc.option(fc.integer({ min: 1, max: 20_000 }), { nil: undefined }),
    ended: fc.option(fc.record({
      after: fc.integer({ min: 1, max: 20_000 }),
      kind: fc.constantFrom('superseded' as const, 'rolled-back' as const, 'aborted' as const),
    }), { nil: undefined }),
  }), { maxLength: 6 }).map((rs) => rs.map((r, i) => rollout(`r${i}`, r.digest, s(r.issued), {
    ...(r.success === undefined ? {} : { succeededAt: s(r.issued + r.success) }),
    ...(r.success === undefined && r.failure !== undefined ? { failure: { at: s(r.issued + r.failure), reason: 'replica-failed' } } : {}),
    ...(r.success !== undefined && r.revoked !== undefined ? { revokedAt: s(r.issued + r.success + r.revoked) } : {}),
    ...(r.ended === undefined ? {} : { ended: { at: s(r.issued + r.ended.after), kind: r.ended.kind } }),
  })));

  it('once satisfied, a stage stays satisfied as time passes unless a revocation or a rollback away from the digest comes in between', () => {
    fc.assert(fc.property(rolloutsArb, fc.integer({ min: 0, max: 50_000 }), fc.integer({ min: 0, max: 50_000 }), (rollouts, a, b) => {
      const [early, late] = a <= b ? [s(a), s(b)] : [s(b), s(a)];
      const before = stageVerdict(D1, stage, staging(rollouts), early);
      if (!before.satisfied) return;
      const objection = rollouts.some((r) => r.digest === D1 && (
        (r.revokedAt !== undefined && r.revokedAt > early && r.revokedAt <= late) ||
        (r.ended !== undefined && r.ended.kind !== 'superseded' && r.ended.at > early && r.ended.at <= late)));
      expect(stageVerdict(D1, stage, staging(rollouts), late).satisfied || objection).toBe(true);
    }), { numRuns: 300 });
  });

  it('a satisfied stage names a rollout of the digest that succeeded at least the soak before, and was neither revoked nor rolled back by then', () => {
    fc.assert(fc.property(rolloutsArb, fc.integer({ min: 0, max: 50_000 }), (rollouts, at) => {
      const verdict = stageVerdict(D1, stage, staging(rollouts), s(at));
      if (!verdict.satisfied) return;
      const r = rollouts.find((x) => x.rolloutId === verdict.rolloutId);
      expect(r?.digest).toBe(D1);
      expect(verdict.soakedAt).toBe((r?.succeededAt ?? Infinity) + HOUR * 1000);
      expect(verdict.soakedAt).toBeLessThanOrEqual(s(at));
      expect(r?.revokedAt === undefined || r.revokedAt > s(at)).toBe(true);
    }), { numRuns: 300 });
  });
});
