import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Database } from '../../../src/store/mongo.js';
import { IdempotencyStore } from '../../../src/store/idempotencyStore.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * docs/api.md: "A key used again after its record expired is a new request". Records expire after
 * 48 h; MongoDB's TTL monitor removes them within a minute or so, the local development database only
 * at the next sweep (every 10 minutes by default). Between expiry and removal, a claim of the key
 * used to replay the old outcome (found by an acceptance run); an expired record now counts as absent.
 */
describe('an idempotency key whose record expired but was not removed yet', () => {
  const dbName = freshDatabaseName('idem');
  let database: Database;
  beforeAll(async () => { database = new Database({ uri: inject('mongoUri'), dbName, timeoutMs: 5_000 }); });
  afterAll(async () => {
    await database.db.dropDatabase();
    await database.close();
  });

  it('is a new request: claimed afresh, not a replay of the old outcome', async () => {
    const store = new IdempotencyStore(database);
    const HOUR = 3_600_000;
    const input = (now: number) => ({
      recordId: 'svc\u0000key-1',
      serviceId: 'svc',
      key: 'key-1',
      operation: 'promote',
      fingerprint: 'fp',
      owner: 'p1',
      now,
      leaseMs: 15_000,
      retentionMs: 48 * HOUR,
    });
    const then = Date.now() - 49 * HOUR;
    expect((await store.claim(input(then))).kind).toBe('claimed');
    await store.complete('svc\u0000key-1', { kind: 'success', body: { old: true } }, then + 1_000);
    // Within its lifetime: the stored outcome comes back.
    expect(await store.claim(input(then + 2_000))).toEqual({ kind: 'replay', outcome: { kind: 'success', body: { old: true } } });
    // 49 h later, the record still there: a new request.
    const now = Date.now();
    expect(await store.claim(input(now))).toEqual({ kind: 'claimed', createdAt: now });
  });
});
