import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { keylessVerifierFrom } from './domain/trust/keyless.js';
import { loadRegistrySettings, type RegistrySettings } from './registryConfig.js';
import { parsePublicKeyPems, parseSigningKeyPem } from './domain/attestation/keys.js';

/** One label of a host name (RFC 1123). */
const HOST_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/**
 * The environment the service reads, validated once at start-up: one schema, and the
 * configuration type is `Static<>` of it (as fastify/demo does with @fastify/env), so the
 * names in code are the variables' names. Every value has a default that is safe on a
 * developer machine; production sets the database and the JWT key explicitly.
 */
export const EnvSchema = Type.Object({
  HOST: Type.String({
    minLength: 1,
    maxLength: 253,
    // A host name or an IPv4 address, or an IPv6 address (with an optional zone): never a URL.
    pattern: `^(?:${HOST_LABEL}(?:\\.${HOST_LABEL})*|(?=[0-9A-Fa-f.]*:)[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?)$`,
    default: '127.0.0.1',
    description: 'address to listen on: a host name, an IPv4 or an IPv6 address (not a URL)',
  }),
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
  LOCAL_DATABASE_PORT: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 65535,
    description: 'port of the local development database (without MONGODB_URI): exactly this port, 0 = any free port; ' +
      'unset = 27027 when free, else any free port',
  })),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024, default: 1024 * 1024, description: 'request body limit' }),
  REPORT_BODY_LIMIT_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 12 * 1024 * 1024,
    default: 8 * 1024 * 1024,
    description: 'body limit of snapshot reports (POST /v1/deployment-snapshots and /typedrequest):' +
      ' a full report of a 1,000-node cluster with up to 5 replicas per node fits',
  }),
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
  LIFECYCLE_SWEEP_INTERVAL_MS: Type.Integer({
    minimum: 50,
    maximum: 600_000,
    default: 5_000,
    description: 'how often each process looks at rollouts in progress: progress deadlines, milestones, automatic rollback, waiting pushes',
  }),
  EVENTS_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 36_500,
    default: 30,
    description: 'how long the domain-event log keeps an event (days); each process\'s lifecycle sweep removes older ones',
  }),
  METRICS_TOKEN: Type.Optional(Type.String({
    minLength: 16,
    maxLength: 4096,
    pattern: '^[\\x21-\\x7e]+$',
    description: 'bearer token GET /metrics requires (at least 16 visible ASCII characters); unset = /metrics is open, like /healthz',
  })),
  REGISTRY_CONFIG_FILE: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 4096,
    description: 'registry configuration file (JSON or YAML): per registry host its endpoint, credentials, CA and timeouts (docs/trust.md); ' +
      'unset = every registry anonymous, https only, public addresses only',
  })),
  SIGSTORE_TRUSTED_ROOT_FILE: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 4096,
    description: 'Sigstore trusted root (trusted_root.json) for keyless signatures in trust policies; never fetched at run time',
  })),
  ATTESTATION_SIGNING_KEY: Type.Optional(Type.String({
    pattern: '-----BEGIN PRIVATE KEY-----',
    description: 'PEM (PKCS#8, unencrypted) Ed25519 or ECDSA P-256 private key that signs attestations; ' +
      'unset: npm start creates a development key under DATA_DIR',
  })),
  ATTESTATION_RETIRED_PUBLIC_KEYS: Type.Optional(Type.String({
    pattern: '-----BEGIN PUBLIC KEY-----',
    description: 'PEM bundle of the public keys that signed attestations before the current key (still listed, so old attestations verify)',
  })),
  WEBHOOK_ALLOWED_HOSTS: Type.Optional(Type.String({
    maxLength: 8192,
    pattern: '^[A-Za-z0-9.:/,\\[\\] -]+$',
    description: 'webhook receivers allowed on loopback, link-local or private addresses (SSRF): comma-separated host names, IP addresses' +
      ' and CIDR ranges (e.g. `hooks.internal,10.1.0.0/16,127.0.0.1`); unset = public addresses only',
  })),
  WEBHOOK_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 100, default: 12, description: 'attempts of one webhook event before it becomes a dead letter' }),
  WEBHOOK_MAX_AGE_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 30 * 24 * 3600,
    default: 24 * 3600,
    description: 'how long an event is retried (from its first attempt) before it becomes a dead letter',
  }),
  WEBHOOK_RETRY_BASE_MS: Type.Integer({ minimum: 1, maximum: 3_600_000, default: 5_000, description: 'the first retry delay; doubled per attempt, jittered' }),
  WEBHOOK_RETRY_MAX_MS: Type.Integer({ minimum: 1, maximum: 86_400_000, default: 3_600_000, description: 'the longest retry delay (also caps Retry-After)' }),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({
    minimum: 10, maximum: 60_000, default: 500, description: 'how often each process looks for webhook events to deliver and subscriptions to take over',
  }),
  WEBHOOK_LEASE_MS: Type.Integer({
    minimum: 500,
    maximum: 600_000,
    default: 5_000,
    description: 'how long a process holds a subscription\'s delivery without renewing: a dead holder\'s is taken over after this',
  }),
  WEBHOOK_EVENT_SOURCE: Type.String({
    minLength: 1,
    maxLength: 1024,
    default: 'urn:cloudly:release-control-plane',
    description: 'the CloudEvents `source` of every webhook event (a URI reference)',
  }),
  FAULT_INJECTION: Type.Optional(Type.String({
    pattern: '^[a-z-]+(,[a-z-]+)*$',
    description: 'TEST ONLY: comma-separated fault points at which the process kills itself (crash-safety tests)',
  })),
});

export type AppConfig = Static<typeof EnvSchema>;

/** Secrets may come from files instead (Docker secrets): `<NAME>_FILE` holds the path; the variable itself wins. */
const fileVariables = [
  'MONGODB_URI', 'AUTH_JWT_SECRET', 'AUTH_JWT_PUBLIC_KEY', 'METRICS_TOKEN', 'ATTESTATION_SIGNING_KEY', 'ATTESTATION_RETIRED_PUBLIC_KEYS',
] as const;

export type AuthKey =
  | { kind: 'secret', secret: string }
  | { kind: 'public-key', pem: string, algorithm: string };

export class ConfigError extends Error {
  constructor (message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const isSecret = (variable: string): boolean => /SECRET|KEY|TOKEN|URI/.test(variable);

/** The raw values of the known variables; an empty variable counts as unset (`FOO= npm start` is how shells unset). */
function rawValues (env: NodeJS.ProcessEnv): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  for (const key of fileVariables) {
    const file = env[`${key}_FILE`];
    if (raw[key] !== undefined || file === undefined || file === '') continue;
    try {
      raw[key] = readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`${key}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return raw;
}

/**
 * TypeBox's conversion reads an integer variable as far as it parses: PORT=3000.5 became 3000 and
 * PORT=1e3 became 1. An integer variable must be written as one: decimal digits, an optional sign.
 */
function refuseNonIntegers (raw: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(raw)) {
    const schema = EnvSchema.properties[key as keyof typeof EnvSchema.properties] as { type?: unknown, description?: string };
    if (schema.type !== 'integer' || /^[+-]?\d+$/.test(String(value))) continue;
    const description = schema.description === undefined ? '' : `${schema.description} — `;
    throw new ConfigError(`${key}: ${description}Expected integer (got ${JSON.stringify(value)})`);
  }
}

/**
 * Reads the environment. Throws ConfigError with one line naming the first bad
 * variable, so that `npm start` stops with a message an operator can act on.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): AppConfig {
  const raw = rawValues(env);
  refuseNonIntegers(raw);
  const converted = Value.Default(EnvSchema, Value.Convert(EnvSchema, raw));
  const first = Value.Errors(EnvSchema, converted).First();
  if (first) {
    const variable = first.path.replace(/^\//, '') || '(environment)';
    const shown = variable in raw && !isSecret(variable) ? ` (got ${JSON.stringify(raw[variable])})` : '';
    const description = first.schema.description === undefined ? '' : `${first.schema.description} — `;
    // A choice of words: name them, not "Expected union value".
    const choices = (first.schema['anyOf'] as Array<{ const?: unknown }> | undefined)?.map((option) => option.const);
    const message = choices?.every((c) => typeof c === 'string') === true ? `expected one of ${choices.join(', ')}` : first.message;
    throw new ConfigError(`${variable}: ${description}${message}${shown}`);
  }
  const config = converted as AppConfig;
  if (config.AUTH_JWT_SECRET && config.AUTH_JWT_PUBLIC_KEY) {
    throw new ConfigError('AUTH_JWT_SECRET: set either AUTH_JWT_SECRET or AUTH_JWT_PUBLIC_KEY, not both');
  }
  if (config.AUTH_JWT_ALGORITHM && !config.AUTH_JWT_PUBLIC_KEY) {
    throw new ConfigError('AUTH_JWT_ALGORITHM: only meaningful with AUTH_JWT_PUBLIC_KEY');
  }
  // Read once here so that a bad file stops the start; the app reads them again with the helpers below.
  registrySettingsOf(config);
  trustedRootOf(config);
  checkAttestationKeys(config);
  checkWebhookAllowList(config);
  return config;
}

/** The registry configuration REGISTRY_CONFIG_FILE names (every host unlisted without it); ConfigError when it is bad. */
export function registrySettingsOf (config: AppConfig): RegistrySettings {
  try {
    return loadRegistrySettings(config.REGISTRY_CONFIG_FILE);
  } catch (err) {
    throw new ConfigError(`REGISTRY_CONFIG_FILE: ${(err as Error).message}`);
  }
}

/** The parsed Sigstore trusted root SIGSTORE_TRUSTED_ROOT_FILE names (undefined without it); ConfigError when it is not one. */
export function trustedRootOf (config: AppConfig): unknown {
  const file = config.SIGSTORE_TRUSTED_ROOT_FILE;
  if (file === undefined) return undefined;
  try {
    const root = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    keylessVerifierFrom(root);
    return root;
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message.split('\n')[0];
    throw new ConfigError(`SIGSTORE_TRUSTED_ROOT_FILE: ${file} is not a readable Sigstore trusted root (${reason})`);
  }
}

/** The attestation keys must be keys this project signs and verifies with (the schema only saw PEM armour). */
function checkAttestationKeys (config: AppConfig): void {
  if (config.ATTESTATION_SIGNING_KEY) {
    const parsed = parseSigningKeyPem(config.ATTESTATION_SIGNING_KEY);
    if (!parsed.ok) throw new ConfigError(`ATTESTATION_SIGNING_KEY: ${parsed.problem}`);
  }
  if (config.ATTESTATION_RETIRED_PUBLIC_KEYS) {
    const parsed = parsePublicKeyPems(config.ATTESTATION_RETIRED_PUBLIC_KEYS);
    if (!parsed.ok) throw new ConfigError(`ATTESTATION_RETIRED_PUBLIC_KEYS: ${parsed.problem}`);
  }
}

/** Every entry of WEBHOOK_ALLOWED_HOSTS must be a host name, an IP address or a CIDR range. */
function checkWebhookAllowList (config: AppConfig): void {
  const entries = (config.WEBHOOK_ALLOWED_HOSTS ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
  const bad = entries.find((entry) => !isAllowListEntry(entry));
  if (bad !== undefined) throw new ConfigError(`WEBHOOK_ALLOWED_HOSTS: '${bad}' is neither a host name, an IP address nor a CIDR range`);
}

/** A host name, an IP address, or an IP/prefix. */
export function isAllowListEntry (entry: string): boolean {
  const [network, prefix, extra] = entry.split('/');
  if (extra !== undefined || network === undefined || network === '') return false;
  const family = isIP(network);
  if (prefix !== undefined) return family !== 0 && /^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
  return family !== 0 || new RegExp(`^${HOST_LABEL}(?:\\.${HOST_LABEL})*$`).test(network);
}

/** The key tokens are verified with; undefined when none is configured (server.ts then provisions a development secret). */
export function authKeyOf (config: AppConfig): AuthKey | undefined {
  if (config.AUTH_JWT_SECRET) return { kind: 'secret', secret: config.AUTH_JWT_SECRET };
  if (config.AUTH_JWT_PUBLIC_KEY) return { kind: 'public-key', pem: config.AUTH_JWT_PUBLIC_KEY, algorithm: config.AUTH_JWT_ALGORITHM ?? 'RS256' };
  return undefined;
}

/** TEST ONLY: the fault points FAULT_INJECTION names. */
export const faultPointsOf = (config: AppConfig): string[] => config.FAULT_INJECTION?.split(',') ?? [];
