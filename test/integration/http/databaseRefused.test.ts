import { createServer } from 'node:net';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { FERRETDB_BUILD_TIMEOUT_MS, startFerretDb, type FerretDb } from '../../../tools/ferretdb/ferretdb.js';
import { buildTestApp, logCapture, serviceData, type TestApp } from '../../support/app.js';

/**
 * Fail closed after a late start (issue 24): the server started while its database was away (not a
 * start-up failure, docs/operations.md), and the server that then answers would break a guarantee
 * (FerretDB 1.24 over SQLite). Nothing reaches it: the requests, /readyz and the background sweeps
 * answer `database-refused` naming the guarantee, and nothing is written.
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

describe('a database that comes up after the start and would break a guarantee', () => {
  let t: TestApp | undefined;
  let ferret: FerretDb | undefined;
  afterAll(async () => {
    await t?.close();
    await ferret?.stop();
  });

  it('gets no write: requests and /readyz answer database-refused', async () => {
    const port = await freePort();
    const log = logCapture();
    t = await buildTestApp({ MONGODB_URI: `mongodb://127.0.0.1:${port}/`, MONGODB_TIMEOUT_MS: 500, LOG_LEVEL: 'warn' },
      { checkDatabase: true, logStream: log.stream });
    expect(log.entries().map((entry) => entry['msg'])).toContain(
      'the database did not answer at start-up: it is checked, and its indexes created, once it does; /readyz fails until then');
    ferret = await startFerretDb({ backend: 'sqlite', port, log: (line) => { console.log(line); } });

    const admin = await t.token('admin');
    const created = await t.app.inject({
      method: 'POST', url: '/v1/services', headers: { authorization: `Bearer ${admin}` }, payload: serviceData({ name: 'never-written' }),
    });
    expect(created.statusCode).toBe(503);
    expect(created.json()).toMatchObject({
      code: 'database-refused',
      refused: 'single-document atomicity',
      reason: expect.stringMatching(/^20 concurrent compare-and-swap updates of one document had \d+ winners \(expected 1\)$/) as unknown,
    });
    const ready = await t.app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ code: 'database-refused', refused: 'single-document atomicity' });

    const client = await new MongoClient(ferret.uri, { serverSelectionTimeoutMS: 5_000 }).connect();
    try {
      // The check's scratch collections are dropped; the service created nothing (no services, no indexes).
      expect(await client.db(t.config.MONGODB_DB).listCollections({}, { nameOnly: true }).toArray()).toEqual([]);
    } finally {
      await client.close();
    }
  }, FERRETDB_BUILD_TIMEOUT_MS + 60_000);
});
