import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import { holdEvent, milestoneEvents, rolloutIssuedEvent, statusChangedEvent, type DomainEvent } from './events.js';
import { verifiedReleaseOf, type VerifiedRelease } from './lifecycle.js';
import { finalMilestones, undecidedMilestones, type Milestones } from './milestones.js';
import type { AutomationHold, RolloutRecord } from './rollouts.js';
import { aggregateKey, aggregateOf, emptySummary, statusEventOf, type StatusEvent, type StatusSummary } from './rolloutStatus.js';

/**
 * What writing a rollout's plan onto its service changes — one compare-and-swap on the service
 * document, at the generation before and at the status summary state the writer read — decided here
 * and carried out by the store: the plan, a fresh status summary and its first status event, the
 * automation hold and queue, the events of the change (its outbox entries), and, for the rollout it
 * replaces, that rollout's final milestones: those its lifecycle decided, and those its last status
 * shows that no lifecycle pass has decided yet (a report made it succeed as the replacement came):
 * the replacement decides these, puts the release on the verified list, and counts them.
 */

/** What the replacement reads of the service: its generation, plan, status summary and status revision. */
export interface ServiceHead {
  generation: number;
  plan?: IImmutableImageDeploymentPlan;
  /** The summary, when it is the plan's. */
  summary?: StatusSummary;
  statusRevision: number;
}

/** The rollout a replacement ended, with its final milestones (what the history copies). */
export interface EndedRollout {
  rolloutId: string;
  mode: IImmutableImageDeploymentPlan['mode'];
  milestones: Milestones;
}

export interface RolloutApplication {
  plan: IImmutableImageDeploymentPlan;
  summary: StatusSummary;
  published: { rolloutId: string, seq: number, key: string };
  statusRevision: number;
  statusEvent: StatusEvent;
  /** Set (a rollback), cleared (an explicit promotion), or left as it is. */
  hold: AutomationHold | 'clear' | undefined;
  /** An operator's rollout (and an automatic rollback) makes a push waiting for the old rollout moot. */
  clearQueue: boolean;
  ended?: EndedRollout;
  /** The plan of the rollout it ended. */
  endedPlan?: IImmutableImageDeploymentPlan;
  /** Milestones of the ended rollout this replacement decides (and counts). */
  decided: Pick<Milestones, 'succeededAt' | 'failure'>;
  /** The ended rollout's release, when the replacement decided its success. */
  verified?: VerifiedRelease;
  events: DomainEvent[];
}

export function rolloutApplication (record: RolloutRecord, head: ServiceHead, now: number): RolloutApplication {
  const plan = record.plan;
  const summary = emptySummary(plan, record.createdAt);
  const initial = aggregateOf(plan, summary);
  const statusRevision = head.statusRevision + 1;
  const endedPlan = head.plan !== undefined && head.plan.rolloutId === record.previous?.rolloutId ? head.plan : undefined;
  const endedSummary = endedPlan && head.summary?.rolloutId === endedPlan.rolloutId ? head.summary : undefined;
  const decided = endedPlan && endedSummary ? undecidedMilestones(endedPlan, endedSummary) : {};
  const ended = endedPlan ? { rolloutId: endedPlan.rolloutId, mode: endedPlan.mode, milestones: finalMilestones(endedSummary?.lifecycle, decided) } : undefined;
  const hold = holdEvent(record);
  return {
    plan,
    summary,
    published: { rolloutId: plan.rolloutId, seq: 0, key: aggregateKey(initial) },
    statusRevision,
    statusEvent: statusEventOf(initial, statusRevision, now),
    hold: record.hold === 'set'
      ? { since: record.createdAt, rolloutId: record.rolloutId, by: record.issuedBy.subject }
      : record.hold === 'cleared' ? 'clear' : undefined,
    clearQueue: record.mode !== 'automatic',
    ...(ended ? { ended, endedPlan } : {}),
    decided,
    ...(endedPlan && decided.succeededAt !== undefined ? { verified: verifiedReleaseOf(endedPlan, decided.succeededAt) } : {}),
    events: [
      ...(endedPlan ? milestoneEvents(endedPlan, decided) : []),
      rolloutIssuedEvent(record),
      ...(hold ? [hold] : []),
      statusChangedEvent(plan, null, initial, statusRevision, now),
    ],
  };
}
