import type { TestProject } from 'vitest/node';
import { resolveTestDatabase } from './databaseResolution.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server URI without a database name; each test file picks its own database. */
    mongoUri: string
  }
}

export default async function setup (project: TestProject): Promise<() => Promise<void>> {
  const database = await resolveTestDatabase((line) => { console.log(`[globalSetup] ${line}`); });
  project.provide('mongoUri', database.uri);
  return async () => { await database.stop(); };
}
