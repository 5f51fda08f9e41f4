import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalMongo, type LocalMongo } from '../../../tools/dev-database/localMongo.js';
import { freshDatabaseName } from '../../support/database.js';
import { inheritedEnv, request, startServerProcess, type StartedServer } from '../../support/fleet.js';
import { eventually } from '../../support/wait.js';

/**
 * docs/operations.md, "Start-up and exit codes": "A database that is unreachable at start-up with
 * MONGODB_URI set is not a start-up failure: the process starts, /readyz answers 503 until the
 * database answers, and the indexes are created then." docs/operations.md: the process "recovers by itself
 * when the database returns".
 *
 * Observed: the start-up `createIndexes` fails server selection, the driver closes its topology,
 * and every later operation of the process fails with `MongoTopologyClosedError: Topology is closed`
 * — /readyz stays 503 and every request answers database-unavailable for good, although the
 * database has been up for a long time. The watchdog in src/store/mongo.ts only reconnects after
 * a *hung* heartbeat, not after a failed first connect.
 */

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => { resolve(typeof address === 'object' && address ? address.port : 0); });
    });
  });
}

describe('a server started before its database (MONGODB_URI set, database not up yet)', () => {
  let mongo: LocalMongo | undefined;
  let server: StartedServer | undefined;

  afterAll(async () => {
    await server?.stop('SIGKILL');
    await mongo?.stop();
  });

  it('becomes ready once the database answers, and serves requests', async () => {
    const port = await freePort();
    server = await startServerProcess({
      ...inheritedEnv(),
      MONGODB_URI: `mongodb://127.0.0.1:${port}/`,
      MONGODB_DB: freshDatabaseName('late'),
      MONGODB_TIMEOUT_MS: '500',
      AUTH_JWT_SECRET: 'a-late-database-secret-of-enough-length',
      PORT: '0',
      LOG_LEVEL: 'info',
    });
    // Up, but not ready: the database is not there.
    expect((await request(server.url, { path: '/healthz' })).status).toBe(200);
    expect((await request(server.url, { path: '/readyz' })).status).toBe(503);
    // Wait until the start-up index creation has failed (it is logged), then bring the database up.
    await eventually('the start-up index creation failed', async () => {
      expect(server!.logs.some((line) => line.includes('the database did not answer at start-up'))).toBe(true);
    });
    mongo = await startLocalMongo({ backend: 'memory', port });

    // The driver reconnects within a few heartbeats (2 s apart); allow a generous 60 s.
    await eventually('the server becomes ready after the database came up', async () => {
      const ready = await request(server!.url, { path: '/readyz' });
      expect({ status: ready.status, logTail: ready.status === 200 ? [] : server!.logs.slice(-2) }).toEqual({ status: 200, logTail: [] });
    }, 240, 250);
  }, 120_000);
});
