import type { AttestationDues, AttestationLog } from './attestations.js';
import type { ClusterRepository } from './clusters.js';
import type { EventLog } from './eventLog.js';
import type { BreakGlassGrants, GovernanceRepository, PromotionRequests } from './governance.js';
import type { PushEventRepository, ReleaseRepository } from './releases.js';
import type { ReportRepository } from './reports.js';
import type { IdempotencyRepository, RolloutRepository } from './rollouts.js';
import type { AutomationQueue, Lifecycles, ServiceCatalogue, ServicePlans, StatusEvents, StatusSummaries } from './services.js';
import type { WebhookRepository } from './webhooks.js';

/**
 * The ports: what the use cases need from persistence and the outside world, declared here,
 * once, and implemented by src/store (and src/outbound/). Every method resolves to a typed
 * result for the expected cases (not found, lost compare-and-swap, duplicate); the store
 * throws only the unexpected, and turns an unreachable database into `database-unavailable`.
 */

export type * from './attestations.js';
export type * from './clusters.js';
export type * from './eventLog.js';
export type * from './governance.js';
export type * from './releases.js';
export type * from './reports.js';
export type * from './rollouts.js';
export type * from './services.js';
export type * from './webhooks.js';
export type { DatabaseHealth } from './database.js';

/** Every repository, over one database. */
export interface Repositories {
  catalogue: ServiceCatalogue;
  plans: ServicePlans;
  statusSummaries: StatusSummaries;
  statusEvents: StatusEvents;
  lifecycles: Lifecycles;
  automationQueue: AutomationQueue;
  events: EventLog;
  releases: ReleaseRepository;
  pushEvents: PushEventRepository;
  clusters: ClusterRepository;
  rollouts: RolloutRepository;
  idempotency: IdempotencyRepository;
  reports: ReportRepository;
  attestations: AttestationLog;
  attestationDues: AttestationDues;
  webhooks: WebhookRepository;
  governance: GovernanceRepository;
  promotionRequests: PromotionRequests;
  breakGlassGrants: BreakGlassGrants;
}

// The outside world ------------------------------------------------------------------

/** The log a use case writes to (pino's signature: context object first). */
export interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export type Clock = () => number;
