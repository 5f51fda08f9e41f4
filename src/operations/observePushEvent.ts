import type {
  AutomaticPromotionOutcome, IImageRelease, IImmutableRegistryPushEvent, IService, ReportImmutableRegistryPushEventResponse,
} from '../contracts/index.js';
import type { Clock, Repositories, StoredPushEvent } from '../domain/ports/index.js';
import {
  identityConflict, isSameRelease, pushEventFingerprint, pushEventProblems, registryTargetRefusal, releaseIdentityOf,
} from '../domain/releases.js';
import { effectiveRolloutPolicy, isSettled, tagFilterRefusal, type EffectivePolicy } from '../domain/lifecycle.js';
import { aggregateOf } from '../domain/rolloutStatus.js';
import { automaticPromotionSkip } from '../domain/rollouts.js';
import { errors, rolloutRefusalOf, type AppError } from '../errors.js';
import type { RolloutIssuer } from './issueRollout.js';
import { automaticPromotionKey, automaticPromotionRequest, closedForNow, retryAtOf } from './windowPromotion.js';
import { invalid, refusal, success, type Actor, type Result } from '../domain/result.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

/**
 * Observe an immutable registry push event (docs/lifecycle.md "Safe automatic promotion"):
 * record the event, upsert its release, and — for a service with deployOnPush — promote it
 * automatically, at most once per event, under the same compare-and-swap as a manual promotion.
 *
 * Crash safety without transactions: every accepted event is stored first (its eventId is the
 * dedup key), then the release is upserted with idempotent operators only ($setOnInsert,
 * $addToSet, $min, $max), its observationCount being the number of stored events of the release
 * written with $max. Whatever step a crash interrupts, re-sending the same event completes it
 * (the automatic promotion included: its idempotency key is the event id), and no interleaving
 * of writers lowers a counter.
 */

export interface ObservePushEventDeps {
  repos: Pick<Repositories, 'automationQueue' | 'catalogue' | 'lifecycles' | 'pushEvents' | 'releases'>;
  rollouts: RolloutIssuer;
  telemetry: Telemetry;
  now: Clock;
}

/** The event's release, whether it was recorded before, and what automation decided for it then (once decided). */
type PushEvent = IImmutableRegistryPushEvent;

type Ingested = { release: IImageRelease, duplicate: boolean, automation?: AutomaticPromotionOutcome | undefined };

/** Counts the release's stored events, then upserts; a conflict removes the (refused) event again. */
async function upsertRelease (deps: ObservePushEventDeps, event: PushEvent, fingerprint: string): Promise<IImageRelease | AppError> {
  const identity = releaseIdentityOf(event);
  const observationCount = await deps.repos.pushEvents.countForRelease(identity);
  const result = await deps.repos.releases.recordObservation({ identity, tag: event.tag, observedAt: event.observedAt, observationCount });
  if (result.outcome === 'recorded') return result.release;
  // Lost a race to an incompatible release: the event can never belong to one, so it leaves no trace.
  await deps.repos.pushEvents.remove(event.eventId, fingerprint);
  const [existing] = (await deps.repos.releases.findByIdOrTuple(identity)).filter((r) => !isSameRelease(r, identity));
  return identityConflict(identity, existing);
}

/** The same eventId again: the same content re-runs the idempotent upsert (completing a crashed write); other content is refused. */
async function redelivered (deps: ObservePushEventDeps, event: PushEvent, fingerprint: string, recorded: StoredPushEvent): Promise<Result<Ingested>> {
  if (recorded.fingerprint !== fingerprint) return refusal(errors.pushEventConflict(event.eventId, recorded.event, event));
  const release = await upsertRelease(deps, event, fingerprint);
  return release instanceof Error ? refusal(release) : success({ release, duplicate: true, automation: recorded.automation }, true);
}

/** Records a new event (refusing an identity conflict before writing anything; the unique indexes catch the races). */
async function recordNew (deps: ObservePushEventDeps, event: PushEvent, fingerprint: string, reportedBy: string): Promise<Result<Ingested>> {
  const identity = releaseIdentityOf(event);
  const [conflicting] = (await deps.repos.releases.findByIdOrTuple(identity)).filter((r) => !isSameRelease(r, identity));
  if (conflicting) return refusal(identityConflict(identity, conflicting));
  const record: StoredPushEvent = { event, fingerprint, recordedAt: deps.now(), reportedBy };
  // A lost insert race is a duplicate; the winner vanishing again (it was refused and removed) frees the id.
  for (let attempt = 1; attempt <= 3; attempt++) {
    if (await deps.repos.pushEvents.insert(record)) {
      const release = await upsertRelease(deps, event, fingerprint);
      return release instanceof Error ? refusal(release) : success({ release, duplicate: false });
    }
    const winner = await deps.repos.pushEvents.findById(event.eventId);
    if (winner) return redelivered(deps, event, fingerprint, winner);
  }
  throw new Error(`push event '${event.eventId}' could not be recorded: its id keeps being taken and released`);
}

/**
 * While the current rollout is in progress (not settled, inside its deadline), a push waits:
 * the newest (by first observation) is kept and promoted once the rollout settles
 * (src/operations/lifecycle.ts). undefined: nothing in progress, promote now.
 */
async function queueBehindRollout (
  deps: ObservePushEventDeps, service: IService, release: IImageRelease, event: PushEvent, actor: Actor, policy: EffectivePolicy,
) {
  const view = await deps.repos.lifecycles.findLifecycle(service.id);
  const plan = view?.plan;
  if (!plan || !view.state || view.automationHold || plan.releaseId === release.id) return undefined;
  if (isSettled(aggregateOf(plan, view.state.summary).status, view.state.summary.lifecycle, policy, deps.now())) return undefined;
  const current = await deps.repos.releases.findById(plan.releaseId);
  if (current && release.data.firstObservedAt < current.data.firstObservedAt) return { outcome: 'skipped', reason: 'older-than-current' } as const;
  const queued = await deps.repos.automationQueue.queuePromotion({ serviceId: service.id, rolloutId: plan.rolloutId }, {
    releaseId: release.id,
    firstObservedAt: release.data.firstObservedAt,
    tag: event.tag,
    eventId: event.eventId,
    pushedBy: pushedByOf(event, actor),
    queuedAt: deps.now(),
    afterRolloutId: plan.rolloutId,
  });
  if (queued === 'queued') {
    return { outcome: 'queued', reason: `rollout '${plan.rolloutId}' is in progress: promoted once it settles, unless a newer push arrives first` } as const;
  }
  return queued === 'newer-waiting' ? { outcome: 'skipped', reason: 'newer-release-waiting' } as const : undefined;
}

/** Who pushed: the push event's actor, else the caller's subject. */
const pushedByOf = (event: PushEvent, actor: Actor): string => event.actorUserId ?? actor.principal.subject;

/** The event's automatic promotion, under its key (the same request a wait for a window makes later: src/operations/windowPromotion.ts). */
const issueAutomatic = (deps: ObservePushEventDeps, service: IService, release: IImageRelease, event: PushEvent, actor: Actor) =>
  deps.telemetry.rollout('automatic', deps.rollouts.issueRollout(
    automaticPromotionRequest(service.id, release.id, { eventId: event.eventId, tag: event.tag, pushedBy: pushedByOf(event, actor) }),
  ));

/**
 * A push whose automatic promotion met a closed window or stop-the-line waits for promotions to open (the
 * newest push of the service waits; src/operations/windowPromotion.ts promotes it then).
 */
async function waitForWindow (deps: ObservePushEventDeps, service: IService, release: IImageRelease, event: PushEvent, actor: Actor, error: AppError) {
  const now = deps.now();
  const retryAt = retryAtOf(error, now);
  const waits = await deps.repos.automationQueue.waitForWindow(service.id, {
    releaseId: release.id,
    firstObservedAt: release.data.firstObservedAt,
    tag: event.tag,
    eventId: event.eventId,
    pushedBy: pushedByOf(event, actor),
    since: now,
    code: error.code,
    retryAt,
  });
  if (!waits) return { outcome: 'skipped', reason: 'newer-release-waiting' } as const;
  const when = error.code === 'stop-the-line' ? 'once stop-the-line is lifted' : `once the window opens (${new Date(retryAt).toISOString()})`;
  return { outcome: 'queued', reason: `${error.code}: ${error.message.slice(0, 256)}; promoted ${when}, unless a newer push arrives first` } as const;
}

/**
 * At most once per event (the idempotency key is the event id), never while an operator's
 * rollback holds, only for tags the service's filter lets through, never to an older release;
 * while a rollout is in progress the push waits for it to settle.
 */
async function promoteAutomatically (
  deps: ObservePushEventDeps, service: IService, release: IImageRelease, event: PushEvent, actor: Actor, redelivery: boolean,
) {
  // A redelivery after a crash that interrupted the first delivery once its promotion had taken
  // effect: that promotion, completed or replayed under its key — not queued or decided again.
  if (redelivery && await deps.rollouts.committedUnder(service.id, automaticKeyOf(event))) {
    return automaticOutcome(await issueAutomatic(deps, service, release, event, actor));
  }
  if (automaticPromotionSkip(service, undefined, null) === 'not-enabled') return { outcome: 'skipped', reason: 'not-enabled' } as const;
  const policy = effectiveRolloutPolicy(service.data.rolloutPolicy);
  const filtered = tagFilterRefusal(policy, event.tag);
  if (filtered) return { outcome: 'skipped', reason: `tag-filtered: ${filtered}` } as const;
  const waiting = await queueBehindRollout(deps, service, release, event, actor, policy);
  if (waiting) return waiting;
  const result = await issueAutomatic(deps, service, release, event, actor);
  if (!result.ok && closedForNow(result.error.code)) return await waitForWindow(deps, service, release, event, actor, result.error);
  const outcome = automaticOutcome(result);
  // Lost the generation to another rollout (a waiting push promoted as the rollout settled): that
  // rollout is in progress now, so this push waits for it instead of being dropped.
  if (!(outcome instanceof Error) && outcome.outcome === 'conflict') return (await queueBehindRollout(deps, service, release, event, actor, policy)) ?? outcome;
  return outcome;
}

/**
 * Checks (in this order, nothing written when one fails): canonical names and pinned
 * reference, service exists, registry target; then records the event and upserts its
 * release, then promotes automatically where the service asks for it — once per event: the
 * decision is recorded on the event, and a redelivery gets it back; a redelivery of an event whose
 * decision was never recorded (a crash) decides, so that a retry completes it.
 */
export async function observe (deps: ObservePushEventDeps, event: PushEvent, actor: Actor): Promise<Result<ReportImmutableRegistryPushEventResponse>> {
  const problems = pushEventProblems(event, deps.now());
  if (problems.length > 0) return invalid(problems);
  const service = await deps.repos.catalogue.findById(event.serviceId);
  if (!service) return refusal(errors.serviceNotFound(event.serviceId));
  const mismatch = registryTargetRefusal(service, event);
  if (mismatch) return refusal(mismatch);

  const fingerprint = pushEventFingerprint(event);
  const recorded = await deps.repos.pushEvents.findById(event.eventId);
  const ingested = recorded ? await redelivered(deps, event, fingerprint, recorded) : await recordNew(deps, event, fingerprint, actor.principal.subject);
  if (!ingested.ok) return ingested;
  const { release, duplicate, automation } = ingested.value;
  actor.log.info({ serviceId: service.id, releaseId: release.id, eventId: event.eventId, duplicate }, 'push event recorded');
  if (duplicate) deps.telemetry.pushEventReplayed();
  // At most once per event: a redelivery of an event whose automation was decided gets that decision
  // back (a push queued, promoted later, or discarded by an operator's promotion does not come back).
  // Undecided (the first delivery crashed, or is still at it): this delivery decides.
  if (automation) {
    // The event's automatic promotion answered again: an idempotent replay of it, counted as one.
    if (automation.outcome === 'promoted') await deps.telemetry.rollout('automatic', Promise.resolve(success({ issued: true }, true)));
    return success({ release, duplicate, autoPromotion: { ...automation, replayed: true } }, duplicate);
  }
  const autoPromotion = await promoteAutomatically(deps, service, release, event, actor, duplicate);
  if (autoPromotion instanceof Error) return refusal(autoPromotion, duplicate);
  // Every decision, `not-enabled` included: turning deployOnPush on later does not make an old event's redelivery promote.
  const { replayed: _replayed, ...decided }: AutomaticPromotionOutcome = autoPromotion;
  await deps.repos.pushEvents.recordAutomation(event.eventId, decided);
  if (autoPromotion.outcome !== 'skipped' || autoPromotion.reason !== 'not-enabled') {
    actor.log.info({ serviceId: service.id, eventId: event.eventId, ...autoPromotion }, 'automatic promotion');
  }
  return success({ release, duplicate, autoPromotion }, duplicate);
}

/** The push-event use case bound to its dependencies, as the app and the routes call it. */
export function observePushEvent (deps: ObservePushEventDeps) {
  return (event: PushEvent, actor: Actor): Promise<Result<ReportImmutableRegistryPushEventResponse>> => observe(deps, event, actor);
}

const automaticKeyOf = (event: PushEvent): string => automaticPromotionKey(event.eventId);

/** How an automatic promotion ended, as the push event's answer says it. */
function automaticOutcome (result: Awaited<ReturnType<RolloutIssuer['issueRollout']>>): AutomaticPromotionOutcome | AppError {
  const replayed = result.replayed ? { replayed: true } : {};
  if (result.ok) {
    if (!result.value.issued) return { outcome: 'skipped', reason: result.value.skip, ...replayed };
    const plan = result.value.service.data.imageDeployment;
    return { outcome: 'promoted', rolloutId: plan?.rolloutId, rolloutGeneration: plan?.rolloutGeneration, ...replayed };
  }
  const { error } = result;
  // What the refusal means for an automatic promotion is the error catalogue's (src/errors.ts `rollout.automatic`).
  const meaning = rolloutRefusalOf(error.code).automatic;
  if (meaning === 'conflict') return { outcome: 'conflict', reason: error.message, ...replayed };
  if (meaning === 'skipped') return { outcome: 'skipped', reason: `${error.code}: ${error.message}`, ...replayed };
  // Any other refusal (the event's automatic promotion is still in progress elsewhere, …) is the event's answer.
  return error;
}
