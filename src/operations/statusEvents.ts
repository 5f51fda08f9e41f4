import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { Clock, Repositories, StatusState } from '../domain/ports/index.js';
import { statusChangedEvent } from '../domain/events.js';
import { aggregateKey, aggregateOf, statusEventOf, type RolloutAggregate } from '../domain/rolloutStatus.js';

/** Rounds of read → compare → append a publication may take against concurrent publications. */
const MAX_ROUNDS = 16;

/**
 * Moves the service's recorded events into the log (src/domain/ports/eventLog.ts). Never fails the
 * change that recorded them: they are in its write already, and the sweeper relays what is left.
 */
export async function relayQuietly ({ events }: Pick<Repositories, 'events'>, serviceId: string): Promise<void> {
  await events.relay(serviceId).catch(() => undefined);
}

/** The status a published aggregate key names (src/domain/rolloutStatus.ts `aggregateKey`: the status first). */
const statusOfKey = (key: string): RolloutAggregate['status'] | null => (JSON.parse(key) as [RolloutAggregate['status']])[0] ?? null;

/**
 * Appends the status event of the newest summary state (the SSE log) when its aggregate differs
 * from the one published last. The append is a compare-and-swap on the status revision AND on
 * the summary still being at the state's seq, so only the newest state is ever appended: a state
 * overtaken by a later report is not published (the later report's publication, or this one's
 * next round on the head it re-reads, speaks for it). A state whose aggregate equals the
 * published one writes nothing: the service document it would rewrite is the largest write of
 * a report. `state` was read atomically with its own summary write, so its `published` is what
 * was published up to that seq; any later append is of a later state. Any process may publish.
 */
export function statusPublisher ({ repos, now }: { repos: Pick<Repositories, 'events' | 'statusEvents' | 'statusSummaries'>, now: Clock }) {
  return async function publish (serviceId: string, plan: IImmutableImageDeploymentPlan, state: StatusState): Promise<void> {
    let head: StatusState | null = state;
    for (let round = 0; head && head.summary.rolloutId === plan.rolloutId && round < MAX_ROUNDS; round++) {
      const seq = head.summary.seq;
      const published = head.published?.rolloutId === plan.rolloutId ? head.published : undefined;
      if (published && published.seq >= seq) return;
      const aggregate = aggregateOf(plan, head.summary);
      const key = aggregateKey(aggregate);
      if (published?.key === key) return;
      const revision = head.statusRevision;
      const at = now();
      const event = statusEventOf(aggregate, revision + 1, at);
      const domainEvent = statusChangedEvent(plan, published ? statusOfKey(published.key) : null, aggregate, revision + 1, at);
      if (await repos.statusEvents.publishStatus({ serviceId, rolloutId: plan.rolloutId, seq, key, revision, event, domainEvent })) {
        await relayQuietly(repos, serviceId);
        return;
      }
      head = await repos.statusSummaries.readStatusState(serviceId, plan.rolloutId);
    }
  };
}

export type StatusPublisher = ReturnType<typeof statusPublisher>;
