import type { WindowWait } from '../domain/lifecycle.js';
import type { Clock, Log, Repositories } from '../domain/ports/index.js';
import type { AppError } from '../errors.js';
import type { RolloutIssuer, RolloutRequest } from './issueRollout.js';

/**
 * Pushes that wait for promotions to open (docs/governance.md "Windows"): an automatic promotion from a
 * push that meets a closed window or stop-the-line is not dropped. The newest such push waits on its
 * service (`windowWait`, src/operations/observePushEvent.ts) and this pass of the sweeper, in every
 * process, promotes it once the window opened: at the opening time the refusal named, or — stop-the-line
 * has none — on a sweep every STOPPED_RETRY_MS. It is issued as the push's own automatic promotion, under
 * the push's idempotency key: one rollout per push, whichever process (or a redelivery of the push) gets
 * there first. Every rule of an automatic promotion applies again (hold, never an older release, trust,
 * approvals, the windows); a refusal for another reason ends the wait.
 */

export interface WindowPromotionDeps {
  repos: Pick<Repositories, 'automationQueue'>;
  rollouts: Pick<RolloutIssuer, 'issueRollout'>;
  now: Clock;
  log: Pick<Log, 'info' | 'warn'>;
}

const WAITS_PER_SWEEP = 100;
/** How often a push that waits for stop-the-line to be lifted is tried again (it names no opening time). */
export const STOPPED_RETRY_MS = 15_000;

/** The refusals a push waits through: promotions are closed now, and will open. */
export const closedForNow = (code: string): boolean => code === 'promotion-window-closed' || code === 'stop-the-line';

/** When a push that met `error` is tried again: the opening the window named, else after STOPPED_RETRY_MS. */
export function retryAtOf (error: AppError, now: number): number {
  const opensAt = error.details['opensAt'];
  return typeof opensAt === 'number' && opensAt > now ? opensAt : now + STOPPED_RETRY_MS;
}

/** The idempotency key of a push event's automatic promotion (no client key can collide: it starts with a control character). */
export const automaticPromotionKey = (eventId: string): string => `\u0001automatic:${eventId}`;

/** The automatic promotion of a push (the same request, whoever makes it: its key and fingerprint). */
export const automaticPromotionRequest = (serviceId: string, releaseId: string, push: Pick<WindowWait, 'eventId' | 'tag' | 'pushedBy'>): RolloutRequest => ({
  serviceId,
  releaseId,
  idempotencyKey: automaticPromotionKey(push.eventId),
  intent: { kind: 'promotion', mode: 'automatic' },
  issuer: { subject: `registry-push:${push.pushedBy}`, role: 'system', type: 'machine' },
  reason: `automatic promotion: tag '${push.tag}' pushed (event ${push.eventId})`,
});

/** One waiting push: promoted, still waiting (true: a rollout was issued). */
async function promoteWaiting (deps: WindowPromotionDeps, serviceId: string, wait: WindowWait): Promise<boolean> {
  // Its refusals were told when the push first met the window (promotion.refused): not again on every try.
  const result = await deps.rollouts.issueRollout({ ...automaticPromotionRequest(serviceId, wait.releaseId, wait), quietRefusal: true });
  if (!result.ok && closedForNow(result.error.code)) {
    await deps.repos.automationQueue.waitForWindow(serviceId, { ...wait, code: result.error.code, retryAt: retryAtOf(result.error, deps.now()) });
    return false;
  }
  if (!result.ok && (result.error.code === 'idempotency-request-in-progress' || result.error.statusCode >= 500)) return false;
  await deps.repos.automationQueue.clearWindowWait(serviceId, wait.releaseId);
  if (!result.ok || !result.value.issued) {
    const why = result.ok ? `skipped: ${result.value.issued ? '' : result.value.skip}` : `refused: ${result.error.code}`;
    deps.log.info({ serviceId, releaseId: wait.releaseId, eventId: wait.eventId, why }, 'a push that waited for a window was not promoted');
    return false;
  }
  if (!result.replayed) deps.log.info({ serviceId, releaseId: wait.releaseId, rolloutId: result.value.rolloutId }, 'promoted a push that waited for a window');
  return !result.replayed;
}

/** The sweeper's pass over the pushes whose retry time came; returns how many rollouts it issued. */
export async function promoteAfterWindows (deps: WindowPromotionDeps, stopping: () => boolean): Promise<number> {
  let issued = 0;
  for (const { serviceId, wait } of await deps.repos.automationQueue.windowWaits(deps.now(), WAITS_PER_SWEEP)) {
    if (stopping()) break;
    try {
      if (await promoteWaiting(deps, serviceId, wait)) issued++;
    } catch (err) {
      deps.log.warn({ serviceId, err }, 'promoting a push that waited for a window failed; the next sweep takes it up');
    }
  }
  return issued;
}
