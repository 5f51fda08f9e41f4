import { existsSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { FERRETDB_BUILD_TIMEOUT_MS, startFerretDb } from '../../../tools/ferretdb/ferretdb.js';

/**
 * The FerretDB tooling the conformance tests use: built once from the Go module proxy (minutes the
 * first time, cached), started on a free port with the SQLite backend, stopped with its data.
 */
describe('tools/ferretdb', () => {
  it('starts FerretDB 1.24 over SQLite on a free port, answers through the driver, and stops with its data', async () => {
    const server = await startFerretDb({ backend: 'sqlite', log: (line) => { console.log(line); } });
    const client = await new MongoClient(server.uri, { serverSelectionTimeoutMS: 5_000 }).connect();
    try {
      const info = await client.db('admin').command({ buildInfo: 1 });
      expect(info['ferretdbVersion']).toBe('v1.24.2');
      await client.db('t').collection('c').insertOne({ _id: 'x' as unknown as never });
      expect(await client.db('t').collection('c').countDocuments()).toBe(1);
    } finally {
      await client.close();
      await server.stop();
    }
    expect(existsSync(server.dataDir)).toBe(false);
  }, FERRETDB_BUILD_TIMEOUT_MS + 60_000);
});
