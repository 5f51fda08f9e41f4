import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTestApp, logCapture, type LogCapture, type TestApp } from '../../support/app.js';
import { freshDatabaseName } from '../../support/database.js';

/**
 * Issue 24: when the database refused a command at start-up (here: the unique index of service names,
 * over stored data that already breaks it), the start-up log said "database not reachable" and
 * /readyz said the database did not answer. They now say what was refused, with the server's answer.
 */
describe('readiness when the database answers but refuses a command the service needs', () => {
  let t: TestApp;
  let client: MongoClient;
  let log: LogCapture;
  const dbName = freshDatabaseName('refusal');

  beforeAll(async () => {
    client = await new MongoClient(inject('mongoUri'), { serverSelectionTimeoutMS: 5_000 }).connect();
    // Two services with one name: the unique index services_name_unique cannot be built over them.
    await client.db(dbName).collection<{ _id: string, data: { name: string } }>('services')
      .insertMany([{ _id: 'svc_a', data: { name: 'twin' } }, { _id: 'svc_b', data: { name: 'twin' } }]);
    log = logCapture();
    t = await buildTestApp({ MONGODB_DB: dbName, LOG_LEVEL: 'warn' }, { logStream: log.stream });
  });
  afterAll(async () => {
    await t?.close();
    await client?.close();
  });

  it('logs and answers what the database refused, and becomes ready once the data is mended', async () => {
    const startup = log.entries().find((entry) => String(entry['msg']).includes('services_name_unique'));
    expect(startup?.['msg']).toMatch(/^the database refused: createIndexes services_name_unique on services: .*E11000/);
    expect(log.lines.join('\n')).not.toMatch(/not reachable|did not answer/);

    const refused = await t.app.inject('/readyz');
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({
      code: 'database-refused',
      refused: 'createIndexes services_name_unique on services',
      reason: expect.stringContaining('E11000') as unknown,
    });
    expect(refused.json().detail).toMatch(/^the database refused: createIndexes services_name_unique on services: .*E11000/);
    expect(refused.headers['retry-after']).toBeUndefined();

    await client.db(dbName).collection<{ _id: string }>('services').deleteOne({ _id: 'svc_b' });
    expect((await t.app.inject('/readyz')).statusCode).toBe(200);
    const names = (await client.db(dbName).collection('services').indexes()).map((index) => index.name);
    expect(names).toContain('services_name_unique');
  });
});
