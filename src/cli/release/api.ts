/**
 * The REST shapes the CLI reads, as types only (erased at build time: the CLI loads none
 * of the server's code). They come from the server's own schemas, so a change there that
 * the CLI does not follow fails `npm run typecheck`.
 */
import type { IImageRelease, IImmutableImageDeploymentPlan, IService, ImageReleasePage } from '../../contracts/index.js';
import type { StatusEvent } from '../../domain/rolloutStatus.js';
import type { BlockingReason, RolloutView } from '../../domain/rolloutView.js';
import type { AutomationHold } from '../../domain/rollouts.js';
import type { RolloutHistoryItem as RolloutHistoryEntry } from '../../domain/history.js';
import type { ApiClient } from './http.js';

export type { BlockingReason, IImageRelease, IImmutableImageDeploymentPlan, ImageReleasePage, RolloutHistoryEntry, RolloutView, StatusEvent };

export interface ServiceReply {
  service: IService;
  automationHold?: AutomationHold;
}

export interface HistoryPage {
  rollouts: RolloutHistoryEntry[];
  nextCursor?: string;
}

/** What the rollout counters look like, whether from the rollout view's status or an SSE event. */
export type RolloutSnapshot = Pick<StatusEvent,
  'rolloutId' | 'rolloutGeneration' | 'status' | 'requiredReplicaCount' | 'observedReplicaCount' |
  'healthyReplicaCount' | 'verifiedReplicaCount' | 'failedReplicaCount' | 'mismatchReason'>;

export const servicePath = (serviceId: string): string => `/v1/services/${encodeURIComponent(serviceId)}`;

/** Idempotency records are kept at least 48 h: an older history entry cannot be replayed anyway. */
const HISTORY_HORIZON_MS = 49 * 3_600_000;
const HISTORY_PAGES = 5;

/** The newest rollout history entry matching `predicate` (a few pages back, at most 49 h), or undefined. */
export async function findRollout (
  client: ApiClient,
  serviceId: string,
  predicate: (entry: RolloutHistoryEntry) => boolean,
  signal?: AbortSignal
): Promise<RolloutHistoryEntry | undefined> {
  const horizon = Date.now() - HISTORY_HORIZON_MS;
  let cursor: string | undefined;
  for (let page = 0; page < HISTORY_PAGES; page++) {
    const query = `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const { body } = await client.get<HistoryPage>(`${servicePath(serviceId)}/rollouts${query}`, signal ? { signal } : {});
    for (const entry of body.rollouts) {
      if (predicate(entry)) return entry;
      if (entry.createdAt < horizon) return undefined;
    }
    if (!body.nextCursor) return undefined;
    cursor = body.nextCursor;
  }
  return undefined;
}
