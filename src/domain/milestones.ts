import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { FailureMilestone, RolloutLifecycle } from './lifecycle.js';
import { aggregateOf, type StatusSummary } from './rolloutStatus.js';

/**
 * A rollout's milestones — its first success (sticky), its first failure before it, the deadline's
 * verdict — are each decided once, by the compare-and-swap that writes them into the service document
 * together with their event: while the rollout is current, by the lifecycle pass (its status summary's
 * lifecycle); when a new rollout replaces it, by that replacement, from the summary state it replaces.
 * Whoever decides one counts it. The history copies them.
 */

export type Milestones = Pick<RolloutLifecycle, 'succeededAt' | 'failure' | 'deadline'>;

const isSuccess = (status: string): boolean => status === 'succeeded' || status === 'rolled-back';

/**
 * What a rollout's status summary shows that its lifecycle has not decided yet: a success (its
 * `updatedAt`), or a failure before any success. A replacement decides these for the rollout it ends,
 * so that a report that made the rollout succeed at the same moment loses nothing; nothing once the
 * deadline decided (the status is failed from then on).
 */
export function undecidedMilestones (plan: IImmutableImageDeploymentPlan, summary: StatusSummary): Pick<Milestones, 'succeededAt' | 'failure'> {
  const lifecycle = summary.lifecycle;
  if (lifecycle?.succeededAt !== undefined || lifecycle?.deadline !== undefined) return {};
  const aggregate = aggregateOf(plan, summary);
  if (isSuccess(aggregate.status)) return { succeededAt: summary.updatedAt };
  if ((aggregate.status === 'failed' || aggregate.status === 'mismatched') && lifecycle?.failure === undefined) {
    const failure: FailureMilestone = { status: aggregate.status, reason: aggregate.mismatchReason ?? 'replica-failed', at: summary.updatedAt, by: 'report' };
    return { failure };
  }
  return {};
}

/** The milestones of a rollout a replacement ends: those its lifecycle decided, and those the replacement decides now. */
export const finalMilestones = (lifecycle: Milestones | undefined, decidedNow: Pick<Milestones, 'succeededAt' | 'failure'>): Milestones => ({
  succeededAt: lifecycle?.succeededAt ?? decidedNow.succeededAt,
  failure: lifecycle?.failure ?? decidedNow.failure,
  deadline: lifecycle?.deadline,
});
