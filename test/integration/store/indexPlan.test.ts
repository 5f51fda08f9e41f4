import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexPlan } from '../../../src/store/indexPlan.js';
import { Database } from '../../../src/store/mongo.js';
import { FERRETDB_BUILD_TIMEOUT_MS, startFerretDb, type FerretDb } from '../../../tools/ferretdb/ferretdb.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * Issue 24: start-up created the index plan all-or-nothing (one createIndexes per collection, stopping
 * at the first refusal), so FerretDB's refusal of the TTL option left the later, unrelated indexes
 * (`reports_*`, `reportClaims_rollout`) uncreated. Each index is now created on its own, and the
 * refused ones are answered with the server's reason.
 */
describe('the index plan on a server that refuses an optional index option (FerretDB 1.24 over SQLite: no TTL)', () => {
  let ferret: FerretDb;
  let database: Database;
  let client: MongoClient;
  const dbName = freshDatabaseName('indexplan');

  beforeAll(async () => {
    ferret = await startFerretDb({ backend: 'sqlite', log: (line) => { console.log(line); } });
    database = new Database({ uri: ferret.uri, dbName, timeoutMs: 5_000 });
    client = await new MongoClient(ferret.uri, { serverSelectionTimeoutMS: 5_000 }).connect();
  }, FERRETDB_BUILD_TIMEOUT_MS + 60_000);
  afterAll(async () => {
    await client?.close();
    await database?.close();
    await ferret?.stop();
  });

  it('creates every other index, and names the refused TTL index with the server\'s answer', async () => {
    const outcome = await database.ensureIndexes();
    expect(outcome.refused).toEqual([{
      collection: 'idempotency',
      name: 'idempotency_expiry',
      unique: false,
      ttl: true,
      reason: expect.stringMatching(/^NotImplemented \(238\): .*expireAfterSeconds.* is not implemented yet$/) as unknown,
    }]);
    expect(outcome.created).toBe(indexPlan.length - 1);
    const missing: string[] = [];
    for (const entry of indexPlan.filter((e) => e.expireAfterSeconds === undefined)) {
      const names = (await client.db(dbName).collection(entry.collection).indexes()).map((index) => index.name);
      if (!names.includes(entry.name)) missing.push(`${entry.collection}.${entry.name}`);
    }
    expect(missing).toEqual([]);
    // Nothing required is missing: the service is ready as far as its indexes go (no conformance check on this Database).
    expect(database.ready).toBe(true);
  });
});
