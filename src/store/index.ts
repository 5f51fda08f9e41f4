import type { Database } from './mongo.js';
import { ServiceStore } from './serviceStore.js';
import { ReleaseStore } from './releaseStore.js';
import { PushEventStore } from './pushEventStore.js';
import { ClusterStore } from './clusterStore.js';
import { RolloutStore } from './rolloutStore.js';
import { IdempotencyStore } from './idempotencyStore.js';
import { DeploymentStore } from './deploymentStore.js';

/** The repositories, one per collection, over one database. */
export interface Stores {
  services: ServiceStore;
  releases: ReleaseStore;
  pushEvents: PushEventStore;
  clusters: ClusterStore;
  rollouts: RolloutStore;
  idempotency: IdempotencyStore;
  deployments: DeploymentStore;
}

export const createStores = (database: Database): Stores => ({
  services: new ServiceStore(database),
  releases: new ReleaseStore(database),
  pushEvents: new PushEventStore(database),
  clusters: new ClusterStore(database),
  rollouts: new RolloutStore(database),
  idempotency: new IdempotencyStore(database),
  deployments: new DeploymentStore(database),
});
