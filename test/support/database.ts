import { randomBytes } from 'node:crypto';
import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import { inject } from 'vitest';

/**
 * A database name no other test file uses: `<prefix>_<random>`. MongoDB allows at most 63 bytes and
 * no `/\. "$`; the prefix is cleaned to match so callers can pass a file or suite name.
 */
export function freshDatabaseName (prefix = 't'): string {
  const cleanPrefix = prefix.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40) || 't';
  return `${cleanPrefix}_${randomBytes(8).toString('hex')}`;
}

export interface TestDatabase {
  client: MongoClient
  db: Db
  /** Drops the database and closes the client. */
  close(): Promise<void>
}

/** Connects to the URI provided by test/globalSetup.ts and opens a fresh database for one test file. */
export async function openTestDatabase (prefix = 't', options: MongoClientOptions = {}): Promise<TestDatabase> {
  const client = await new MongoClient(inject('mongoUri'), { serverSelectionTimeoutMS: 5_000, ...options }).connect();
  const db = client.db(freshDatabaseName(prefix));
  return {
    client,
    db,
    close: async () => {
      try {
        await db.dropDatabase();
      } finally {
        await client.close();
      }
    }
  };
}
