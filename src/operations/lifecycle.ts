import type { FaultHook } from '../faults.js';
import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import {
  autoRollbackCause, deadlineAt, deadlineReason, effectiveRolloutPolicy, firedTriggers, hasProgressed, isInProgress, isSettled, verifiedReleaseOf,
  type EffectivePolicy, type FailureMilestone, type FiredTrigger, type RolloutLifecycle,
} from '../domain/lifecycle.js';
import { deadlineEvent, failedEvent, succeededEvent } from '../domain/events.js';
import type { Clock, LifecycleTarget, LifecycleView, Repositories, StatusState } from '../domain/ports/index.js';
import { aggregateOf, type RolloutAggregate } from '../domain/rolloutStatus.js';
import { isAppError, rolloutRefusalOf } from '../errors.js';
import type { RolloutIssuer } from './issueRollout.js';
import { countFailure, countSucceeded } from './milestoneCounts.js';
import { relayQuietly, statusPublisher } from './statusEvents.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

/**
 * Rollout lifecycle control (DESIGN §5 "Lifecycle control"): after every status change, and
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
 * the next pass (any process's) finishes.
 */

export interface LifecycleLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LifecycleDeps {
  repos: Pick<Repositories, 'automationQueue' | 'events' | 'lifecycles' | 'releases' | 'rollouts' | 'statusEvents' | 'statusSummaries'>;
  rollouts: RolloutIssuer;
  telemetry: Telemetry;
  now: Clock;
  log: LifecycleLog;
  /** Crash injection (tests only): `after-deadline-decision`. */
  fault?: FaultHook;
}

/** Open lifecycles read per page of a sweep, and looked at per sweep at most (the rest at the next, from where it stopped). */
const SWEEP_BATCH = 500;
const SWEEP_MAX = 5_000;

/** How deep one pass follows its own decisions (a deadline decided, then its follow-ups). */
const MAX_PASSES = 3;

const isSuccess = (status: RolloutAggregate['status']): boolean => status === 'succeeded' || status === 'rolled-back';
const isFailure = (status: RolloutAggregate['status']): status is 'failed' | 'mismatched' => status === 'failed' || status === 'mismatched';

const describeFailure = (failure: Pick<FailureMilestone, 'by' | 'status' | 'reason'>): string => (failure.by === 'deadline'
  ? `made no progress for its deadline (${failure.reason})`
  : `is ${failure.status} (${failure.reason})`);

export function rolloutLifecycle (deps: LifecycleDeps) {
  const { repos, telemetry, log } = deps;
  const publish = statusPublisher(deps);

  /** Does this state need a lifecycle pass now? (The report path asks without reading anything more.) */
  function needsPass (plan: IImmutableImageDeploymentPlan, state: StatusState): boolean {
    const lifecycle = state.summary.lifecycle;
    if (!lifecycle) return true;
    const { status } = aggregateOf(plan, state.summary);
    if (hasProgressed(lifecycle.progress, state.summary.totals)) return true;
    if (lifecycle.succeededAt !== undefined || lifecycle.deadline !== undefined) return false;
    if (isSuccess(status)) return true;
    // A failure: the first (a milestone), or another kind than the first (it may be a chosen trigger of an automatic rollback).
    return isFailure(status) && (lifecycle.failure === undefined || (lifecycle.autoRollback === undefined && lifecycle.failure.status !== status));
  }

  /** Steps 1–3. Returns the lifecycle as this pass left it, whether to look again, and whether the rollout was replaced meanwhile. */
  async function decide (view: LifecycleView, plan: IImmutableImageDeploymentPlan, state: StatusState, policy: EffectivePolicy) {
    const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
    const summary = state.summary;
    let lifecycle = summary.lifecycle as RolloutLifecycle;
    const aggregate = aggregateOf(plan, summary);
    const now = deps.now();

    if (hasProgressed(lifecycle.progress, summary.totals)) {
      await repos.lifecycles.recordProgress(target, summary.totals, now);
      const { observed, healthy, verified } = summary.totals;
      const p = lifecycle.progress;
      const progress = { observed: Math.max(p.observed, observed), healthy: Math.max(p.healthy, healthy), verified: Math.max(p.verified, verified), at: now };
      lifecycle = { ...lifecycle, progress };
    }

    // Each milestone is decided once, with its event, by the write that wins (it counts it). A rollout
    // replaced meanwhile ('not-current') has its milestones decided by its replacement, from its last state.
    if (isSuccess(aggregate.status) && lifecycle.succeededAt === undefined && lifecycle.deadline === undefined) {
      const at = summary.updatedAt;
      const written = await repos.lifecycles.markSucceeded(target, at, verifiedReleaseOf(plan, at), succeededEvent(plan, at));
      if (written === 'decided') {
        await relayQuietly(repos, view.serviceId);
        await countSucceeded(deps, plan, view.serviceId, at);
      }
      if (written !== 'decided') return { lifecycle, again: written === 'decided-before', replaced: written === 'not-current' };
      lifecycle = { ...lifecycle, succeededAt: at };
    }

    if (isFailure(aggregate.status) && lifecycle.failure === undefined && lifecycle.succeededAt === undefined) {
      const failure: FailureMilestone = { status: aggregate.status, reason: aggregate.mismatchReason ?? 'replica-failed', at: summary.updatedAt, by: 'report' };
      const written = await repos.lifecycles.markFailure(target, failure, failedEvent(plan, failure));
      if (written === 'decided') {
        await relayQuietly(repos, view.serviceId);
        countFailure(deps, plan, view.serviceId, failure);
      }
      if (written !== 'decided') return { lifecycle, again: written === 'decided-before', replaced: written === 'not-current' };
      lifecycle = { ...lifecycle, failure };
    }

    const due = deadlineAt(lifecycle.progress.at, policy);
    if (lifecycle.deadline === undefined && lifecycle.succeededAt === undefined && isInProgress(aggregate.status) && now >= due) {
      const reason = deadlineReason(plan.targetScope.requiredReplicaCount, summary.totals);
      const decision = { at: now, reason, lastProgressAt: lifecycle.progress.at, deadlineSeconds: policy.progressDeadlineSeconds };
      const failure: FailureMilestone | undefined = lifecycle.failure ? undefined : { status: 'failed', reason, at: now, by: 'deadline' };
      const events = [deadlineEvent(plan, decision), ...(failure ? [failedEvent(plan, failure)] : [])];
      if (await repos.lifecycles.decideDeadline(target, summary.seq, decision, failure, events)) {
        deps.fault?.('after-deadline-decision');
        telemetry.milestone(plan.mode, 'deadline-exceeded');
        if (failure && plan.mode !== 'rollback') telemetry.changeFailure(view.serviceId);
        log.warn({ serviceId: view.serviceId, rolloutId: plan.rolloutId, ...decision }, 'rollout failed: progress deadline exceeded');
        await relayQuietly(repos, view.serviceId);
        const after = await repos.statusSummaries.readStatusState(view.serviceId, plan.rolloutId);
        if (after) await publish(view.serviceId, plan, after);
        return { lifecycle, again: true, replaced: false };
      }
      return { lifecycle, again: true, replaced: false };
    }
    return { lifecycle, again: false, replaced: false };
  }

  /** The automatic rollback of a failed rollout: once (its Idempotency-Key is the rollout's); undefined: try again later. */
  async function rollBackAutomatically (view: LifecycleView, plan: IImmutableImageDeploymentPlan, fired: FiredTrigger): Promise<string | undefined> {
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

  /** The newest push that waited for this rollout to settle, promoted automatically; undefined: try again later. */
  async function promoteQueued (view: LifecycleView, plan: IImmutableImageDeploymentPlan): Promise<string | undefined> {
    const queued = view.automationQueue;
    if (!queued) return 'nothing queued';
    const result = await telemetry.rollout('automatic', deps.rollouts.issueRollout({
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
    await repos.automationQueue.clearQueuedPromotion(view.serviceId, queued.releaseId);
    if (!result.ok) return `refused: ${result.error.code}`;
    if (!result.value.issued) return `skipped: ${result.value.skip}`;
    log.info({ serviceId: view.serviceId, releaseId: queued.releaseId, rolloutId: result.value.rolloutId }, 'automatic promotion of a waiting push');
    return `issued rollout '${result.value.rolloutId}'`;
  }

  /** One pass over a service's current rollout (see the module comment). */
  async function reconcile (initial: LifecycleView, pass = 0): Promise<void> {
    const view = initial;
    const { plan, state } = view;
    if (!plan || !state) return;
    const target: LifecycleTarget = { serviceId: view.serviceId, rolloutId: plan.rolloutId };
    if (!state.summary.lifecycle) {
      await repos.lifecycles.ensureLifecycle(target, state.summary.updatedAt);
      const again = await repos.lifecycles.findLifecycle(view.serviceId);
      if (again && pass < MAX_PASSES) await reconcile(again, pass + 1);
      return;
    }
    const policy = effectiveRolloutPolicy(view.policy);
    const decided = await decide(view, plan, state, policy);
    // Replaced meanwhile: its replacement decided its milestones and wrote them to its history.
    if (decided.replaced) return;
    if (decided.again && pass < MAX_PASSES) {
      const again = await repos.lifecycles.findLifecycle(view.serviceId);
      if (again) await reconcile(again, pass + 1);
      return;
    }
    // A state left unpublished — by a pass killed right after its deadline decision, say — is the
    // stream's next event now; nothing is written when it was published already.
    await publish(view.serviceId, plan, state);
    const lifecycle = decided.lifecycle;
    const { succeededAt, failure, deadline } = lifecycle;
    if (succeededAt !== undefined || failure !== undefined || deadline !== undefined) {
      await repos.rollouts.recordMilestones(plan.rolloutId, { succeededAt, failure, deadline });
    }

    let followUpsDone = true;
    const now = deps.now();
    const aggregate = aggregateOf(plan, state.summary);
    const cause = autoRollbackCause(plan, policy, firedTriggers(lifecycle, aggregate));
    if (cause && lifecycle.autoRollback === undefined) {
      const outcome = await rollBackAutomatically(view, plan, cause);
      if (outcome === undefined) followUpsDone = false;
      else if (outcome.startsWith('issued')) return; // The rollback is the service's rollout now: this one's lifecycle is over.
      else await repos.lifecycles.markFollowUp(target, 'autoRollback', { at: now, outcome });
    }
    const settled = isSettled(aggregate.status, lifecycle, policy, now);
    if (settled && view.automationQueue && !view.automationHold && lifecycle.deferredPromotion === undefined && followUpsDone) {
      const outcome = await promoteQueued(view, plan);
      if (outcome === undefined) followUpsDone = false;
      else if (outcome.startsWith('issued')) return;
      else await repos.lifecycles.markFollowUp(target, 'deferredPromotion', { at: now, outcome });
    }

    // Closed once succeeded or decided by the deadline, and followed up; a failed rollout stays open (it may recover).
    const final = succeededAt !== undefined || deadline !== undefined;
    const waiting = view.automationQueue !== undefined && !view.automationHold && lifecycle.deferredPromotion === undefined;
    if (final && followUpsDone && !(settled && waiting)) {
      const fresh = await repos.lifecycles.findLifecycle(view.serviceId);
      const changes = fresh?.state?.summary.lifecycle?.changes;
      const freshWaiting = fresh?.automationQueue !== undefined && !fresh.automationHold && fresh.state?.summary.lifecycle?.deferredPromotion === undefined;
      if (changes !== undefined && !freshWaiting) await repos.lifecycles.closeLifecycle(target, changes);
    }
  }

  /** After a report changed the status: the pass, when one is due. Never throws (the report is applied already; the sweeper catches up). */
  async function afterStatusChange (serviceId: string, plan: IImmutableImageDeploymentPlan, state: StatusState): Promise<void> {
    if (!needsPass(plan, state)) return;
    try {
      const view = await repos.lifecycles.findLifecycle(serviceId);
      if (view) await reconcile(view);
    } catch (err) {
      log.warn({ serviceId, err }, 'rollout lifecycle pass failed; the sweeper will take it up');
    }
  }

  /** Where the last sweep stopped, when it stopped before the end (by service id). */
  let sweepCursor: string | undefined;

  /**
   * One sweep over the open lifecycles, in service id order, a page at a time: all of them, up to
   * SWEEP_MAX; a sweep that stops there goes on from that point at the next, so every open lifecycle
   * is looked at however many there are. It also stops — and the next goes on from the lifecycle it
   * stopped at — when the database is unavailable (every other pass would wait for it in vain, a
   * server selection timeout each) and when `stopping()` says the process is shutting down (between
   * two passes: the one in progress finishes). Returns how many were looked at.
   */
  async function sweep (stopping: () => boolean = () => false): Promise<number> {
    let looked = 0;
    for (;;) {
      const after = sweepCursor;
      const views = await repos.lifecycles.openLifecycles(SWEEP_BATCH, after);
      let done = 0;
      let interrupted = false;
      for (const view of views) {
        if (stopping()) {
          interrupted = true;
          break;
        }
        try {
          await reconcile(view);
        } catch (err) {
          if (isAppError(err) && err.code === 'database-unavailable') {
            log.warn({ serviceId: view.serviceId, err }, 'rollout lifecycle sweep stopped: the database is unavailable; the next sweep goes on from here');
            interrupted = true;
            break;
          }
          log.warn({ serviceId: view.serviceId, err }, 'rollout lifecycle pass failed; the next sweep takes it up');
        }
        done++;
      }
      looked += done;
      if (interrupted) {
        sweepCursor = done > 0 ? views[done - 1]?.serviceId : after;
        break;
      }
      sweepCursor = views.length < SWEEP_BATCH ? undefined : views.at(-1)?.serviceId;
      if (sweepCursor === undefined || looked >= SWEEP_MAX) break;
    }
    telemetry.lifecycleSwept(looked);
    return looked;
  }

  /** Sweeps every `intervalMs` (the first after a random part of it, so that processes spread out). */
  function startSweeper (intervalMs: number): { stop: () => Promise<void> } {
    let running: Promise<unknown> | undefined;
    let stopped = false;
    const tick = (): void => {
      if (stopped || running) return;
      running = sweep(() => stopped)
        .catch((err: unknown) => { log.warn({ err }, 'rollout lifecycle sweep failed'); })
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

  return { afterStatusChange, reconcile, sweep, startSweeper };
}

export type RolloutLifecycleControl = ReturnType<typeof rolloutLifecycle>;
