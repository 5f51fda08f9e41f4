import type { RolloutHistoryEntry, RolloutSnapshot, RolloutView } from './api.js';

/**
 * Judging what the follower sees against the rollout it waits for (the expected one): events
 * of older generations are ignored (the stream starts with the latest stored event, which may
 * still be the previous rollout's); a different rollout at the same or a newer generation
 * means the expected one was superseded; a terminal status ends the wait.
 */

export interface RolloutRef { rolloutId: string, generation: number }

export type Verdict =
  | { kind: 'terminal', snapshot: RolloutSnapshot }
  | { kind: 'superseded', by: RolloutRef };

/** What one observation means for the expected rollout. */
export type Judgement = Verdict | { kind: 'progress', snapshot: RolloutSnapshot } | { kind: 'ignore' };

const TERMINAL = new Set(['succeeded', 'rolled-back', 'failed', 'mismatched']);

const snapshotOf = (s: RolloutSnapshot): RolloutSnapshot => ({
  rolloutId: s.rolloutId,
  rolloutGeneration: s.rolloutGeneration,
  status: s.status,
  requiredReplicaCount: s.requiredReplicaCount,
  observedReplicaCount: s.observedReplicaCount,
  healthyReplicaCount: s.healthyReplicaCount,
  verifiedReplicaCount: s.verifiedReplicaCount,
  failedReplicaCount: s.failedReplicaCount,
  ...(s.mismatchReason ? { mismatchReason: s.mismatchReason } : {}),
});

/** A status (from an event or the view) judged against the expected rollout. */
export function judgeSnapshot (s: RolloutSnapshot, expected: RolloutRef): Judgement {
  if (s.rolloutGeneration < expected.generation) return { kind: 'ignore' };
  if (s.rolloutId !== expected.rolloutId) return { kind: 'superseded', by: { rolloutId: s.rolloutId, generation: s.rolloutGeneration } };
  const snapshot = snapshotOf(s);
  return TERMINAL.has(s.status) ? { kind: 'terminal', snapshot } : { kind: 'progress', snapshot };
}

/**
 * The rollout view judged against the expected rollout: a newer plan supersedes it; a rollout that
 * succeeded once (`lifecycle.succeededAt`, sticky) has succeeded, whatever its status says now (a
 * replica restarted since, say).
 */
export function judgeView (view: RolloutView, expected: RolloutRef): Judgement {
  const plan = view.plan;
  if (plan && plan.rolloutGeneration > expected.generation) {
    return { kind: 'superseded', by: { rolloutId: plan.rolloutId, generation: plan.rolloutGeneration } };
  }
  if (plan?.rolloutId === expected.rolloutId && view.lifecycle?.succeededAt !== undefined && view.status?.rolloutId === expected.rolloutId) {
    return { kind: 'terminal', snapshot: { ...snapshotOf(view.status), status: plan.mode === 'rollback' ? 'rolled-back' : 'succeeded' } };
  }
  return view.status ? judgeSnapshot(view.status, expected) : { kind: 'ignore' };
}

/** A rollout that ended before the wait could see it end, as its history entry tells: succeeded (rolled back) once, or not. */
export function judgeHistoryEntry (entry: RolloutHistoryEntry, last: RolloutSnapshot | undefined): Verdict | undefined {
  if (entry.outcome !== 'succeeded' && entry.outcome !== 'rolled-back') return undefined;
  const counts = last ?? { requiredReplicaCount: 0, observedReplicaCount: 0, healthyReplicaCount: 0, verifiedReplicaCount: 0, failedReplicaCount: 0 };
  const snapshot = snapshotOf({ ...counts, rolloutId: entry.rolloutId, rolloutGeneration: entry.generation, status: entry.outcome } as RolloutSnapshot);
  return { kind: 'terminal', snapshot };
}
