import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { MongoClient, MongoServerError, type Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dockerAnswers } from '../../support/databaseResolution.js';
import { ensureLocalMongoBuilt, LocalMongoRefusal, startLocalMongo, type LocalMongo } from '../../../tools/dev-database/localMongo.js';
import { openTestDatabase, type TestDatabase } from '../../support/database.js';

interface Counter { _id: string, gen: number }
interface Named { _id: number, name: string }

/** The service's compare-and-swap: exactly one of many writers holding the same generation wins. */
async function concurrentCasWinners (counters: Collection<Counter>, writers: number): Promise<number> {
  await counters.insertOne({ _id: 'svc', gen: 0 });
  const results = await Promise.all(Array.from({ length: writers }, async () =>
    await counters.findOneAndUpdate({ _id: 'svc', gen: 0 }, { $inc: { gen: 1 } }, { returnDocument: 'after' })));
  expect(await counters.findOne({ _id: 'svc' })).toEqual({ _id: 'svc', gen: 1 });
  return results.filter((result) => result !== null).length;
}

async function withClient<T> (uri: string, use: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 }).connect();
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

describe('the database provided by globalSetup', () => {
  let database: TestDatabase;
  beforeAll(async () => { database = await openTestDatabase('localMongo'); });
  afterAll(async () => { await database.close(); });

  it('writes and reads a document', async () => {
    const items = database.db.collection<{ _id: string, n: number }>('items');
    await items.insertOne({ _id: 'a', n: 1 });
    expect(await items.findOne({ _id: 'a' })).toEqual({ _id: 'a', n: 1 });
  });

  it('rejects a duplicate key of a unique index with E11000', async () => {
    const keys = database.db.collection('keys');
    await keys.createIndex({ serviceId: 1, key: 1 }, { unique: true });
    await keys.insertOne({ serviceId: 's', key: 'k' });
    const duplicate = await keys.insertOne({ serviceId: 's', key: 'k' }).catch((err: unknown) => err);
    expect(duplicate).toBeInstanceOf(MongoServerError);
    expect((duplicate as MongoServerError).code).toBe(11000);
    expect((duplicate as MongoServerError).message).toMatch(/E11000/);
  });

  it('findOneAndUpdate returns null when the filter matches nothing', async () => {
    const services = database.db.collection<Counter>('services');
    await services.insertOne({ _id: 'x', gen: 3 });
    expect(await services.findOneAndUpdate({ _id: 'x', gen: 2 }, { $inc: { gen: 1 } })).toBeNull();
    expect(await services.findOneAndUpdate({ _id: 'x', gen: 3 }, { $inc: { gen: 1 } }, { returnDocument: 'after' }))
      .toEqual({ _id: 'x', gen: 4 });
  });

  it('lets exactly one of 50 concurrent compare-and-swap writers win', async () => {
    expect(await concurrentCasWinners(database.db.collection<Counter>('cas'), 50)).toBe(1);
  });
});

describe('the local development database', () => {
  let tempDir: string;
  beforeAll(async () => {
    // When MONGODB_URI is set, globalSetup did not build it; the first build may take a minute.
    await ensureLocalMongoBuilt();
    tempDir = await mkdtemp(path.join(os.tmpdir(), 'mongo-dev-test-'));
  });
  afterAll(async () => { await rm(tempDir, { recursive: true, force: true }); });

  it('keeps h2 data across a restart on the same file', async () => {
    const dataFile = path.join(tempDir, 'nested', 'dir', 'data.mv');
    const first = await startLocalMongo({ backend: 'h2', dataFile });
    await withClient(first.uri, async (client) => {
      const docs = client.db('persist').collection<Named>('docs');
      await docs.createIndex({ name: 1 }, { unique: true });
      await docs.insertOne({ _id: 1, name: 'kept' });
    });
    await first.stop();

    const second = await startLocalMongo({ backend: 'h2', dataFile });
    try {
      await withClient(second.uri, async (client) => {
        const docs = client.db('persist').collection<Named>('docs');
        expect(await docs.findOne({ _id: 1 })).toEqual({ _id: 1, name: 'kept' });
        // The unique index came back too.
        await expect(docs.insertOne({ _id: 2, name: 'kept' })).rejects.toThrow(/E11000/);
      });
    } finally {
      await second.stop();
    }
  });

  it('lets exactly one of 50 concurrent compare-and-swap writers win on h2', async () => {
    const server = await startLocalMongo({ backend: 'h2', dataFile: path.join(tempDir, 'cas.mv') });
    try {
      const winners = await withClient(server.uri, async (client) =>
        await concurrentCasWinners(client.db('cas').collection<Counter>('counters'), 50));
      expect(winners).toBe(1);
    } finally {
      await server.stop();
    }
  });

  it('refuses a port that is taken: LocalMongoRefusal port-in-use, nothing on stderr', async () => {
    const server = await startLocalMongo({ backend: 'memory' });
    const lines: string[] = [];
    try {
      const refused = await startLocalMongo({ backend: 'memory', port: server.port, log: (line) => lines.push(line) }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(LocalMongoRefusal);
      expect(refused).toMatchObject({ reason: 'port-in-use', subject: `127.0.0.1:${server.port}` });
      expect((refused as Error).message).toBe(`cannot listen on 127.0.0.1:${server.port}: the port is in use`);
      expect(lines).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  it('refuses a second server on a locked h2 file (LocalMongoRefusal locked, no stack trace), and the first keeps its data', async () => {
    const dataFile = path.join(tempDir, 'locked.mv');
    const first = await startLocalMongo({ backend: 'h2', dataFile });
    const lines: string[] = [];
    try {
      await withClient(first.uri, async (client) => { await client.db('lock').collection('c').insertOne({ _id: 'kept' } as never); });
      const refused = await startLocalMongo({ backend: 'h2', dataFile, log: (line) => lines.push(line) }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(LocalMongoRefusal);
      expect(refused).toMatchObject({ reason: 'locked', subject: dataFile });
      expect(lines).toEqual([]);
      expect(await withClient(first.uri, async (client) => await client.db('lock').collection('c').countDocuments())).toBe(1);
    } finally {
      await first.stop();
    }
  });

  it('stop() is idempotent', async () => {
    const server: LocalMongo = await startLocalMongo({ backend: 'memory' });
    await server.stop();
    await server.stop();
  });

  it('exits by itself when its stdin closes (the parent went away)', async () => {
    const { classes, lib } = await ensureLocalMongoBuilt();
    const child = spawn('java', ['-cp', `${classes}${path.delimiter}${path.join(lib, '*')}`, 'mongodev.MongoDevServer', '--port', '0'],
      { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    for await (const line of createInterface({ input: child.stdout })) {
      if (line.startsWith('LISTENING ')) break;
    }
    child.stdin.end();
    const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
    expect(code).toBe(0);
  });
});

describe('dockerAnswers', () => {
  it('answers false within 3 s when DOCKER_HOST points to a missing socket', async () => {
    vi.stubEnv('DOCKER_HOST', `unix://${path.join(os.tmpdir(), 'no-such-dir', 'docker.sock')}`);
    try {
      const started = Date.now();
      expect(await dockerAnswers()).toBe(false);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
