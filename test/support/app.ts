import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { MongoClient, type Db } from 'mongodb';
import { inject } from 'vitest';
import { buildApp, loggerOptions, type BuildAppOptions } from '../../src/app.js';
import { loadConfig, type AppConfig } from '../../src/config.js';
import { Database } from '../../src/store/mongo.js';
import { freshDatabaseName } from './database.js';
import type { Caller } from './fixtures.js';
import { tokenMinter, type TokenMinter } from './tokens.js';

export interface TestApp {
  app: FastifyInstance;
  config: AppConfig;
  /** The app's database, through the test's own client (to look at what was stored). */
  db: Db;
  /** The same database as the store's connection module (to drive a store directly). */
  database: Database;
  /** A valid token for the role (cluster tokens for cluster `c1` unless given). */
  token: TokenMinter;
  close(): Promise<void>;
}

export interface TestAppOptions extends Omit<BuildAppOptions, 'config'> {
  /**
   * Run the production logger — `loggerOptions(config)`: pino at the config's LOG_LEVEL with the
   * app's redaction — and write its lines to this stream (see `logCapture`). Wins over `logger`.
   */
  logStream?: Writable;
}

/** Log lines as the app writes them (one JSON object per line), for `TestAppOptions.logStream`. */
export interface LogCapture {
  stream: Writable;
  lines: string[];
  /** The lines parsed. */
  entries(): Array<Record<string, unknown>>;
}

export function logCapture (): LogCapture {
  const lines: string[] = [];
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, lines, entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

/**
 * The real app on a fresh database of the test database server (one per call,
 * so test files run in parallel). Logging is off unless TEST_LOG is set or `logStream` is given.
 */
export async function buildTestApp (overrides: Partial<AppConfig> = {}, appOptions: TestAppOptions = {}): Promise<TestApp> {
  const secret = randomBytes(32).toString('base64url');
  const config: AppConfig = {
    ...loadConfig({}),
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: freshDatabaseName('app'),
    AUTH_JWT_SECRET: secret,
    ...overrides,
  };
  const { logStream, ...buildOptions } = appOptions;
  const testLogger = process.env['TEST_LOG'] ? { level: 'debug' } : false;
  const logger = logStream ? { ...productionLogger(config), stream: logStream } : (buildOptions.logger ?? testLogger);
  // The suite's database is checked once, by test/integration/store/conformance.test.ts, not by every app.
  const app = await buildApp({ config, checkDatabase: false, ...buildOptions, logger });
  await app.ready();
  const client = new MongoClient(config.MONGODB_URI ?? '', { serverSelectionTimeoutMS: 5_000 });
  const db = client.db(config.MONGODB_DB);
  const database = new Database({ uri: config.MONGODB_URI ?? '', dbName: config.MONGODB_DB, timeoutMs: 5_000 });
  return {
    app,
    config,
    db,
    database,
    token: tokenMinter(secret, 'test'),
    close: async () => {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
      await database.close();
      await app.close();
    },
  };
}

/** `loggerOptions(config)` as an object (it always is one; the type also allows `true`). */
export function productionLogger (config: AppConfig): Exclude<ReturnType<typeof loggerOptions>, boolean> {
  const options = loggerOptions(config);
  if (typeof options !== 'object') throw new Error('loggerOptions(config) is not an options object');
  return options;
}

/** A TypedRequest envelope as the real client sends it. */
export function typedRequest (method: string, request: Record<string, unknown>, correlationId = randomBytes(8).toString('hex')) {
  return { method, request, response: null, correlation: { id: correlationId, phase: 'request' as const } };
}

/** A TypedRequest `identity` as the Cloudly UI sends it: only `jwt` counts, the rest is ignored. */
export const identity = (jwt: string) => ({ name: 'x', userId: 'x', expiresAt: 0, jwt });

/** POST /typedrequest with `typedRequest(method, request)` (the request carries its own `identity`). */
export function callTypedRequest (app: Caller, method: string, request: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest(method, request) });
}

/** A minimal valid `TServiceWritableData`. */
/**
 * A valid TServiceWritableData. Its stability window is 0: most tests report a replica once and
 * expect it counted at once; the tests of the window (and of the default) set `rolloutPolicy`.
 */
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
    rolloutPolicy: { stabilityWindowSeconds: 0 },
    ...overrides,
  };
}
