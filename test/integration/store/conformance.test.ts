import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ConformanceReport } from '../../../src/domain/ports/database.js';
import { probeConformance } from '../../../src/store/conformance.js';
import { indexPlan } from '../../../src/store/indexPlan.js';
import { FERRETDB_BUILD_TIMEOUT_MS, startFerretDb, type FerretDb } from '../../../tools/ferretdb/ferretdb.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * The database conformance check (src/store/conformance.ts, issue 24) against real servers through
 * the real driver: the suite's database (the local development database, mongo-java-server in memory,
 * unless MONGODB_URI or Docker says otherwise) is accepted; FerretDB 1.24 over SQLite, which does not
 * make single-document updates atomic, is refused for it. The measured times are printed, not asserted.
 */

const show = (label: string, report: ConformanceReport): void => {
  const lines = report.checks.map((c) => `  ${c.outcome.padEnd(8)} ${c.guarantee}: ${c.check}: ${c.detail}`);
  console.log(`${label}: ${report.server}, ${report.elapsedMs} ms\n${lines.join('\n')}`);
};

async function scratchLeft (uri: string, dbName: string): Promise<string[]> {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 }).connect();
  try {
    const names = (await client.db(dbName).listCollections({}, { nameOnly: true }).toArray()).map((info) => info.name);
    return names.filter((name) => name.startsWith('conformance_check_'));
  } finally {
    await client.close();
  }
}

describe('the database conformance check on the suite\'s database', () => {
  it('accepts it: every guarantee passes, and the scratch collections are dropped', async () => {
    const dbName = freshDatabaseName('conformance');
    const report = await probeConformance({ uri: inject('mongoUri'), dbName });
    show('suite database', report);
    expect(report.refused).toBeUndefined();
    const outcome = (guarantee: string): string[] => report.checks.filter((c) => c.guarantee === guarantee).map((c) => c.outcome);
    expect(outcome('single-document atomicity')).toEqual(['passed', 'passed', 'passed']);
    expect(outcome('unique indexes')).toEqual(['passed', 'passed']);
    expect(outcome('commands the store uses')).toEqual(['passed']);
    expect(outcome('bounded documents')).toEqual(['passed']);
    expect(outcome('unordered bulk writes')).toEqual(['passed', 'passed']);
    expect(report.checks.find((c) => c.check === 'compare-and-swap findOneAndUpdate')?.detail)
      .toBe('20 concurrent compare-and-swap updates of one document had 1 winner (3 times)');
    expect(report.checks.find((c) => c.guarantee === 'unique indexes' && c.check.includes('plan'))?.detail)
      .toBe(`created all ${indexPlan.filter((entry) => entry.unique).length} (src/store/indexPlan.ts)`);
    expect(await scratchLeft(inject('mongoUri'), dbName)).toEqual([]);
  });
});

describe('the database conformance check on FerretDB 1.24 over SQLite', () => {
  let ferret: FerretDb;
  beforeAll(async () => {
    ferret = await startFerretDb({ backend: 'sqlite', log: (line) => { console.log(line); } });
  }, FERRETDB_BUILD_TIMEOUT_MS + 60_000);
  afterAll(async () => { await ferret?.stop(); });

  it('refuses it for single-document atomicity, and tells what else it lacks', async () => {
    const dbName = freshDatabaseName('conformance');
    const report = await probeConformance({ uri: ferret.uri, dbName });
    show('FerretDB over SQLite', report);
    expect(report.server).toBe('FerretDB v1.24.2 (reports MongoDB 7.0.42)');
    expect(report.refused).toMatchObject({ guarantee: 'single-document atomicity', check: 'compare-and-swap findOneAndUpdate', outcome: 'refused' });
    expect(report.refused?.detail).toMatch(/^20 concurrent compare-and-swap updates of one document had (\d+) winners \(expected 1\)$/);
    const byCheck = new Map(report.checks.map((c) => [c.check, c]));
    expect(byCheck.get('findOneAndUpdate with a projection')).toMatchObject({
      outcome: 'refused',
      detail: expect.stringMatching(/^findOneAndUpdate with a projection: the server answered NotImplemented \(238\): /) as unknown,
    });
    expect(byCheck.get('$push with $slice')).toMatchObject({ outcome: 'refused', detail: expect.stringContaining('left [1,2,3] (expected [2,3])') as unknown });
    // It stops an unordered bulk write of replacements at the refused one, and names another as refused.
    expect(byCheck.get('bulkWrite of fenced replacements, ordered: false')).toMatchObject({
      outcome: 'refused', detail: expect.stringContaining('the server named [0] as refused and left r0@2, r1@1, r2@1') as unknown,
    });
    expect(byCheck.get('TTL index idempotency_expiry'))
      .toMatchObject({ outcome: 'degraded', detail: expect.stringContaining('expireAfterSeconds') as unknown });
    expect(await scratchLeft(ferret.uri, dbName)).toEqual([]);
  });
});
