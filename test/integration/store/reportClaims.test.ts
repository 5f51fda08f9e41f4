import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Database } from '../../../src/store/mongo.js';
import { ReportStore } from '../../../src/store/reportStore.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * Node and session claims of a rollout, raced by two reporters through two separate driver
 * clients (as two server processes would). The defect this pins: both reporters claimed the same
 * nodes, each won one, both gave theirs back and then both answered "claimed" — holding nothing,
 * so both reports were applied for the same nodes.
 */
const ROUNDS = 150;

describe('report claims under contention', () => {
  const dbName = freshDatabaseName('claims');
  let a: Database;
  let b: Database;
  beforeAll(async () => {
    a = new Database({ uri: inject('mongoUri'), dbName, timeoutMs: 5_000 });
    b = new Database({ uri: inject('mongoUri'), dbName, timeoutMs: 5_000 });
  });
  afterAll(async () => {
    await a.db.dropDatabase();
    await Promise.all([a.close(), b.close()]);
  });

  it(`two reporters claiming the same nodes at once: exactly one wins, and it holds every claim (${ROUNDS} rounds)`, async () => {
    const storeA = new ReportStore(a);
    const storeB = new ReportStore(b);
    const bad: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const rolloutId = `ro_${round}`;
      const nodes = ['n1', 'n2', 'n3', 'n4'].map((name) => ({ kind: 'node' as const, name }));
      // Opposite orders, so that each would win a different first claim if the store took them as given.
      const [p, q] = await Promise.all([
        storeA.claim(rolloutId, 'c1/P', nodes, Date.now()),
        storeB.claim(rolloutId, 'c1/Q', [...nodes].reverse(), Date.now()),
      ]);
      const holders = await a.db.collection<{ _id: string, reporterId: string }>('reportClaims').find({ rolloutId }).toArray();
      const winners = [p, q].filter((refusals) => refusals.length === 0).length;
      const winner = p.length === 0 ? 'c1/P' : 'c1/Q';
      const holdsAll = holders.length === nodes.length && holders.every((h) => h.reporterId === winner);
      if (winners !== 1 || !holdsAll) bad.push(`round ${round}: ${winners} winners; claims ${JSON.stringify(holders.map((h) => h.reporterId))}`);
    }
    expect(bad).toEqual([]);
  });
});
