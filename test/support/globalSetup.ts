import type { TestProject } from 'vitest/node';
import { resolveTestDatabase } from './databaseResolution.js';
import { resolveTestRegistry } from './registryResolution.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server URI without a database name; each test file picks its own database. */
    mongoUri: string
    /** The OCI registry of this run (`http://host:port`); each test file pushes into its own repositories. */
    registryUrl: string
  }
}

export default async function setup (project: TestProject): Promise<() => Promise<void>> {
  const log = (line: string): void => { console.log(`[globalSetup] ${line}`); };
  const [database, registry] = await Promise.all([resolveTestDatabase(log), resolveTestRegistry(log)]);
  project.provide('mongoUri', database.uri);
  project.provide('registryUrl', registry.url);
  return async () => { await Promise.all([database.stop(), registry.stop()]); };
}
