import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { MongoClient, type Db } from 'mongodb';
import { inject } from 'vitest';
import { buildApp, type BuildAppOptions } from '../../src/app.js';
import { loadConfig, type AppConfig } from '../../src/config.js';
import { Database } from '../../src/store/mongo.js';
import type { Role } from '../../src/domain/principal.js';
import { mintToken, type MintOptions } from '../../src/http/auth.js';
import { freshDatabaseName } from './database.js';

export interface TestApp {
  app: FastifyInstance;
  config: AppConfig;
  /** The app's database, through the test's own client (to look at what was stored). */
  db: Db;
  /** The same database as the store's connection module (to drive a store directly). */
  database: Database;
  /** A valid token for the role (cluster tokens for cluster `c1` unless given). */
  token(role: Role, extra?: Partial<MintOptions>): Promise<string>;
  close(): Promise<void>;
}

/**
 * The real app on a fresh database of the test database server (one per call,
 * so test files run in parallel). Logging is off unless TEST_LOG is set.
 */
export async function buildTestApp (overrides: Partial<AppConfig> = {}, appOptions: Omit<BuildAppOptions, 'config'> = {}): Promise<TestApp> {
  const secret = randomBytes(32).toString('base64url');
  const config: AppConfig = {
    ...loadConfig({}),
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: freshDatabaseName('app'),
    AUTH_JWT_SECRET: secret,
    ...overrides,
  };
  const app = await buildApp({ config, logger: process.env['TEST_LOG'] ? { level: 'debug' } : false, ...appOptions });
  await app.ready();
  const client = new MongoClient(config.MONGODB_URI ?? '', { serverSelectionTimeoutMS: 5_000 });
  const db = client.db(config.MONGODB_DB);
  const database = new Database({ uri: config.MONGODB_URI ?? '', dbName: config.MONGODB_DB, timeoutMs: 5_000 });
  return {
    app,
    config,
    db,
    database,
    token: (role, extra = {}) => mintToken({ kind: 'secret', secret }, {
      subject: `test-${role}`,
      role,
      ...(role === 'cluster' ? { clusterId: 'c1' } : {}),
      ...extra,
    }),
    close: async () => {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
      await database.close();
      await app.close();
    },
  };
}

/** A TypedRequest envelope as the real client sends it. */
export function typedRequest (method: string, request: Record<string, unknown>, correlationId = randomBytes(8).toString('hex')) {
  return { method, request, response: null, correlation: { id: correlationId, phase: 'request' as const } };
}

/** A minimal valid `TServiceWritableData`. */
export function serviceData (overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `svc-${randomBytes(4).toString('hex')}`,
    description: 'test service',
    imageId: 'img-1',
    imageVersion: '1.0.0',
    environment: {},
    scaleFactor: 1,
    balancingStrategy: 'round-robin',
    ports: { web: 8080 },
    domains: [],
    deploymentIds: [],
    ...overrides,
  };
}
