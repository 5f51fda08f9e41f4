import type { DatabaseHealth, Repositories } from '../domain/ports/index.js';
import { ClusterStore } from './clusterStore.js';
import { EventLogStore } from './eventLogStore.js';
import { withDomainErrors } from './driverErrors.js';
import { IdempotencyStore } from './idempotencyStore.js';
import { Database, type DatabaseOptions } from './mongo.js';

export { InvalidConnectionString } from './mongo.js';
import { PushEventStore } from './pushEventStore.js';
import { ReleaseStore } from './releaseStore.js';
import { ReportStore } from './reportStore.js';
import { RolloutStore } from './rolloutStore.js';
import { ServiceStore } from './serviceStore.js';

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
  const repositories: Repositories = {
    services: withDomainErrors(new ServiceStore(database)),
    releases: withDomainErrors(new ReleaseStore(database)),
    pushEvents: withDomainErrors(new PushEventStore(database)),
    clusters: withDomainErrors(new ClusterStore(database)),
    rollouts: withDomainErrors(new RolloutStore(database)),
    idempotency: withDomainErrors(new IdempotencyStore(database)),
    reports: withDomainErrors(new ReportStore(database)),
    events: withDomainErrors(new EventLogStore(database)),
  };
  return {
    repositories,
    health: withDomainErrors(database),
    onHeartbeatFailed: (listener) => { database.onHeartbeatFailed(listener); },
    close: () => database.close(),
  };
}
