import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalMongo, type LocalMongo } from '../../../tools/dev-database/localMongo.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { eventually } from '../../support/wait.js';

describe('readiness follows the database', () => {
  let mongo: LocalMongo;
  let t: TestApp;

  beforeAll(async () => {
    mongo = await startLocalMongo({ backend: 'memory', port: 0 });
    t = await buildTestApp({ MONGODB_URI: mongo.uri, MONGODB_TIMEOUT_MS: 500 });
  });
  afterAll(async () => {
    await t.close();
    await mongo.stop();
  });

  it('healthz is always 200; readyz 200 with the database, 503 without, 200 again when it returns', async () => {
    expect((await t.app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject('/readyz')).statusCode).toBe(200);
    const admin = await t.token('admin');

    await mongo.stop();
    const down = await t.app.inject('/readyz');
    expect(down.statusCode).toBe(503);
    expect(down.json().code).toBe('database-unavailable');
    expect((await t.app.inject('/healthz')).statusCode).toBe(200);

    // A request that needs the database fails fast with a coded 503 and Retry-After.
    const read = await t.app.inject({ method: 'GET', url: '/v1/services/svc_x', headers: { authorization: `Bearer ${admin}` } });
    expect(read.statusCode).toBe(503);
    expect(read.json().code).toBe('database-unavailable');
    expect(read.headers['retry-after']).toBe('2');

    mongo = await startLocalMongo({ backend: 'memory', port: mongo.port });
    await eventually('/readyz 200 again', async () => (await t.app.inject('/readyz')).statusCode === 200, 60, 250);
    const after = await t.app.inject({ method: 'GET', url: '/v1/services/svc_x', headers: { authorization: `Bearer ${admin}` } });
    expect(after.statusCode).toBe(404);
  });
});
