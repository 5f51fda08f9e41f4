import { describe, expect, it } from 'vitest';
import type { RolloutSnapshot, RolloutView } from '../../../src/cli/release/api.js';
import { judgeSnapshot, judgeView } from '../../../src/cli/release/judge.js';
import { waitExitCode, waitResultOf } from '../../../src/cli/release/waitResult.js';

const snap = (over: Partial<RolloutSnapshot> = {}): RolloutSnapshot => ({
  rolloutId: 'ro_2',
  rolloutGeneration: 2,
  status: 'deploying',
  requiredReplicaCount: 2,
  observedReplicaCount: 1,
  healthyReplicaCount: 1,
  verifiedReplicaCount: 1,
  failedReplicaCount: 0,
  ...over,
});
const expected = { rolloutId: 'ro_2', generation: 2 };

describe('following a rollout: what an observation means', () => {
  it('older generations are ignored; another rollout at the same or a newer generation supersedes; terminal states end the wait', () => {
    expect(judgeSnapshot(snap({ rolloutId: 'ro_1', rolloutGeneration: 1, status: 'succeeded' }), expected)).toEqual({ kind: 'ignore' });
    expect(judgeSnapshot(snap({ rolloutId: 'ro_x', rolloutGeneration: 2 }), expected))
      .toEqual({ kind: 'superseded', by: { rolloutId: 'ro_x', generation: 2 } });
    expect(judgeSnapshot(snap(), expected)).toEqual({ kind: 'progress', snapshot: snap() });
    for (const status of ['succeeded', 'rolled-back', 'failed', 'mismatched']) expect(judgeSnapshot(snap({ status }), expected).kind).toBe('terminal');
    for (const status of ['pending', 'deploying', 'verifying', 'rolling-back']) expect(judgeSnapshot(snap({ status }), expected).kind).toBe('progress');
  });

  it('a view with a newer plan supersedes even before its status exists; a view without status says nothing', () => {
    const view = { serviceId: 's', revision: 1, reporters: [], blocking: [], plan: { rolloutId: 'ro_3', rolloutGeneration: 3 } } as unknown as RolloutView;
    expect(judgeView(view, expected)).toEqual({ kind: 'superseded', by: { rolloutId: 'ro_3', generation: 3 } });
    expect(judgeView({ ...view, plan: undefined } as unknown as RolloutView, expected)).toEqual({ kind: 'ignore' });
  });

  it('the result line for each outcome, and its exit code', () => {
    const base = { serviceId: 's', expected, blocking: [], via: 'sse' as const, elapsedMs: 1234 };
    const terminal = (status: string) => ({ kind: 'terminal' as const, snapshot: snap({ status }) });
    const done = waitResultOf({ ...base, verdict: terminal('succeeded'), last: snap({ status: 'succeeded' }) });
    expect(done).toMatchObject({
      outcome: 'succeeded', status: 'succeeded', message: 'rollout ro_2 (generation 2) succeeded: observed 1/2, healthy 1/2, verified 1/2',
    });
    const failed = waitResultOf({ ...base, verdict: terminal('failed'), last: snap({ status: 'failed', mismatchReason: 'replica-failed' }) });
    expect(failed.message).toBe('rollout ro_2 (generation 2) failed: replica-failed (observed 1/2, healthy 1/2, verified 1/2)');
    const deadline = { at: 1_700_000_600_000, reason: 'required-replica-missing', lastProgressAt: 1_700_000_000_000, deadlineSeconds: 600 };
    const late = waitResultOf({ ...base, verdict: terminal('failed'), last: snap({ status: 'failed', mismatchReason: 'required-replica-missing' }), deadline });
    expect(late).toMatchObject({ outcome: 'failed', mismatchReason: 'required-replica-missing', deadlineExceeded: deadline });
    expect(late.message).toBe('rollout ro_2 (generation 2) failed: progress deadline exceeded (no progress for 600 s since 2023-11-14T22:13:20Z): ' +
      'required-replica-missing (observed 1/2, healthy 1/2, verified 1/2)');
    expect(waitResultOf({ ...base, verdict: { kind: 'superseded', by: { rolloutId: 'ro_3', generation: 3 } } })).toMatchObject({
      outcome: 'superseded',
      status: null,
      supersededBy: { rolloutId: 'ro_3', generation: 3 },
      message: 'rollout ro_2 (generation 2) was superseded by rollout ro_3 (generation 3) before it finished',
    });
    expect(waitResultOf({ ...base, verdict: { kind: 'timeout' }, last: snap(), timeoutMs: 90_000, outage: 'ECONNREFUSED' }).message).toBe(
      'timed out after 90s waiting for rollout ro_2 (generation 2): deploying, observed 1/2, healthy 1/2, verified 1/2; ' +
      'the control plane was unreachable at the end (ECONNREFUSED)');
    expect(['succeeded', 'rolled-back', 'failed', 'mismatched', 'superseded', 'timeout'].map((o) => waitExitCode(o as never))).toEqual([0, 0, 1, 1, 1, 2]);
  });
});
