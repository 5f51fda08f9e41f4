import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ReportRecord } from '../../../src/domain/reports.js';
import { ClusterStore } from '../../../src/store/clusterStore.js';
import { Database } from '../../../src/store/mongo.js';
import { ReportStore } from '../../../src/store/reportStore.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * Found by an independent acceptance run (each test failed on the code before its fix): the group commit of src/store/coalesce.ts promises "each write
 * keeps its own outcome" and that a call is answered as a round trip of its own would have
 * answered it. A call that is fine on its own must not fail because another request (another
 * reporter, another cluster, another service) happened to ask in the same turn of the event loop.
 */
const small = (id: string): ReportRecord => ({
  id,
  serviceId: 'svc',
  rolloutId: 'ro',
  reporterId: id,
  clusterId: 'c',
  version: 1,
  position: { sessionId: 's', sequence: 1, reportedAt: 1, receivedAt: 1 },
  retiredSessions: [],
  nodeNames: ['n1'],
  replicas: [],
  deployments: [{ id: 'task-1', serviceId: 'svc', nodeName: 'n1', status: 'running', deploymentLog: [] } as never],
});

/** A record over the database's 16 MiB document limit (many replica verdicts, as many node-scoped reports accumulate). */
function oversized (id: string): ReportRecord {
  const replicas = Array.from({ length: 70_000 }, (_, i) => ({
    nodeName: `node-${i % 64}`,
    deploymentId: `d-${i}`,
    deploymentStatus: 'running',
    health: 'healthy',
    verification: 'missing',
    mismatchReason: 'runtime-attestation-missing',
    counted: false,
    runningSince: 1,
    runningStable: true,
    stable: false,
  }));
  const deployments = replicas.map((r) => ({ id: r.deploymentId, serviceId: 'svc', nodeName: r.nodeName, status: 'running', deploymentLog: [] }));
  return { ...small(id), replicas: replicas as never, deployments: deployments as never };
}

describe('coalesced store calls: one caller\'s failure stays its own', () => {
  const dbName = freshDatabaseName('acc2batch');
  let database: Database;
  beforeAll(async () => {
    database = new Database({ uri: inject('mongoUri'), dbName, timeoutMs: 10_000 });
    await database.ensureIndexes();
  });
  afterAll(async () => {
    await database.db.dropDatabase();
    await database.close();
  });

  it('a record write that shares its turn with an oversized record of another reporter is still written', async () => {
    const store = new ReportStore(database);
    const [big, mine] = await Promise.allSettled([store.writeRecord(oversized('rollout:ro:big'), 0), store.writeRecord(small('rollout:ro:mine'), 0)]);
    // The oversized one may fail (it is over the document limit); the small one is an ordinary first write.
    expect(big.status).toBe('rejected');
    expect(mine).toEqual({ status: 'fulfilled', value: true });
    expect(await database.db.collection('reports').countDocuments({ _id: 'rollout:ro:mine' as never })).toBe(1);
  });

  it('a node-owner lookup that shares its turn with other reporters\' large (valid-size) lookups still answers', async () => {
    const clusters = new ClusterStore(database);
    await clusters.nodes.insertOne({ _id: 'small-node', clusterId: 'c-small', revision: 1, createdAt: 1 });
    // Each lookup is what one valid report may name: 4,096 scope nodes plus its deployments' nodes
    // (up to 8,192), names of up to 256 characters — about 3 MB each, well within a round trip of its own.
    const large = (k: number): string[] =>
      Array.from({ length: 12_288 }, (_, i) => `${String(k).padStart(3, '0')}-${String(i).padStart(6, '0')}-`.padEnd(256, 'x'));
    const alone = await clusters.findNodeOwners(large(99));
    expect(alone.size).toBe(0);
    const others = Array.from({ length: 8 }, (_, k) => clusters.findNodeOwners(large(k)));
    const results = await Promise.allSettled([...others, clusters.findNodeOwners(['small-node'])]);
    const mine = results[results.length - 1];
    expect(mine?.status).toBe('fulfilled');
    expect(mine?.status === 'fulfilled' ? mine.value.get('small-node')?.clusterId : undefined).toBe('c-small');
    expect(results.map((r) => r.status)).toEqual(results.map(() => 'fulfilled'));
  }, 120_000);
});
