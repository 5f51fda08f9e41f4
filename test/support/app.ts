import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import { buildApp, type BuildAppOptions, type ResolvedConfig } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Role } from '../../src/domain/principal.js';
import { mintToken, type MintOptions } from '../../src/http/auth.js';
import { freshDatabaseName } from './database.js';

export interface TestApp {
  app: FastifyInstance;
  config: ResolvedConfig;
  /** A valid token for the role (cluster tokens for cluster `c1` unless given). */
  token(role: Role, extra?: Partial<MintOptions>): Promise<string>;
  close(): Promise<void>;
}

/**
 * The real app on a fresh database of the test database server (one per call,
 * so test files run in parallel). Logging is off unless TEST_LOG is set.
 */
export async function buildTestApp (overrides: Partial<ResolvedConfig> = {}, appOptions: Omit<BuildAppOptions, 'config'> = {}): Promise<TestApp> {
  const secret = randomBytes(32).toString('base64url');
  const config: ResolvedConfig = {
    ...loadConfig({}),
    mongodbUri: inject('mongoUri'),
    mongodbDb: freshDatabaseName('app'),
    auth: { kind: 'secret', secret },
    ...overrides,
  };
  const app = await buildApp({ config, logger: process.env['TEST_LOG'] ? { level: 'debug' } : false, ...appOptions });
  await app.ready();
  return {
    app,
    config,
    token: (role, extra = {}) => mintToken({ kind: 'secret', secret }, {
      subject: `test-${role}`,
      role,
      ...(role === 'cluster' ? { clusterId: 'c1' } : {}),
      ...extra,
    }),
    close: async () => {
      await app.database.db.dropDatabase().catch(() => undefined);
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
