import { serviceNotFound } from '../errors.js';
import { keyHashOfRolloutRef, type RolloutRecord } from './rollouts.js';

export interface HistoryRepositories {
  serviceExists(serviceId: string): Promise<boolean>;
  listRollouts(serviceId: string, limit: number, beforeGeneration?: number): Promise<RolloutRecord[]>;
}

export interface RolloutHistoryItem {
  rolloutId: string;
  generation: number;
  mode: RolloutRecord['mode'];
  releaseId: string;
  requestedDigest: RolloutRecord['plan']['requestedDigest'];
  digestPinnedImageReference: string;
  rollbackOfRolloutId?: string;
  previous?: RolloutRecord['previous'];
  targetScope: RolloutRecord['plan']['targetScope'];
  issuedBy: RolloutRecord['issuedBy'];
  reason: string;
  automationHold: RolloutRecord['hold'];
  state: RolloutRecord['state'];
  /** sha256 of `<serviceId>\u0000<Idempotency-Key>`: lets a client find what its key issued without the key being stored in clear. */
  idempotencyKeyHash: string;
  createdAt: number;
}

export interface RolloutHistoryPage {
  rollouts: RolloutHistoryItem[];
  nextCursor?: string;
}

/** The audit trail: every rollout of a service, newest generation first, keyset-paged by generation. */
export async function rolloutHistory (repos: HistoryRepositories, serviceId: string, limit: number, cursor?: string): Promise<RolloutHistoryPage> {
  if (!(await repos.serviceExists(serviceId))) {
    throw serviceNotFound(serviceId);
  }
  const before = cursor === undefined ? undefined : Number(cursor);
  const records = await repos.listRollouts(serviceId, limit + 1, before);
  const page = records.slice(0, limit);
  const last = page[page.length - 1];
  return {
    rollouts: page.map((r) => ({
      rolloutId: r.rolloutId,
      generation: r.generation,
      mode: r.mode,
      releaseId: r.releaseId,
      requestedDigest: r.plan.requestedDigest,
      digestPinnedImageReference: r.plan.digestPinnedImageReference,
      ...(r.plan.rollbackOfRolloutId ? { rollbackOfRolloutId: r.plan.rollbackOfRolloutId } : {}),
      ...(r.previous ? { previous: r.previous } : {}),
      targetScope: r.plan.targetScope,
      issuedBy: r.issuedBy,
      reason: r.reason,
      automationHold: r.hold,
      state: r.state,
      idempotencyKeyHash: keyHashOfRolloutRef(r.idempotencyRecordId),
      createdAt: r.createdAt,
    })),
    ...(records.length > limit && last ? { nextCursor: String(last.generation) } : {}),
  };
}
