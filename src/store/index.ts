import type { Database } from './mongo.js';
import { ServiceStore } from './serviceStore.js';

/** The repositories, one per collection, over one database. */
export interface Stores {
  services: ServiceStore;
}

export const createStores = (database: Database): Stores => ({
  services: new ServiceStore(database),
});
