import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import { restoreTimes } from '../domain/deliveryMetrics.js';
import type { FailureMilestone } from '../domain/lifecycle.js';
import type { Milestones } from '../domain/milestones.js';
import type { Log, Repositories } from '../domain/ports/index.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

/**
 * Counting a milestone: done by the process whose write decided it (src/domain/milestones.ts) —
 * the lifecycle pass of a rollout in progress, or the replacement that ended it — so each is
 * counted once across processes.
 */
export interface MilestoneCountDeps {
  repos: Pick<Repositories, 'releases' | 'rollouts'>;
  telemetry: Telemetry;
  log: Pick<Log, 'info' | 'warn'>;
}

/** Lead time and time to restore, told to the metrics when a promotion (or any rollout, for the restore) first succeeds. */
async function deliveryEvents (deps: MilestoneCountDeps, plan: IImmutableImageDeploymentPlan, serviceId: string, succeededAt: number): Promise<void> {
  if (plan.mode !== 'rollback') {
    const release = await deps.repos.releases.findById(plan.releaseId);
    const first = release?.data.firstObservedAt;
    deps.telemetry.deployment(serviceId, first === undefined ? undefined : Math.max(0, succeededAt - first) / 1000);
  }
  const history = await deps.repos.rollouts.listOutcomes(serviceId, 20);
  for (const ms of restoreTimes(history, plan.rolloutId, plan.rolloutGeneration, succeededAt)) deps.telemetry.restored(serviceId, ms / 1000);
}

/** A success this process decided: counted, logged, and its delivery metrics told. */
export async function countSucceeded (deps: MilestoneCountDeps, plan: IImmutableImageDeploymentPlan, serviceId: string, at: number): Promise<void> {
  deps.telemetry.milestone(plan.mode, 'succeeded');
  deps.log.info({ serviceId, rolloutId: plan.rolloutId, mode: plan.mode }, 'rollout succeeded');
  await deliveryEvents(deps, plan, serviceId, at);
}

/** A first failure this process decided: counted (a failed change, unless a rollback failed) and logged. */
export function countFailure (deps: MilestoneCountDeps, plan: IImmutableImageDeploymentPlan, serviceId: string, failure: FailureMilestone): void {
  deps.telemetry.milestone(plan.mode, failure.status);
  if (plan.mode !== 'rollback') deps.telemetry.changeFailure(serviceId);
  deps.log.warn({ serviceId, rolloutId: plan.rolloutId, ...failure }, 'rollout failed');
}

/** The milestones a replacement decided for the rollout it ended (its failure first: it came before). */
export async function countDecided (
  deps: MilestoneCountDeps, plan: IImmutableImageDeploymentPlan, serviceId: string, decided: Pick<Milestones, 'succeededAt' | 'failure'>
): Promise<void> {
  if (decided.failure) countFailure(deps, plan, serviceId, decided.failure);
  if (decided.succeededAt !== undefined) await countSucceeded(deps, plan, serviceId, decided.succeededAt);
}
