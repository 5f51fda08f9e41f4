import type { AttestationIssuer } from './attestations.js';
import type { ClusterOperations } from './clusters.js';
import type { ApprovalOperations } from './approvals.js';
import type { BreakGlassOperations } from './breakGlass.js';
import type { GovernanceOperations } from './governance.js';
import type { RolloutLifecycleControl } from './lifecycle.js';
import type { observePushEvent } from './observePushEvent.js';
import type { abort, promote, rollBack } from './manualRollout.js';
import type { RolloutReads } from './readRollout.js';
import type { ReleaseReads } from './releases.js';
import type { reportSnapshot } from './reportSnapshot.js';
import type { ServiceOperations } from './services.js';

/**
 * Every use case, as the adapters (REST and TypedRequest) see them. Built in src/app.ts from
 * the module named after each: src/operations/manualRollout.ts (promotion, rollback, abort), observePushEvent.ts,
 * reportSnapshot.ts, readRollout.ts, services.ts, clusters.ts, releases.ts.
 */
export interface Operations {
  services: ServiceOperations;
  clusters: ClusterOperations;
  releases: ReleaseReads;
  /** Reads of rollouts: the view, the history, the delivery metrics, the status events. */
  rolloutReads: RolloutReads;
  promote: ReturnType<typeof promote>;
  rollBack: ReturnType<typeof rollBack>;
  observePushEvent: ReturnType<typeof observePushEvent>;
  reportSnapshot: ReturnType<typeof reportSnapshot>;
  abort: ReturnType<typeof abort>;
  /** Signed attestations: issuing what successes and drifts left due, and reading them (src/operations/attestations.ts). */
  attestations: AttestationIssuer;
  /** The global governance policy (windows for every service, stop-the-line): src/operations/governance.ts. */
  governance: GovernanceOperations;
  /** Promotion requests and their approvals: src/operations/approvals.ts. */
  approvals: ApprovalOperations;
  /** Break-glass grants: src/operations/breakGlass.ts. */
  breakGlass: BreakGlassOperations;
  /** Lifecycle control: the sweeper (started by src/app.ts) and the pass after each status change. */
  lifecycle: RolloutLifecycleControl;
}
