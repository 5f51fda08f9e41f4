import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ReportRecord } from '../../../src/domain/reports.js';
import { Database } from '../../../src/store/mongo.js';
import { ReportStore } from '../../../src/store/reportStore.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * The record writes of one turn of the event loop go to the database as one bulk write, each with
 * its own compare-and-swap (src/store/reportStore.ts `#writes`). What this pins: each write keeps
 * its own outcome inside the batch (a lost compare-and-swap refuses that write alone), and two
 * processes writing the same version of a record at once never both succeed.
 */
const record = (id: string, version: number, sequence: number): ReportRecord => ({
  id,
  serviceId: 'svc',
  rolloutId: 'ro',
  reporterId: id,
  clusterId: 'c',
  version,
  position: { sessionId: 's', sequence, reportedAt: sequence, receivedAt: sequence },
  retiredSessions: [],
  nodeNames: ['n1'],
  replicas: [],
  deployments: [{ id: `task-${sequence}`, serviceId: 'svc', nodeName: 'n1', status: 'running', deploymentLog: [] } as never],
});

describe('report record writes', () => {
  const dbName = freshDatabaseName('writes');
  let a: Database;
  let b: Database;
  beforeAll(async () => {
    a = new Database({ uri: inject('mongoUri'), dbName, timeoutMs: 5_000 });
    b = new Database({ uri: inject('mongoUri'), dbName, timeoutMs: 5_000 });
    await a.ensureIndexes();
  });
  afterAll(async () => {
    await a.db.dropDatabase();
    await Promise.all([a.close(), b.close()]);
  });

  it('writes made in one turn share a bulk write, and each keeps its own compare-and-swap', async () => {
    const store = new ReportStore(a);
    expect(await Promise.all([store.writeRecord(record('w1', 1, 1), 0), store.writeRecord(record('w2', 1, 1), 0)])).toEqual([true, true]);
    const outcomes = await Promise.all([
      store.writeRecord(record('w1', 2, 2), 1), // current: written
      store.writeRecord(record('w2', 2, 2), 5), // stale expectation: refused
      store.writeRecord(record('w3', 1, 1), 0), // new: written
      store.writeRecord(record('w1', 1, 9), 0), // exists already: refused
    ]);
    expect(outcomes).toEqual([true, false, true, false]);
    const stored = await store.findRecords(['w1', 'w2', 'w3']);
    expect(stored.map((r) => [r.id, r.version, r.deployments[0]?.id]).sort()).toEqual([['w1', 2, 'task-2'], ['w2', 1, 'task-1'], ['w3', 1, 'task-1']]);
    expect(await a.db.collection('reports').countDocuments({})).toBe(3);
  });

  it('two processes writing the same version of a record at once: exactly one wins, and the record is the winner\'s (100 rounds)', async () => {
    const p = new ReportStore(a);
    const q = new ReportStore(b);
    const bad: string[] = [];
    for (let round = 0; round < 100; round++) {
      const id = `race-${round}`;
      // Round 0 of each record races the first insert, then a replace of version 1.
      const first = await Promise.all([p.writeRecord(record(id, 1, 100), 0), q.writeRecord(record(id, 1, 200), 0)]);
      const second = await Promise.all([p.writeRecord(record(id, 2, 101), 1), q.writeRecord(record(id, 2, 201), 1)]);
      const [stored] = await p.findRecords([id]);
      const winner = second[0] ? 'task-101' : 'task-201';
      if (first.filter(Boolean).length !== 1 || second.filter(Boolean).length !== 1 || stored?.deployments[0]?.id !== winner || stored.version !== 2) {
        bad.push(`round ${round}: first ${String(first)}, second ${String(second)}, stored ${stored?.version}/${stored?.deployments[0]?.id}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
