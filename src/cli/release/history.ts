import type { HistoryPage, RolloutHistoryEntry } from './api.js';
import type { ApiClient } from './http.js';
import { historyRequest } from './requests.js';

/** Idempotency records are kept at least 48 h: an older history entry cannot be replayed anyway. */
const HISTORY_HORIZON_MS = 49 * 3_600_000;
const HISTORY_PAGES = 5;
const PAGE_SIZE = 100;

export interface FindRolloutInput {
  client: ApiClient;
  serviceId: string;
  predicate: (entry: RolloutHistoryEntry) => boolean;
  signal?: AbortSignal;
}

/** The newest rollout history entry matching `predicate` (a few pages back, at most 49 h), or undefined. */
export async function findRollout ({ client, serviceId, predicate, signal }: FindRolloutInput): Promise<RolloutHistoryEntry | undefined> {
  const horizon = Date.now() - HISTORY_HORIZON_MS;
  let cursor: string | undefined;
  for (let page = 0; page < HISTORY_PAGES; page++) {
    const { body } = await client.send<HistoryPage>(historyRequest({ serviceId, limit: PAGE_SIZE, cursor }), signal ? { signal } : {});
    for (const entry of body.rollouts) {
      if (predicate(entry)) return entry;
      if (entry.createdAt < horizon) return undefined;
    }
    if (!body.nextCursor) return undefined;
    cursor = body.nextCursor;
  }
  return undefined;
}
