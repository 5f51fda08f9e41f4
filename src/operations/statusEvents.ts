import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { Clock, Repositories, StatusState } from '../domain/ports.js';
import { aggregateKey, aggregateOf, statusEventOf } from '../domain/rolloutStatus.js';

/** Rounds of read → compare → append a publication may take against concurrent publications. */
const MAX_ROUNDS = 16;

/**
 * Appends the status event of a summary state (the SSE log), unless a later state was published
 * already; a state whose aggregate equals the published one only moves the published seq on.
 * Any process may publish any state: the log stays ordered by summary seq.
 */
export function statusPublisher ({ repos, now }: { repos: Pick<Repositories, 'services'>, now: Clock }) {
  return async function publish (serviceId: string, plan: IImmutableImageDeploymentPlan, state: StatusState): Promise<void> {
    let head: StatusState | null = state;
    const seq = state.summary.seq;
    const aggregate = aggregateOf(plan, state.summary);
    const key = aggregateKey(aggregate);
    for (let round = 0; head && round < MAX_ROUNDS; round++) {
      const published = head.published?.rolloutId === plan.rolloutId ? head.published : undefined;
      if (published && published.seq >= seq) return;
      const changes = published?.key !== key;
      const revision = head.statusRevision;
      const event = changes ? statusEventOf(aggregate, revision + 1, now()) : undefined;
      if (await repos.services.publishStatus({ serviceId, rolloutId: plan.rolloutId, seq, key, revision, event })) return;
      head = await repos.services.readStatusState(serviceId, plan.rolloutId);
    }
  };
}

export type StatusPublisher = ReturnType<typeof statusPublisher>;
