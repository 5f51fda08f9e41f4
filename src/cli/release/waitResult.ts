import type { BlockingReason, DeadlineExceeded, RolloutSnapshot } from './api.js';
import { ExitCode } from './errors.js';
import { deadlineText } from './output.js';
import type { RolloutRef, Verdict } from './judge.js';

export type WaitOutcome = 'succeeded' | 'rolled-back' | 'failed' | 'mismatched' | 'superseded' | 'timeout';

export type Via = 'sse' | 'polling';

export interface WaitResult {
  serviceId: string;
  rolloutId: string;
  generation: number;
  outcome: WaitOutcome;
  /** The last status seen of the expected rollout (null: none seen). */
  status: string | null;
  requiredReplicaCount: number | null;
  observedReplicaCount: number | null;
  healthyReplicaCount: number | null;
  verifiedReplicaCount: number | null;
  failedReplicaCount: number | null;
  mismatchReason?: string;
  /** Set when the progress deadline failed the rollout (the rollout view's `lifecycle.deadlineExceeded`). */
  deadlineExceeded?: DeadlineExceeded;
  /** Why the rollout had not succeeded (from the rollout view; empty on success). */
  blocking: BlockingReason[];
  supersededBy?: RolloutRef;
  /** How the end was observed. */
  via: Via;
  elapsedMs: number;
  /** One line for humans. */
  message: string;
}

export const waitExitCode = (outcome: WaitOutcome): ExitCode =>
  outcome === 'succeeded' || outcome === 'rolled-back' ? ExitCode.ok : outcome === 'timeout' ? ExitCode.timeout : ExitCode.refused;

export function formatMs (ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}

const countsOf = (s: RolloutSnapshot | undefined): string => (s
  ? `observed ${s.observedReplicaCount}/${s.requiredReplicaCount}, healthy ${s.healthyReplicaCount}/${s.requiredReplicaCount}, ` +
    `verified ${s.verifiedReplicaCount}/${s.requiredReplicaCount}`
  : 'no status seen');

export interface ResultInput {
  serviceId: string;
  expected: RolloutRef;
  verdict: Verdict | { kind: 'timeout' };
  last?: RolloutSnapshot | undefined;
  blocking: BlockingReason[];
  /** The progress deadline's verdict on the expected rollout, when there is one. */
  deadline?: DeadlineExceeded | undefined;
  via: Via;
  elapsedMs: number;
  timeoutMs?: number | undefined;
  /** The last failure, when the control plane was unreachable at the end. */
  outage?: string | undefined;
}

/** The wait's result document and its one line for humans. */
export function waitResultOf (input: ResultInput): WaitResult {
  const { expected: exp, verdict, last: s } = input;
  const outcome: WaitOutcome = verdict.kind === 'terminal' ? verdict.snapshot.status as WaitOutcome : verdict.kind;
  const rollout = `rollout ${exp.rolloutId} (generation ${exp.generation})`;
  const counts = countsOf(s);
  let message: string;
  switch (verdict.kind) {
    case 'terminal':
      message = outcome === 'succeeded' || outcome === 'rolled-back'
        ? `${rollout} ${outcome}: ${counts}`
        : `${rollout} ${outcome}: ${input.deadline ? `${deadlineText(input.deadline)}: ` : ''}${s?.mismatchReason ?? 'no reason given'} (${counts})`;
      break;
    case 'superseded':
      message = `${rollout} was superseded by rollout ${verdict.by.rolloutId} (generation ${verdict.by.generation}) before it finished`;
      break;
    case 'timeout':
      message = `timed out after ${formatMs(input.timeoutMs ?? input.elapsedMs)} waiting for ${rollout}: ` +
        `${s ? `${s.status}, ${counts}` : counts}${input.outage !== undefined ? `; the control plane was unreachable at the end (${input.outage})` : ''}`;
      break;
  }
  return {
    serviceId: input.serviceId,
    rolloutId: exp.rolloutId,
    generation: exp.generation,
    outcome,
    status: s?.status ?? null,
    requiredReplicaCount: s?.requiredReplicaCount ?? null,
    observedReplicaCount: s?.observedReplicaCount ?? null,
    healthyReplicaCount: s?.healthyReplicaCount ?? null,
    verifiedReplicaCount: s?.verifiedReplicaCount ?? null,
    failedReplicaCount: s?.failedReplicaCount ?? null,
    ...(s?.mismatchReason ? { mismatchReason: s.mismatchReason } : {}),
    ...(input.deadline ? { deadlineExceeded: input.deadline } : {}),
    blocking: input.blocking,
    ...(verdict.kind === 'superseded' ? { supersededBy: verdict.by } : {}),
    via: input.via,
    elapsedMs: input.elapsedMs,
    message,
  };
}

/** What the follower does next. */
