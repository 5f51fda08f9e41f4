import type { FaultHook } from '../faults.js';
import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import {
  autoRollbackCause, deadlineAt, deadlineReason, effectiveRolloutPolicy, firedTriggers, hasProgressed, isInProgress, isSettled, verifiedReleaseOf,
  type EffectivePolicy, type FailureMilestone, type FiredTrigger, type RolloutLifecycle,
} from '../domain/lifecycle.js';
import { driftOf, revocationDue } from '../domain/attestation/issuance.js';
import { deadlineEvent, failedEvent, succeededEvent } from '../domain/events.js';
import type { Clock, LifecycleTarget, LifecycleView, Repositories, StatusState } from '../domain/ports/index.js';
import { aggregateOf, type RolloutAggregate } from '../domain/rolloutStatus.js';
import { isAppError, rolloutRefusalOf } from '../errors.js';
import type { RolloutIssuer } from './issueRollout.js';
import { countFailure, countSucceeded } from './milestoneCounts.js';
import { relayQuietly, statusPublisher } from './statusEvents.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

/**
 * Rollout lifecycle control (docs/lifecycle.md): after every status change, and
 * periodically in every process (the sweeper), bring a rollout's lifecycle up to date —
 *
 *   1. progress: the highest observed / healthy / verified counts, and when one last grew;
 *   2. milestones, each set once under compare-and-swap: the first success (sticky, and the
 *      release goes on the service's verified list), the first failure before it;
 *   3. the progress deadline: a rollout in progress that has not progressed for the deadline
 *      becomes `failed`, decided by whichever process gets there first (the compare-and-swap is
 *      on the summary's seq: a report that lands meanwhile makes the decision wait for another look);
 *   4. the history: the milestones copied into the rollout's record;
 *   5. follow-ups, each attempted once per rollout: an automatic rollback (when the service asks
 *      for one on this trigger; its Idempotency-Key is the rollout's, so any number of processes
 *      and reports seeing the failure issue at most one), then the newest push that waited for
 *      the rollout to settle (promoted automatically, under the same compare-and-swap);
 *   6. closing: once succeeded or decided and followed up, the sweeper stops looking.
 *
 * Every step is idempotent and decided by a compare-and-swap, so a crash anywhere leaves work
 * the next pass (any process's) finishes: the sweeper (`sweepOnce`) is that next pass. It also keeps the
 * domain-event log (docs/architecture.md "Domain events"): it relays the outboxes a crashed writer left
 * (`relayPendingEvents`) and removes events past their retention (`expireEvents`).
 *
 * Each step is a top-level function taking the dependencies; `rolloutLifecycle` binds them once.
 */

export interface LifecycleLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LifecycleDeps {
  repos: Pick<Repositories, 'automationQueue' | 'events' | 'lifecycles' | 'releases' | 'reports' | 'rollouts' | 'statusEvents' | 'statusSummaries'>;
  rollouts: RolloutIssuer;
  telemetry: Telemetry;
  now: Clock;
  log: LifecycleLog;
  /** Crash injection (tests only): `after-deadline-decision`, `after-success-decision`. */
  fault?: FaultHook;
  /** Issues the attestations a success or a drift left due (src/operations/attestations.ts); the sweeper works off what a crash left. */
  attestations?: { issue(serviceId: string): Promise<number>, sweep(stopping: () => boolean): Promise<number> };
  /** How long the domain-event log keeps an event (EVENTS_RETENTION_DAYS): older ones are removed by the sweeper. */
  eventsRetentionMs: number;
  /**
   * The promotions the server makes by itself on a sweep: downstream by pipelines (src/operations/pipelinePromotion.ts)
   * and pushes that waited for a window to open (src/operations/windowPromotion.ts).
   */
  promotions?: { sweep(stopping: () => boolean): Promise<number> };
}

/** What one process's sweeper carries from one sweep to the next: where each kind of pass stopped (by service id). */
export interface SweepCursors {
  lifecycles?: string | undefined;
  relays?: string | undefined;
}

/** Open lifecycles read per page of a sweep, and looked at per sweep at most (the rest at the next, from where it stopped). */
const SWEEP_BATCH = 500;
const SWEEP_MAX = 5_000;

/** Services whose outbox a crashed writer left, relayed per sweep at most (the rest at the next, from where it stopped). */
const RELAY_MAX = 500;

/** How deep one pass follows its own decisions (a deadline decided, then its follow-ups). */
const MAX_PASSES = 3;

const isSuccess = (status: RolloutAggregate['status']): boolean => status === 'succeeded' || status === 'rolled-back';
const isFailure = (status: RolloutAggregate['status']): status is 'failed' | 'mismatched' => status === 'failed' || status === 'mismatched';

const describeFailure = (failure: Pick<FailureMilestone, 'by' | 'status' | 'reason'>): string => (failure.by === 'deadline'
  ? `made no progress for its deadline (${failure.reason})`
  : `is ${failure.status} (${failure.reason})`);

type Plan = IImmutableImageDeploymentPlan;

/** How one step of `decide` ended: the lifecycle as it left it, whether to look again, whether the rollout was replaced meanwhile. */
interface Decided {
  lifecycle: RolloutLifecycle;
  again: boolean;
  replaced: boolean;
}

/** A milestone write's outcome, when it did not decide: what `decide` answers. */
const undecided = (lifecycle: RolloutLifecycle, written: string): Decided =>
  ({ lifecycle, again: written === 'decided-before', replaced: written === 'not-current' });

/** Does this state need a lifecycle pass now? (The report path asks without reading anything more.) */
export function needsLifecyclePass (plan: Plan, state: StatusState): boolean {
  const lifecycle = state.summary.lifecycle;
  if (!lifecycle) return true;
  const { status } = aggregateOf(plan, state.summary);
  if (hasProgressed(lifecycle.progress, state.summary.totals)) return true;
  if (lifecycle.succeededAt !== undefined || lifecycle.deadline !== undefined) return false;
  if (isSuccess(status)) return true;
  // A failure: the first (a milestone), or another kind than the first (it may be a chosen trigger of an automatic rollback).
  return isFailure(status) && (lifecycle.failure === undefined || (lifecycle.autoRollback === undefined && lifecycle.failure.status !== status));
}

/** Step 1: the progress, when the counts grew (the highest of each, and when). */
async function recordProgress (deps: LifecycleDeps, target: LifecycleTarget, summary: StatusState['summary'], lifecycle: RolloutLifecycle, now: number) {
  if (!hasProgressed(lifecycle.progress, summary.totals)) return lifecycle;
  await deps.repos.lifecycles.recordProgress(target, summary.totals, now);
  const { observed, healthy, verified } = summary.totals;
  const p = lifecycle.progress;
  const progress = { observed: Math.max(p.observed, observed), healthy: Math.max(p.healthy, healthy), verified: Math.max(p.verified, verified), at: now };
  return { ...lifecycle, progress };
}

// Each milestone is decided once, with its event, by the write that wins (it counts it). A rollout
// replaced meanwhile ('not-current') has its milestones decided by its replacement, from its last state.

/** Step 2, the first success: the milestone, the release on the verified list. Decided: the lifecycle with it. */
async function decideSuccess (deps: LifecycleDeps, view: LifecycleView, plan: Plan, state: StatusState, lifecycle: RolloutLifecycle) {
  const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
  const at = state.summary.updatedAt;
  const written = await deps.repos.lifecycles.markSucceeded(target, at, verifiedReleaseOf(plan, at), succeededEvent(plan, at));
  if (written === 'decided') {
    await relayQuietly(deps.repos, view.serviceId);
    await countSucceeded(deps, plan, view.serviceId, at);
    deps.fault?.('after-success-decision');
    await issueAttestations(deps, view.serviceId);
  }
  if (written !== 'decided') return undecided(lifecycle, written);
  return { ...lifecycle, succeededAt: at };
}

/** The attestations due now, issued by the process that decided them; never fails the pass (the sweeper catches up). */
async function issueAttestations (deps: LifecycleDeps, serviceId: string): Promise<void> {
  try {
    await deps.attestations?.issue(serviceId);
  } catch (err) {
    deps.log.warn({ serviceId, err }, 'issuing an attestation failed; the sweeper takes it up');
  }
}

/**
 * A succeeded rollout whose status is now failed or mismatched drifted: the drift, the release off the
 * verified list and the revocation due — one write, once (docs/attestations.md "Revocation").
 */
async function decideDrift (deps: LifecycleDeps, serviceId: string, plan: Plan, state: StatusState): Promise<void> {
  const drift = driftOf(plan, await deps.repos.reports.findRolloutRecords(plan.rolloutId, plan.targetScope.targetNodeNames));
  if (drift === undefined) return;
  const at = state.summary.updatedAt;
  const target: LifecycleTarget = { serviceId, rolloutId: plan.rolloutId };
  const milestone = { at, kind: drift.reason.kind, detail: drift.reason.detail };
  const written = await deps.repos.lifecycles.markDrifted(target, milestone, revocationDue(plan, at, drift));
  if (written !== 'decided') return;
  deps.log.warn({ serviceId, rolloutId: plan.rolloutId, reason: drift.reason }, 'a succeeded rollout drifted: its release is no longer verified');
  await issueAttestations(deps, serviceId);
}

/** Does this state show a succeeded rollout drifting (for the first time)? */
export const isDrift = (plan: Plan, state: StatusState): boolean => {
  const lifecycle = state.summary.lifecycle;
  return lifecycle?.succeededAt !== undefined && lifecycle.drift === undefined && isFailure(aggregateOf(plan, state.summary).status);
};

/** Step 2, the first failure before any success. Decided: the lifecycle with it. */
async function decideFailure (deps: LifecycleDeps, view: LifecycleView, plan: Plan, state: StatusState, lifecycle: RolloutLifecycle) {
  const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
  const aggregate = aggregateOf(plan, state.summary);
  const status = aggregate.status as FailureMilestone['status'];
  const failure: FailureMilestone = { status, reason: aggregate.mismatchReason ?? 'replica-failed', at: state.summary.updatedAt, by: 'report' };
  const written = await deps.repos.lifecycles.markFailure(target, failure, failedEvent(plan, failure));
  if (written === 'decided') {
    await relayQuietly(deps.repos, view.serviceId);
    countFailure(deps, plan, view.serviceId, failure);
  }
  if (written !== 'decided') return undecided(lifecycle, written);
  return { ...lifecycle, failure };
}

/**
 * Step 3, the progress deadline passed: the rollout fails, decided under compare-and-swap on the
 * summary's seq (a report that lands meanwhile makes the decision wait for another look).
 */
async function decideDeadline (
  deps: LifecycleDeps, view: LifecycleView, plan: Plan, state: StatusState, lifecycle: RolloutLifecycle, policy: EffectivePolicy, now: number,
): Promise<Decided> {
  const { summary } = state;
  const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
  const reason = deadlineReason(plan.targetScope.requiredReplicaCount, summary.totals);
  const decision = { at: now, reason, lastProgressAt: lifecycle.progress.at, deadlineSeconds: policy.progressDeadlineSeconds };
  const failure: FailureMilestone | undefined = lifecycle.failure ? undefined : { status: 'failed', reason, at: now, by: 'deadline' };
  const events = [deadlineEvent(plan, decision), ...(failure ? [failedEvent(plan, failure)] : [])];
  if (await deps.repos.lifecycles.decideDeadline(target, summary.seq, decision, failure, events)) {
    deps.fault?.('after-deadline-decision');
    deps.telemetry.milestone(plan.mode, 'deadline-exceeded');
    if (failure && plan.mode !== 'rollback') deps.telemetry.changeFailure(view.serviceId);
    deps.log.warn({ serviceId: view.serviceId, rolloutId: plan.rolloutId, ...decision }, 'rollout failed: progress deadline exceeded');
    await relayQuietly(deps.repos, view.serviceId);
    const after = await deps.repos.statusSummaries.readStatusState(view.serviceId, plan.rolloutId);
    if (after) await statusPublisher(deps)(view.serviceId, plan, after);
  }
  return { lifecycle, again: true, replaced: false };
}

/** Steps 1–3. Returns the lifecycle as this pass left it, whether to look again, and whether the rollout was replaced meanwhile. */
export async function decide (deps: LifecycleDeps, view: LifecycleView, plan: Plan, state: StatusState, policy: EffectivePolicy): Promise<Decided> {
  const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
  const summary = state.summary;
  const aggregate = aggregateOf(plan, summary);
  const now = deps.now();
  let lifecycle = await recordProgress(deps, target, summary, summary.lifecycle as RolloutLifecycle, now);

  if (isSuccess(aggregate.status) && lifecycle.succeededAt === undefined && lifecycle.deadline === undefined) {
    const succeeded = await decideSuccess(deps, view, plan, state, lifecycle);
    if ('again' in succeeded) return succeeded;
    lifecycle = succeeded;
  }
  if (isFailure(aggregate.status) && lifecycle.failure === undefined && lifecycle.succeededAt === undefined) {
    const failed = await decideFailure(deps, view, plan, state, lifecycle);
    if ('again' in failed) return failed;
    lifecycle = failed;
  }
  const due = deadlineAt(lifecycle.progress.at, policy);
  if (lifecycle.deadline === undefined && lifecycle.succeededAt === undefined && isInProgress(aggregate.status) && now >= due) {
    return await decideDeadline(deps, view, plan, state, lifecycle, policy, now);
  }
  return { lifecycle, again: false, replaced: false };
}

/** Follow-up: the automatic rollback of a failed rollout: once (its Idempotency-Key is the rollout's); undefined: try again later. */
export async function rollBackAutomatically (deps: LifecycleDeps, view: LifecycleView, plan: Plan, fired: FiredTrigger): Promise<string | undefined> {
  const { telemetry, log } = deps;
  const cause = fired.trigger;
  const reason = `automatic rollback: rollout '${plan.rolloutId}' ${describeFailure(fired)}`;
  const result = await telemetry.rollout('rollback', deps.rollouts.issueRollout({
    serviceId: view.serviceId,
    releaseId: '',
    idempotencyKey: `\u0001automatic-rollback:${plan.rolloutId}`,
    expectedRolloutGeneration: plan.rolloutGeneration,
    intent: { kind: 'rollback', expectedCurrentRolloutId: plan.rolloutId, toLastVerified: true },
    issuer: { subject: 'lifecycle:automatic-rollback', role: 'system', type: 'machine' },
    reason,
    trigger: { kind: 'automatic-rollback', cause, ofRolloutId: plan.rolloutId, reason },
  }));
  if (!result.ok && result.error.code === 'idempotency-request-in-progress') return undefined;
  if (result.replayed) return result.ok ? 'issued' : `refused: ${result.error.code}`;
  if (result.ok && result.value.issued) {
    telemetry.automaticRollback(cause, 'issued');
    log.warn({ serviceId: view.serviceId, rolledBack: plan.rolloutId, rolloutId: result.value.rolloutId, cause }, 'automatic rollback');
    return `issued rollout '${result.value.rolloutId}'`;
  }
  const code = result.ok ? 'skipped' : result.error.code;
  telemetry.automaticRollback(cause, 'refused');
  log.warn({ serviceId: view.serviceId, rolloutId: plan.rolloutId, cause, code }, 'automatic rollback refused');
  return `refused: ${code}`;
}

/** Follow-up: the newest push that waited for this rollout to settle, promoted automatically; undefined: try again later. */
export async function promoteQueued (deps: LifecycleDeps, view: LifecycleView, plan: Plan): Promise<string | undefined> {
  const queued = view.automationQueue;
  if (!queued) return 'nothing queued';
  const result = await deps.telemetry.rollout('automatic', deps.rollouts.issueRollout({
    serviceId: view.serviceId,
    releaseId: queued.releaseId,
    idempotencyKey: `\u0001automatic-after:${plan.rolloutId}`,
    intent: { kind: 'promotion', mode: 'automatic', expectedCurrentRolloutId: plan.rolloutId },
    issuer: { subject: `registry-push:${queued.pushedBy}`, role: 'system', type: 'machine' },
    reason: `automatic promotion: tag '${queued.tag}' pushed while rollout '${plan.rolloutId}' was in progress (event ${queued.eventId});` +
      ' promoted once it settled',
    trigger: { kind: 'deferred-promotion', afterRolloutId: plan.rolloutId },
  }));
  if (!result.ok && result.error.code === 'idempotency-request-in-progress') return undefined;
  // Lost to another rollout (or to an earlier attempt for this rollout, made for an older push): the
  // push keeps waiting, for whichever rollout is current now to settle. Refused for good: forgotten.
  if (!result.ok && rolloutRefusalOf(result.error.code).waiting === 'keep-waiting') return `refused: ${result.error.code}; the push keeps waiting`;
  await deps.repos.automationQueue.clearQueuedPromotion(view.serviceId, queued.releaseId);
  if (!result.ok) return `refused: ${result.error.code}`;
  if (!result.value.issued) return `skipped: ${result.value.skip}`;
  deps.log.info({ serviceId: view.serviceId, releaseId: queued.releaseId, rolloutId: result.value.rolloutId }, 'automatic promotion of a waiting push');
  return `issued rollout '${result.value.rolloutId}'`;
}

/** How step 5 ended: `issued` — a follow-up issued a rollout (this one's lifecycle is over); `done` — every follow-up was decided. */
interface FollowedUp {
  issued: boolean;
  done: boolean;
  settled: boolean;
}

/**
 * Step 5, the follow-ups: each attempted once per rollout, its outcome kept on the lifecycle (the
 * durable seam: one not decided — `undefined`, its request in progress elsewhere — is retried by the
 * next pass, the sweeper's if no report comes).
 */
export async function followUp (deps: LifecycleDeps, view: LifecycleView, plan: Plan, lifecycle: RolloutLifecycle, policy: EffectivePolicy) {
  const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
  let done = true;
  const now = deps.now();
  const aggregate = aggregateOf(plan, (view.state as StatusState).summary);
  const cause = autoRollbackCause(plan, policy, firedTriggers(lifecycle, aggregate));
  if (cause && lifecycle.autoRollback === undefined) {
    const outcome = await rollBackAutomatically(deps, view, plan, cause);
    if (outcome === undefined) done = false;
    else if (outcome.startsWith('issued')) return { issued: true, done, settled: false }; // The rollback is the service's rollout now.
    else await deps.repos.lifecycles.markFollowUp(target, 'autoRollback', { at: now, outcome });
  }
  const settled = isSettled(aggregate.status, lifecycle, policy, now);
  if (settled && view.automationQueue && !view.automationHold && lifecycle.deferredPromotion === undefined && done) {
    const outcome = await promoteQueued(deps, view, plan);
    if (outcome === undefined) done = false;
    else if (outcome.startsWith('issued')) return { issued: true, done, settled };
    else await deps.repos.lifecycles.markFollowUp(target, 'deferredPromotion', { at: now, outcome });
  }
  return { issued: false, done, settled } satisfies FollowedUp;
}

/** Step 6: closed once succeeded or decided by the deadline, and followed up; a failed rollout stays open (it may recover). */
async function closeWhenFinished (deps: LifecycleDeps, view: LifecycleView, plan: Plan, lifecycle: RolloutLifecycle, followed: FollowedUp) {
  const final = lifecycle.succeededAt !== undefined || lifecycle.deadline !== undefined;
  const waiting = view.automationQueue !== undefined && !view.automationHold && lifecycle.deferredPromotion === undefined;
  if (!final || !followed.done || (followed.settled && waiting)) return;
  const fresh = await deps.repos.lifecycles.findLifecycle(view.serviceId);
  const changes = fresh?.state?.summary.lifecycle?.changes;
  const freshWaiting = fresh?.automationQueue !== undefined && !fresh.automationHold && fresh.state?.summary.lifecycle?.deferredPromotion === undefined;
  if (changes !== undefined && !freshWaiting) await deps.repos.lifecycles.closeLifecycle({ serviceId: view.serviceId, rolloutId: plan.rolloutId }, changes);
}

/** One pass over a service's current rollout (see the module comment). */
export async function reconcileLifecycle (deps: LifecycleDeps, view: LifecycleView, pass = 0): Promise<void> {
  const { plan, state } = view;
  if (!plan || !state) return;
  // Every summary is written with its lifecycle (summaries of earlier versions got theirs from migration 4).
  if (!state.summary.lifecycle) return;
  const policy = effectiveRolloutPolicy(view.policy);
  const decided = await decide(deps, view, plan, state, policy);
  // Replaced meanwhile: its replacement decided its milestones and wrote them to its history.
  if (decided.replaced) return;
  if (decided.again && pass < MAX_PASSES) {
    const again = await deps.repos.lifecycles.findLifecycle(view.serviceId);
    if (again) await reconcileLifecycle(deps, again, pass + 1);
    return;
  }
  // A state left unpublished — by a pass killed right after its deadline decision, say — is the
  // stream's next event now; nothing is written when it was published already.
  await statusPublisher(deps)(view.serviceId, plan, state);
  const lifecycle = decided.lifecycle;
  const { succeededAt, failure, deadline } = lifecycle;
  if (succeededAt !== undefined || failure !== undefined || deadline !== undefined) {
    await deps.repos.rollouts.recordMilestones(plan.rolloutId, { succeededAt, failure, deadline });
  }
  const followed = await followUp(deps, view, plan, lifecycle, policy);
  if (followed.issued) return;
  await closeWhenFinished(deps, view, plan, lifecycle, followed);
}

/** After a report changed the status: the pass, when one is due. Never throws (the report is applied already; the sweeper catches up). */
export async function afterStatusChange (deps: LifecycleDeps, serviceId: string, plan: Plan, state: StatusState): Promise<void> {
  if (isDrift(plan, state)) {
    try {
      await decideDrift(deps, serviceId, plan, state);
    } catch (err) {
      deps.log.warn({ serviceId, err }, 'deciding a drift failed; the next report of it decides it');
    }
  }
  if (!needsLifecyclePass(plan, state)) return;
  try {
    const view = await deps.repos.lifecycles.findLifecycle(serviceId);
    if (view) await reconcileLifecycle(deps, view);
  } catch (err) {
    deps.log.warn({ serviceId, err }, 'rollout lifecycle pass failed; the sweeper will take it up');
  }
}

const isDatabaseUnavailable = (err: unknown): boolean => isAppError(err) && err.code === 'database-unavailable';

/** The view, read again if a bucket a crash left ahead of the summary was brought into it (`repairBuckets`). */
async function withBucketsRepaired (deps: LifecycleDeps, view: LifecycleView): Promise<LifecycleView> {
  if (!view.plan || !view.state) return view;
  const repaired = await deps.repos.statusSummaries.repairBuckets(view.serviceId, view.plan.rolloutId, deps.now());
  if (repaired === 0) return view;
  const message = 'status buckets left ahead of the summary by a crash were brought into it';
  deps.log.info({ serviceId: view.serviceId, rolloutId: view.plan.rolloutId, repaired }, message);
  return (await deps.repos.lifecycles.findLifecycle(view.serviceId)) ?? view;
}

/**
 * The sweep over the open lifecycles, in service id order, a page at a time: all of them, up to
 * SWEEP_MAX; a sweep that stops there goes on from that point at the next, so every open lifecycle
 * is looked at however many there are. It also stops — and the next goes on from the lifecycle it
 * stopped at — when the database is unavailable (every other pass would wait for it in vain, a
 * server selection timeout each) and when `stopping()` says the process is shutting down (between
 * two passes: the one in progress finishes). Returns how many were looked at, and whether it was interrupted.
 */
export async function sweepLifecycles (deps: LifecycleDeps, cursors: SweepCursors, stopping: () => boolean): Promise<{ looked: number, interrupted: boolean }> {
  let looked = 0;
  for (;;) {
    const after = cursors.lifecycles;
    const views = await deps.repos.lifecycles.openLifecycles(SWEEP_BATCH, after);
    let done = 0;
    let interrupted = false;
    for (const view of views) {
      if (stopping()) {
        interrupted = true;
        break;
      }
      try {
        await reconcileLifecycle(deps, await withBucketsRepaired(deps, view));
      } catch (err) {
        if (isDatabaseUnavailable(err)) {
          deps.log.warn({ serviceId: view.serviceId, err }, 'rollout lifecycle sweep stopped: the database is unavailable; the next sweep goes on from here');
          interrupted = true;
          break;
        }
        deps.log.warn({ serviceId: view.serviceId, err }, 'rollout lifecycle pass failed; the next sweep takes it up');
      }
      done++;
    }
    looked += done;
    if (interrupted) {
      cursors.lifecycles = done > 0 ? views[done - 1]?.serviceId : after;
      return { looked, interrupted };
    }
    cursors.lifecycles = views.length < SWEEP_BATCH ? undefined : views.at(-1)?.serviceId;
    if (cursors.lifecycles === undefined || looked >= SWEEP_MAX) return { looked, interrupted };
  }
}

/**
 * The durable seam of the domain-event log: the outboxes a writer left un-relayed (it crashed between
 * its write and its relay), relayed — RELAY_MAX services per sweep, in service id order, the next sweep
 * going on from where this one stopped. Relays are exactly once whichever processes run them at the
 * same time (src/store/eventLogStore.ts). Stops like the lifecycle sweep: shutting down, or the
 * database unavailable. Returns how many events it relayed.
 */
export async function relayPendingEvents (deps: LifecycleDeps, cursors: SweepCursors, stopping: () => boolean): Promise<number> {
  const after = cursors.relays;
  const pending = await deps.repos.events.pendingRelays(RELAY_MAX, after);
  cursors.relays = pending.length < RELAY_MAX ? undefined : pending.at(-1);
  let relayed = 0;
  for (const [i, serviceId] of pending.entries()) {
    if (stopping()) {
      cursors.relays = i > 0 ? pending[i - 1] : after;
      break;
    }
    try {
      relayed += await deps.repos.events.relay(serviceId);
    } catch (err) {
      if (isDatabaseUnavailable(err)) {
        deps.log.warn({ serviceId, err }, 'domain event relay stopped: the database is unavailable; the next sweep goes on from here');
        cursors.relays = i > 0 ? pending[i - 1] : after;
        break;
      }
      deps.log.warn({ serviceId, err }, 'domain event relay failed; the next sweep takes it up');
    }
  }
  if (relayed > 0) deps.log.info({ relayed }, 'relayed domain events a writer left in its outbox');
  return relayed;
}

/** Removes the events of the log older than its retention (EVENTS_RETENTION_DAYS); returns how many. */
export async function expireEvents (deps: LifecycleDeps): Promise<number> {
  const deleted = await deps.repos.events.sweepExpired(deps.now() - deps.eventsRetentionMs);
  if (deleted > 0) deps.log.info({ deleted }, 'removed domain events past their retention');
  return deleted;
}

/**
 * One sweep: the open lifecycles (`sweepLifecycles`), then — unless that was interrupted — the
 * domain-event log's upkeep (`relayPendingEvents`, `expireEvents`; its failure is logged and left to
 * the next sweep). Returns how many lifecycles were looked at.
 */
export async function sweepOnce (deps: LifecycleDeps, cursors: SweepCursors, stopping: () => boolean = () => false): Promise<number> {
  const { looked, interrupted } = await sweepLifecycles(deps, cursors, stopping);
  if (!interrupted && !stopping()) {
    try {
      await relayPendingEvents(deps, cursors, stopping);
      if (!stopping()) await deps.attestations?.sweep(stopping);
      if (!stopping()) await deps.promotions?.sweep(stopping);
      if (!stopping()) await expireEvents(deps);
    } catch (err) {
      deps.log.warn({ err }, 'domain event log upkeep failed; the next sweep takes it up');
    }
  }
  deps.telemetry.lifecycleSwept(looked);
  return looked;
}

/** Sweeps every `intervalMs` (the first after a random part of it, so that processes spread out). */
export function startSweeper (deps: LifecycleDeps, cursors: SweepCursors, intervalMs: number): { stop: () => Promise<void> } {
  let running: Promise<unknown> | undefined;
  let stopped = false;
  const tick = (): void => {
    if (stopped || running) return;
    running = sweepOnce(deps, cursors, () => stopped)
      .catch((err: unknown) => { deps.log.warn({ err }, 'rollout lifecycle sweep failed'); })
      .finally(() => { running = undefined; });
  };
  const first = setTimeout(() => {
    tick();
    timer = setInterval(tick, intervalMs);
    timer.unref();
  }, Math.floor(Math.random() * intervalMs));
  first.unref();
  let timer: NodeJS.Timeout | undefined;
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(first);
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

/** The lifecycle control as the app and the report path use it: the functions above, bound to their dependencies and to this process's sweep cursors. */
export function rolloutLifecycle (deps: LifecycleDeps) {
  const cursors: SweepCursors = {};
  return {
    afterStatusChange: (serviceId: string, plan: Plan, state: StatusState) => afterStatusChange(deps, serviceId, plan, state),
    reconcile: (view: LifecycleView, pass = 0) => reconcileLifecycle(deps, view, pass),
    sweep: (stopping: () => boolean = () => false) => sweepOnce(deps, cursors, stopping),
    startSweeper: (intervalMs: number) => startSweeper(deps, cursors, intervalMs),
  };
}

export type RolloutLifecycleControl = ReturnType<typeof rolloutLifecycle>;
