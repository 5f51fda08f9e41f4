import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * The environment the service reads, validated once at start-up. Every value
 * has a default that is safe on a developer machine; production sets the
 * database and the JWT key explicitly.
 */
export const EnvSchema = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address to listen on' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port (0 = any free port)' }),
  MONGODB_URI: Type.Optional(Type.String({
    pattern: '^mongodb(\\+srv)?://',
    description: 'MongoDB connection string; unset = the local development database under DATA_DIR',
  })),
  MONGODB_DB: Type.String({
    pattern: '^[A-Za-z0-9_-]{1,63}$',
    default: 'cloudly_release',
    description: 'database name',
  }),
  AUTH_JWT_SECRET: Type.Optional(Type.String({ minLength: 32, description: 'HS256 secret (at least 32 characters)' })),
  AUTH_JWT_PUBLIC_KEY: Type.Optional(Type.String({
    pattern: '-----BEGIN PUBLIC KEY-----',
    description: 'PEM (SPKI) public key; tokens are then verified with AUTH_JWT_ALGORITHM',
  })),
  AUTH_JWT_ALGORITHM: Type.Optional(Type.Union(
    ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'].map((alg) => Type.Literal(alg)),
    { description: 'algorithm for AUTH_JWT_PUBLIC_KEY (default RS256)' }
  )),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' }
  ),
  DATA_DIR: Type.String({ minLength: 1, default: '.data', description: 'local state: development database and secret' }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024, default: 1024 * 1024 }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
  REQUEST_TIMEOUT_MS: Type.Integer({
    minimum: 1_000,
    maximum: 600_000,
    default: 30_000,
    description: 'a request (headers and body) must arrive within this; a slower client gets 408 and its connection is closed',
  }),
  CONNECTION_TIMEOUT_MS: Type.Integer({
    minimum: 1_000,
    maximum: 3_600_000,
    default: 60_000,
    description: 'a connection on which nothing arrives for this long is closed',
  }),
  MONGODB_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 60_000,
    default: 2_000,
    description: 'server selection / connect timeout: how fast a request fails when the database is away',
  }),
  IDEMPOTENCY_LEASE_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 15_000,
    description: 'how long an in-flight idempotent request owns its key before another process may take it over',
  }),
  IDEMPOTENCY_SWEEP_INTERVAL_MS: Type.Integer({
    minimum: 50,
    maximum: 86_400_000,
    default: 600_000,
    description: 'how often each process deletes idempotency records past their 48 h retention (for databases without TTL indexes)',
  }),
  METRICS_TOKEN: Type.Optional(Type.String({
    minLength: 16,
    maxLength: 4096,
    pattern: '^[\\x21-\\x7e]+$',
    description: 'bearer token GET /metrics requires (at least 16 visible ASCII characters); unset = /metrics is open, like /healthz',
  })),
  FAULT_INJECTION: Type.Optional(Type.String({
    pattern: '^[a-z-]+(,[a-z-]+)*$',
    description: 'TEST ONLY: comma-separated fault points at which the process kills itself (crash-safety tests)',
  })),
});

export type Env = Static<typeof EnvSchema>;

export type AuthKey =
  | { kind: 'secret', secret: string }
  | { kind: 'public-key', pem: string, algorithm: string };

export interface AppConfig {
  host: string;
  port: number;
  mongodbUri?: string;
  mongodbDb: string;
  /** Resolved key. `undefined` means "not configured" (server.ts then provisions a development secret). */
  auth?: AuthKey;
  logLevel: string;
  dataDir: string;
  bodyLimitBytes: number;
  shutdownTimeoutMs: number;
  /** Slow clients: the whole request must arrive within this (Node's requestTimeout). */
  requestTimeoutMs: number;
  /** Slow clients: an inactive connection is closed after this (socket timeout). */
  connectionTimeoutMs: number;
  mongodbTimeoutMs: number;
  idempotencyLeaseMs: number;
  idempotencySweepIntervalMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <metricsToken>`. */
  metricsToken?: string;
  /** TEST ONLY: fault points at which the process SIGKILLs itself. */
  faultInjection: readonly string[];
}

export class ConfigError extends Error {
  constructor (message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Reads the environment. Throws ConfigError with one line naming the first bad
 * variable, so that `npm start` stops with a message an operator can act on.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): AppConfig {
  const known = Object.keys(EnvSchema.properties);
  const raw: Record<string, unknown> = {};
  for (const key of known) {
    const value = env[key];
    // An empty variable counts as unset: `FOO= npm start` is how shells unset.
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const converted = Value.Default(EnvSchema, Value.Convert(EnvSchema, raw));
  const first = Value.Errors(EnvSchema, converted).First();
  if (first) {
    const variable = first.path.replace(/^\//, '') || '(environment)';
    const shown = variable in raw && !/SECRET|KEY|TOKEN/.test(variable) ? ` (got ${JSON.stringify(raw[variable])})` : '';
    throw new ConfigError(`${variable}: ${first.schema.description ?? ''}${first.schema.description ? ' — ' : ''}${first.message}${shown}`);
  }
  const parsed = converted as Env;
  if (parsed.AUTH_JWT_SECRET && parsed.AUTH_JWT_PUBLIC_KEY) {
    throw new ConfigError('AUTH_JWT_SECRET: set either AUTH_JWT_SECRET or AUTH_JWT_PUBLIC_KEY, not both');
  }
  if (parsed.AUTH_JWT_ALGORITHM && !parsed.AUTH_JWT_PUBLIC_KEY) {
    throw new ConfigError('AUTH_JWT_ALGORITHM: only meaningful with AUTH_JWT_PUBLIC_KEY');
  }
  let auth: AuthKey | undefined;
  if (parsed.AUTH_JWT_SECRET) auth = { kind: 'secret', secret: parsed.AUTH_JWT_SECRET };
  if (parsed.AUTH_JWT_PUBLIC_KEY) {
    auth = { kind: 'public-key', pem: parsed.AUTH_JWT_PUBLIC_KEY, algorithm: parsed.AUTH_JWT_ALGORITHM ?? 'RS256' };
  }
  return {
    host: parsed.HOST,
    port: parsed.PORT,
    ...(parsed.MONGODB_URI ? { mongodbUri: parsed.MONGODB_URI } : {}),
    mongodbDb: parsed.MONGODB_DB,
    ...(auth ? { auth } : {}),
    logLevel: parsed.LOG_LEVEL,
    dataDir: parsed.DATA_DIR,
    bodyLimitBytes: parsed.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: parsed.SHUTDOWN_TIMEOUT_MS,
    requestTimeoutMs: parsed.REQUEST_TIMEOUT_MS,
    connectionTimeoutMs: parsed.CONNECTION_TIMEOUT_MS,
    mongodbTimeoutMs: parsed.MONGODB_TIMEOUT_MS,
    idempotencyLeaseMs: parsed.IDEMPOTENCY_LEASE_MS,
    idempotencySweepIntervalMs: parsed.IDEMPOTENCY_SWEEP_INTERVAL_MS,
    ...(parsed.METRICS_TOKEN ? { metricsToken: parsed.METRICS_TOKEN } : {}),
    faultInjection: parsed.FAULT_INJECTION ? parsed.FAULT_INJECTION.split(',') : [],
  };
}
