// A read of the local development database returns a document as one write left it, never half of an update
// (tools/mongo-dev NOTES.md "Reads are snapshots"). The memory backend of mongo-java-server updates a stored
// document in place (its fields removed and put one by one, under the collection's lock) and answered queries
// and findAndModify with that same stored object, encoded after the lock was released: a read concurrent with
// an update could be encoded half-updated, or fail to encode at all (ConcurrentModificationException).
import { MongoClient, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalMongo, type LocalMongo } from '../../../tools/dev-database/localMongo.js';

const FIELDS = 400;
const ROUNDS = 1_500;

describe('reads of the local development database (memory) are snapshots of one write', () => {
  let server: LocalMongo;
  let writer: MongoClient;
  let reader: MongoClient;

  beforeAll(async () => {
    server = await startLocalMongo({ backend: 'memory' });
    writer = await new MongoClient(server.uri, { maxPoolSize: 4 }).connect();
    reader = await new MongoClient(server.uri, { maxPoolSize: 8, socketTimeoutMS: 10_000 }).connect();
  });
  afterAll(async () => {
    await writer?.close();
    await reader?.close();
    await server?.stop();
  });

  /** Every field f0…f399 holds the same number: an update sets all of them to the next one. */
  const fieldsAt = (n: number): Document => Object.fromEntries(Array.from({ length: FIELDS }, (_, i) => [`f${i}`, n]));
  const torn = (doc: Document | null): boolean => doc !== null && new Set(Array.from({ length: FIELDS }, (_, i) => doc[`f${i}`])).size !== 1;

  it('a find and a findOneAndUpdate concurrent with updates of the same document see it whole', async () => {
    const updates = writer.db('snapshots').collection('docs');
    const reads = reader.db('snapshots').collection('docs');
    await updates.insertOne({ _id: 'one' as never, ...fieldsAt(0) });
    const state = { stop: false };
    const writing = (async () => {
      for (let n = 1; n <= ROUNDS; n++) await updates.updateOne({ _id: 'one' as never }, { $set: fieldsAt(n) });
      state.stop = true;
    })();
    const outcomes = { reads: 0, torn: 0, errors: [] as string[] };
    const readLoop = async (k: number): Promise<void> => {
      while (!state.stop) {
        try {
          const doc = k % 2 === 0
            ? await reads.findOne({ _id: 'one' as never })
            : await reads.findOneAndUpdate({ _id: 'one' as never }, { $inc: { reads: 1 } }, { returnDocument: 'after' });
          outcomes.reads++;
          if (torn(doc)) outcomes.torn++;
        } catch (err) {
          outcomes.errors.push(String(err).slice(0, 200));
          if (outcomes.errors.length > 5) return;
        }
      }
    };
    await Promise.all([writing, ...Array.from({ length: 6 }, async (_, k) => await readLoop(k))]);
    console.log(`[snapshots] ${ROUNDS} updates of ${FIELDS} fields; ${outcomes.reads} reads, ${outcomes.torn} torn, ${outcomes.errors.length} errors`);
    expect(outcomes.errors).toEqual([]);
    expect(outcomes.torn).toBe(0);
    expect(outcomes.reads).toBeGreaterThan(100);
    expect(torn(await reads.findOne({ _id: 'one' as never }))).toBe(false);
  }, 120_000);
});
