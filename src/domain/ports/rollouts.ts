import type { MetricsRollout } from '../deliveryMetrics.js';
import type { RolloutEnd, RolloutRecord } from '../rollouts.js';
import type { StageHistory } from './governance.js';

export type InsertRolloutResult =
  | { kind: 'inserted' }
  /** This idempotency record already created a rollout (a resumed request). */
  | { kind: 'exists-for-record', record: RolloutRecord }
  /** Another rollout took this generation first: the caller lost the compare-and-swap. */
  | { kind: 'generation-taken' };

export interface RolloutRepository extends StageHistory {
  /** THE commit point: one rollout per (service, generation), one per idempotency record. */
  insert(record: RolloutRecord): Promise<InsertRolloutResult>;
  /** The rollout of an idempotent request: by the service and the record (the service first: it is the shard key of rollouts). */
  findByIdempotencyRecord(serviceId: string, idempotencyRecordId: string): Promise<RolloutRecord | null>;
  /**
   * The service's rollouts at `currentGeneration` and the one after that are not applied yet (what a
   * crash leaves: the next one committed before its plan was written, the current one before it was
   * finished), oldest first. Two lookups on the unique (serviceId, generation) index.
   */
  findPending(serviceId: string, currentGeneration: number): Promise<RolloutRecord[]>;
  markApplied(rolloutId: string): Promise<void>;
  /**
   * Of these releases of the service, those a rollout of which ever succeeded, with the newest such
   * success (its succeededAt): the console marks a rollback target missing here as never verified.
   */
  lastSucceeded(serviceId: string, releaseIds: readonly string[]): Promise<Map<string, number>>;
  /** Promotions (manual or automatic) of a release: the release's promotionCount. */
  countPromotions(releaseId: string): Promise<number>;
  /** History page, newest generation first; `beforeGeneration` is the keyset cursor. */
  list(serviceId: string, limit: number, beforeGeneration?: number): Promise<RolloutRecord[]>;
  /** The newest `limit` rollouts' outcomes and times only (no plan: what delivery metrics read), newest generation first. */
  /** Newest first; with `since`, back to the newest rollout created before it (see RolloutStore.listOutcomes). */
  listOutcomes(serviceId: string, limit: number, since?: number): Promise<MetricsRollout[]>;
  /** The service's rollout of exactly this generation (the unique (serviceId, generation) index finds it). */
  findByGeneration(serviceId: string, generation: number): Promise<RolloutRecord | null>;
  /** Copies a rollout's milestones into its history record (idempotent: each is set once in the status summary first). */
  recordMilestones(rolloutId: string, milestones: Pick<RolloutRecord, 'succeededAt' | 'failure' | 'deadline'>): Promise<void>;
  /** When the rollout's success was revoked (once; idempotent). */
  recordRevocation(rolloutId: string, at: number): Promise<void>;
  /** How the rollout ended (once: the first writer's end stays); true for that first writer. */
  markEnded(rolloutId: string, end: RolloutEnd): Promise<boolean>;
}

/** What a completed request answered: replayed verbatim for the same key and request. */
export type StoredOutcome =
  | { kind: 'success', body: unknown }
  | { kind: 'error', code: string, message: string, details: Record<string, unknown> };

export type ClaimResult =
  /** `createdAt` names this lifetime of the key: a key reused after its record expired is a new request. */
  | { kind: 'claimed', createdAt: number }
  | { kind: 'taken-over', createdAt: number }
  | { kind: 'replay', outcome: StoredOutcome }
  | { kind: 'in-progress', retryAfterMs: number }
  | { kind: 'reused', operation: string };

export interface ClaimInput {
  recordId: string;
  serviceId: string;
  key: string;
  operation: string;
  fingerprint: string;
  owner: string;
  now: number;
  leaseMs: number;
  retentionMs: number;
}

export interface IdempotencyRepository {
  /** Claims the key (unique _id), takes over an abandoned claim, or says why not. */
  claim(input: ClaimInput): Promise<ClaimResult>;
  /** Stores the outcome. Idempotent: completing twice with the same outcome is harmless. */
  complete(recordId: string, outcome: StoredOutcome, now: number): Promise<void>;
  /** The key's record as it stands (unexpired), or null: in progress or completed, and when this lifetime of the key began. */
  find(recordId: string, now: number): Promise<{ state: 'in-progress' | 'completed', createdAt: number } | null>;
  /** Gives the key back after a transient failure so that the client's retry need not wait for the lease. */
  release(recordId: string, owner: string): Promise<void>;
  /** Removes records past their retention; resolves to how many. */
  sweepExpired(now: number): Promise<number>;
}
