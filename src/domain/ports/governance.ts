import type { GlobalGovernance } from '../../contracts/promotionPolicy.js';
import type { Approval, PromotionRequest } from '../governance/approvals.js';
import type { BreakGlassGrant } from '../governance/breakGlass.js';
import type { StageRollout } from '../governance/pipelines.js';
import type { RolloutIntent, RolloutTrigger } from '../rollouts.js';

/** The global governance policy as stored: the windows for every service and stop-the-line (docs/governance.md). */
export interface StoredGovernance {
  governance: GlobalGovernance;
  /** When it was last written, and by whom. */
  updatedAt: number;
  updatedBy: string;
}

/** The one global governance document (src/store/governanceStore.ts). */
export interface GovernanceRepository {
  /** null: never written (no global windows, stop-the-line off). */
  readGlobal(): Promise<StoredGovernance | null>;
  writeGlobal(stored: StoredGovernance): Promise<void>;
}

/** A stage's rollouts of some digests, as pipelines read them (src/domain/governance/pipelines.ts). */
export interface StageHistory {
  /** The stage's rollouts of `digest` (or, undefined, of any digest), newest first, at most `limit`; milestones as the history holds them. */
  stageRollouts(serviceId: string, digest: string | undefined, limit: number): Promise<StageRollout[]>;
}

/** A promotion request as stored: the request (approvals.ts), what to issue once approved, and the approvals given. */
export interface StoredPromotionRequest extends PromotionRequest {
  /** The rollout to issue once the quorum is reached, exactly as it was asked for. */
  rollout: { intent: RolloutIntent, reason: string, trigger?: RolloutTrigger };
  approvals: Approval[];
}

/** Promotion requests (docs/governance.md "Approvals"): each write a compare-and-swap that applies once. */
export interface PromotionRequests {
  /** Stores the request unless one of its id exists (a retried promotion makes the same request): the stored one. */
  createIfAbsent(request: StoredPromotionRequest): Promise<StoredPromotionRequest>;
  find(serviceId: string, requestId: string): Promise<StoredPromotionRequest | null>;
  /** Adds the approval unless its subject approved already or the request was issued; false: not added. */
  addApproval(requestId: string, approval: Approval): Promise<boolean>;
  /** Marks the request issued (once). */
  markIssued(requestId: string, issued: { rolloutId: string, at: number }): Promise<void>;
  /** The service's requests, newest first. */
  list(serviceId: string, limit: number): Promise<StoredPromotionRequest[]>;
}

/** Break-glass grants (docs/governance.md "Break-glass"): one approval, one use, each a compare-and-swap. */
export interface BreakGlassGrants {
  create(grant: BreakGlassGrant): Promise<void>;
  find(serviceId: string, grantId: string): Promise<BreakGlassGrant | null>;
  /** Records the approval unless the grant has one already; false: it had. */
  approve(grantId: string, approval: NonNullable<BreakGlassGrant['approval']>): Promise<boolean>;
  /**
   * Uses the grant up for the rollout planned under `ref` (the Idempotency-Key's rollout reference): true when it
   * was unused, or used under this same `ref` (a retry of the same request).
   */
  use(grantId: string, used: NonNullable<BreakGlassGrant['used']>, ref: string): Promise<boolean>;
  /** Gives the grant back when the rollout planned under `ref` lost its compare-and-swap (it issued nothing). */
  release(grantId: string, ref: string): Promise<void>;
}
