import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FERRETDB_BUILD_TIMEOUT_MS, startFerretDb, type FerretDb } from '../../tools/ferretdb/ferretdb.js';
import { freshDatabaseName } from '../support/database.js';
import { inheritedEnv, runToExit, startServerProcess, type Exited } from '../support/fleet.js';

/**
 * The database conformance check as operators meet it (issue 24, docs/operations.md "Database
 * compatibility"): the compiled server runs it before it listens and refuses a database that would
 * break a guarantee with one line and exit code 4; `node dist/src/checkDatabase.js` (npm run
 * check-database) does the same for any URI, and prints a table of the checks for a database it
 * accepts. Real processes, real servers: FerretDB 1.24 over SQLite (not atomic) and the suite's
 * database. Measured times are printed, never asserted.
 */

const checkEntry = join(import.meta.dirname, '..', '..', 'dist', 'src', 'checkDatabase.js');
const secret = 'a-database-check-secret-of-enough-length';
const refusalLine = /^database refused: single-document atomicity: 20 concurrent compare-and-swap updates of one document had \d+ winners \(expected 1\)\n$/;

async function timed (label: string, run: () => Promise<Exited>): Promise<Exited> {
  const started = Date.now();
  const result = await run();
  console.log(`${label}: exit ${String(result.code)} after ${Date.now() - started} ms (process start included)\n${result.stderr}${result.stdout}`);
  return result;
}

async function collectionsOf (uri: string, dbName: string): Promise<string[]> {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 }).connect();
  try {
    return (await client.db(dbName).listCollections({}, { nameOnly: true }).toArray()).map((info) => info.name);
  } finally {
    await client.close();
  }
}

describe('the database check refuses FerretDB 1.24 over SQLite (single-document updates are not atomic)', () => {
  let ferret: FerretDb;
  beforeAll(async () => {
    ferret = await startFerretDb({ backend: 'sqlite', log: (line) => { console.log(line); } });
  }, FERRETDB_BUILD_TIMEOUT_MS + 60_000);
  afterAll(async () => { await ferret?.stop(); });

  it('the server does not start on it: one line on stderr, exit code 4, nothing written', async () => {
    const dbName = freshDatabaseName('refused');
    const result = await timed('node dist/src/server.js on FerretDB', async () => await runToExit({
      ...inheritedEnv(), MONGODB_URI: ferret.uri, MONGODB_DB: dbName, AUTH_JWT_SECRET: secret, PORT: '0', LOG_LEVEL: 'info',
    }));
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(refusalLine);
    expect(result.stdout).toBe('');
    // The scratch collections are gone and the service wrote nothing: not even its indexes.
    expect(await collectionsOf(ferret.uri, dbName)).toEqual([]);
  }, 60_000);

  it('check-database refuses it: one line on stderr, exit code 4', async () => {
    const result = await timed('check-database --uri <FerretDB>', async () =>
      await runToExit({ ...inheritedEnv() }, checkEntry, 60_000, ['--uri', ferret.uri, '--db', freshDatabaseName('check')]));
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(refusalLine);
    expect(result.stdout).toBe('');
  }, 60_000);
});

describe('the database check accepts the suite\'s database (the local development database in memory)', () => {
  it('check-database prints a table of the passed checks and exits 0', async () => {
    const result = await timed('check-database --uri <suite database>', async () =>
      await runToExit({ ...inheritedEnv(), MONGODB_URI: inject('mongoUri'), MONGODB_DB: freshDatabaseName('check') }, checkEntry));
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^database check: reports MongoDB \S+, \d+ ms$/);
    expect(lines[1]).toMatch(/^guarantee +check +result +what the server did$/);
    expect(lines.filter((line) => /^single-document atomicity +\S.* +passed +/.test(line))).toHaveLength(3);
    expect(lines.slice(2, -1).every((line) => / {2}passed {2}/.test(line))).toBe(true);
    expect(lines.at(-1)).toMatch(/^database accepted/);
  }, 60_000);

  it('the server checks it before listening and says so', async () => {
    const started = Date.now();
    const server = await startServerProcess({
      ...inheritedEnv(), MONGODB_URI: inject('mongoUri'), MONGODB_DB: freshDatabaseName('accepted'), AUTH_JWT_SECRET: secret, PORT: '0', LOG_LEVEL: 'info',
    });
    try {
      const passed = server.logs.find((line) => line.includes('database check passed in'));
      console.log(`node dist/src/server.js on the suite database: listening after ${Date.now() - started} ms; ${passed ?? '(no check line)'}`);
      expect(passed).toMatch(/"msg":"database check passed in \d+ ms \(reports MongoDB \S+\)"/);
      const listening = server.logs.findIndex((line) => line.includes('listening on'));
      expect(server.logs.findIndex((line) => line.includes('database check passed in'))).toBeLessThan(listening);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
  }, 60_000);

  it('check-database: a usage error is one line and exit code 2; no database to check likewise', async () => {
    const bad = await runToExit({ ...inheritedEnv() }, checkEntry, 20_000, ['--uri', 'postgres://nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^check-database: configuration error: --uri: /);
    const none = await runToExit({ ...inheritedEnv() }, checkEntry, 20_000);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('check-database: no database to check: give --uri, or set MONGODB_URI (or MONGODB_URI_FILE)\n');
  }, 60_000);
});
