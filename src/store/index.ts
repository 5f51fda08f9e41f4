import type { DatabaseHealth } from '../domain/ports/database.js';
import type { Repositories } from '../domain/ports/index.js';
import { AttestationStore } from './attestationStore.js';
import { ClusterStore } from './clusterStore.js';
import { EventLogStore } from './eventLogStore.js';
import { BreakGlassStore, GovernanceStore } from './governanceStore.js';
import { PromotionRequestStore } from './promotionRequestStore.js';
import { withDomainErrors } from './driverErrors.js';
import { IdempotencyStore } from './idempotencyStore.js';
import { Database, type DatabaseOptions } from './mongo.js';

export { probeConformance, ConformanceTimeout, type ProbeOptions } from './conformance.js';
export { conformanceBoundMs, InvalidConnectionString } from './mongo.js';
import { PushEventStore } from './pushEventStore.js';
import { ReleaseStore } from './releaseStore.js';
import { ReportStore } from './reportStore.js';
import { RolloutStore } from './rolloutStore.js';
import { ServiceCatalogueStore } from './catalogueStore.js';
import { LifecycleStore } from './lifecycleStore.js';
import { ServicePlanStore } from './planStore.js';
import { StatusStore } from './statusStore.js';
import { WebhookStore } from './webhookStore.js';

/** The store as the app composes it: the repositories, the database's health, and its lifecycle. */
export interface Store {
  repositories: Repositories;
  health: DatabaseHealth;
  /** Told when the driver's monitor fails a heartbeat (the database is unreachable). */
  onHeartbeatFailed(listener: () => void): void;
  close(): Promise<void>;
}

/**
 * Connects (lazily) to MongoDB and builds one repository per collection, each with its driver
 * errors translated into domain errors: the only place the driver is reached from.
 */
export function openStore (options: DatabaseOptions): Store {
  const database = new Database(options);
  const guarded = <T extends object>(repository: T): T => withDomainErrors(gatedByConformance(repository, database));
  // The service roles (src/domain/ports/services.ts): four stores over the services collection.
  const status = guarded(new StatusStore(database));
  const lifecycles = guarded(new LifecycleStore(database));
  const attestations = guarded(new AttestationStore(database));
  const repositories: Repositories = {
    catalogue: guarded(new ServiceCatalogueStore(database)),
    plans: guarded(new ServicePlanStore(database)),
    statusSummaries: status,
    statusEvents: status,
    lifecycles,
    automationQueue: lifecycles,
    releases: guarded(new ReleaseStore(database)),
    pushEvents: guarded(new PushEventStore(database)),
    clusters: guarded(new ClusterStore(database)),
    rollouts: guarded(new RolloutStore(database)),
    idempotency: guarded(new IdempotencyStore(database)),
    reports: guarded(new ReportStore(database)),
    events: guarded(new EventLogStore(database)),
    attestations,
    attestationDues: attestations,
    webhooks: guarded(new WebhookStore(database)),
    governance: guarded(new GovernanceStore(database)),
    promotionRequests: guarded(new PromotionRequestStore(database)),
    breakGlassGrants: guarded(new BreakGlassStore(database)),
  };
  return {
    repositories,
    health: withDomainErrors(database),
    onHeartbeatFailed: (listener) => { database.onHeartbeatFailed(listener); },
    close: () => database.close(),
  };
}

/** The constructor of every `async` function: how the gate tells the methods that reach the database. */
const AsyncFunction = (async () => {}).constructor;

/**
 * Fail closed (issue 24): until the database has passed the conformance check (when it is required),
 * every method of a repository that reaches the database waits for the check, and fails with it
 * (`database-refused`, `database-unavailable`) — requests, the lifecycle sweeper and the idempotency
 * sweep alike write nothing to a database that would break the guarantees. Once it passed, a method
 * is called directly. Only `async` methods reach the database; the few plain ones compute
 * (test/unit/store/conformanceGate.test.ts keeps it so).
 */
export function gatedByConformance<T extends object> (repository: T, database: Pick<Database, 'conformanceGate'>): T {
  return new Proxy(repository, {
    get (target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      // Called on the repository itself, never on this proxy: its methods use private fields.
      if (!(value instanceof AsyncFunction)) return (...args: unknown[]): unknown => value.apply(target, args);
      return (...args: unknown[]): unknown => {
        const waiting = database.conformanceGate();
        return waiting === undefined ? value.apply(target, args) : waiting.then(() => value.apply(target, args));
      };
    },
  });
}
