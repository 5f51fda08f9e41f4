import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import { strictObject } from './contracts/common.js';

/**
 * The registry configuration file (REGISTRY_CONFIG_FILE, JSON or YAML; docs/trust.md): per registry
 * host, where to reach it, how to authenticate, which CA to trust, and how long to wait. Read and
 * checked at start-up (a bad file stops the start with one line); secrets may be given as files
 * (`passwordFile`, `tokenFile`), read then too. A host that is not listed is reached anonymously,
 * over https only, and never on a loopback, link-local or private address.
 */

const HOST_PATTERN = '^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\\[[0-9a-f:.]+\\])(?::[0-9]{1,5})?$';

export const registryConfigDefaults = {
  connectTimeoutMs: 3_000,
  timeoutMs: 15_000,
  maxManifestBytes: 512 * 1024,
  maxBlobBytes: 4 * 1024 * 1024,
  maxArtifacts: 32,
} as const;

const Secret = (what: string): ReturnType<typeof Type.String> => Type.String({ minLength: 1, maxLength: 16_384, description: what });
const FilePath = (what: string): ReturnType<typeof Type.String> => Type.String({ minLength: 1, maxLength: 4096, description: what });

export const RegistryAuthConfig = Type.Union([
  strictObject({ kind: Type.Literal('anonymous') }),
  strictObject({
    kind: Type.Literal('basic'),
    username: Type.String({ minLength: 1, maxLength: 1024 }),
    password: Type.Optional(Secret('the password or access token (or passwordFile)')),
    passwordFile: Type.Optional(FilePath('a file holding the password (Docker secrets)')),
  }),
  strictObject({
    kind: Type.Literal('bearer'),
    token: Type.Optional(Secret('a registry bearer token sent as is (or tokenFile)')),
    tokenFile: Type.Optional(FilePath('a file holding the token')),
  }),
], { description: 'anonymous (default), basic (also used at a token service), or a fixed bearer token' });

const Timeout = (min: number, max: number, fallback: number, what: string): ReturnType<typeof Type.Integer> =>
  Type.Integer({ minimum: min, maximum: max, description: `${what} (default ${fallback})` });

export const RegistryHostConfig = strictObject({
  host: Type.String({ maxLength: 256, pattern: HOST_PATTERN, description: 'the registry host as image references name it, lower case, with its port if any' }),
  endpoint: Type.Optional(Type.String({
    maxLength: 512,
    pattern: '^https?://[^/?#\\s]+/?$',
    description: 'where to reach it (scheme, host, port; no path); default https://<host>',
  })),
  auth: Type.Optional(RegistryAuthConfig),
  caFile: Type.Optional(FilePath('PEM file of CA certificates trusted for this registry, besides the system roots')),
  allowHttp: Type.Optional(Type.Boolean({ description: 'allow a plain http:// endpoint (loopback test registries; default false)' })),
  attachAttestations: Type.Optional(Type.Boolean({
    description: 'the server may write here: it attaches its signed attestations to the images it attests (cosign .att tag and OCI referrer; default false)',
  })),
  redirectHosts: Type.Optional(Type.Array(Type.String({ maxLength: 256, pattern: HOST_PATTERN }), {
    maxItems: 16,
    description: 'hosts a blob download may be redirected to (https only), e.g. a storage CDN; default: none, redirects stay on the registry host',
  })),
  connectTimeoutMs: Type.Optional(Timeout(50, 60_000, registryConfigDefaults.connectTimeoutMs, 'connect timeout')),
  timeoutMs: Type.Optional(Timeout(100, 300_000, registryConfigDefaults.timeoutMs, 'total time of one request, body included')),
});
export type RegistryHostConfig = Static<typeof RegistryHostConfig>;

export const RegistryConfigFile = strictObject({
  registries: Type.Optional(Type.Array(RegistryHostConfig, { maxItems: 256 })),
  limits: Type.Optional(strictObject({
    connectTimeoutMs: Type.Optional(Timeout(50, 60_000, registryConfigDefaults.connectTimeoutMs, 'connect timeout of unlisted hosts')),
    timeoutMs: Type.Optional(Timeout(100, 300_000, registryConfigDefaults.timeoutMs, 'total time of one request to an unlisted host')),
    maxManifestBytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 4 * 1024 * 1024, description: 'largest manifest or index read' })),
    maxBlobBytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024, description: 'largest signature, envelope or bundle blob read' })),
    maxArtifacts: Type.Optional(Type.Integer({ minimum: 1, maximum: 256, description: 'most referrers of one digest read' })),
  })),
});
export type RegistryConfigFile = Static<typeof RegistryConfigFile>;

export type RegistryCredentials = { kind: 'anonymous' } | { kind: 'basic', username: string, password: string } | { kind: 'bearer', token: string };

export interface RegistryHostSettings {
  host: string;
  endpoint: URL;
  credentials: RegistryCredentials;
  /** Extra CA certificates (PEM), besides the system roots. */
  ca?: string;
  /** Listed in the configuration: any address allowed, plain http when allowHttp. */
  configured: boolean;
  /** The server attaches its attestations to images of this host (registry writes allowed). */
  attachAttestations: boolean;
  redirectHosts: string[];
  connectTimeoutMs: number;
  timeoutMs: number;
}

export interface RegistryLimits {
  maxManifestBytes: number;
  maxBlobBytes: number;
  maxArtifacts: number;
}

export interface RegistrySettings {
  hosts: ReadonlyMap<string, RegistryHostSettings>;
  limits: RegistryLimits;
  /** Timeouts for hosts that are not listed. */
  unlisted: { connectTimeoutMs: number, timeoutMs: number };
}

function readText (file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${what}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function secretOf (value: string | undefined, file: string | undefined, at: string, name: string): string {
  if ((value === undefined) === (file === undefined)) throw new Error(`${at}: give exactly one of ${name} and ${name}File`);
  return value ?? readText(file as string, `${at}/${name}File`).trim();
}

function credentialsOf (entry: RegistryHostConfig, at: string): RegistryCredentials {
  const auth = entry.auth ?? { kind: 'anonymous' };
  if (auth.kind === 'basic') return { kind: 'basic', username: auth.username, password: secretOf(auth.password, auth.passwordFile, `${at}/auth`, 'password') };
  if (auth.kind === 'bearer') return { kind: 'bearer', token: secretOf(auth.token, auth.tokenFile, `${at}/auth`, 'token') };
  return { kind: 'anonymous' };
}

function hostSettings (entry: RegistryHostConfig, at: string, limits: NonNullable<RegistryConfigFile['limits']>): RegistryHostSettings {
  const endpoint = new URL(entry.endpoint ?? `https://${entry.host}`);
  if (endpoint.protocol === 'http:' && entry.allowHttp !== true) {
    throw new Error(`${at}/endpoint: plain http needs allowHttp: true (loopback test registries only)`);
  }
  const ca = entry.caFile === undefined ? undefined : readText(entry.caFile, `${at}/caFile`);
  if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`${at}/caFile: ${entry.caFile} holds no PEM certificate`);
  return {
    host: entry.host,
    endpoint,
    credentials: credentialsOf(entry, at),
    ...(ca === undefined ? {} : { ca }),
    configured: true,
    attachAttestations: entry.attachAttestations === true,
    redirectHosts: entry.redirectHosts ?? [],
    connectTimeoutMs: entry.connectTimeoutMs ?? limits.connectTimeoutMs ?? registryConfigDefaults.connectTimeoutMs,
    timeoutMs: entry.timeoutMs ?? limits.timeoutMs ?? registryConfigDefaults.timeoutMs,
  };
}

/** The settings from a parsed file; throws with `<pointer>: <what is wrong>`. */
export function registrySettingsOf (raw: unknown): RegistrySettings {
  const first = Value.Errors(RegistryConfigFile, raw).First();
  if (first !== undefined) throw new Error(`${first.path === '' ? '/' : first.path}: ${first.message}`);
  const file = raw as RegistryConfigFile;
  const limits = file.limits ?? {};
  const hosts = new Map<string, RegistryHostSettings>();
  (file.registries ?? []).forEach((entry, index) => {
    const at = `/registries/${index}`;
    if (hosts.has(entry.host)) throw new Error(`${at}/host: ${entry.host} is listed twice`);
    hosts.set(entry.host, hostSettings(entry, at, limits));
  });
  return {
    hosts,
    limits: {
      maxManifestBytes: limits.maxManifestBytes ?? registryConfigDefaults.maxManifestBytes,
      maxBlobBytes: limits.maxBlobBytes ?? registryConfigDefaults.maxBlobBytes,
      maxArtifacts: limits.maxArtifacts ?? registryConfigDefaults.maxArtifacts,
    },
    unlisted: {
      connectTimeoutMs: limits.connectTimeoutMs ?? registryConfigDefaults.connectTimeoutMs,
      timeoutMs: limits.timeoutMs ?? registryConfigDefaults.timeoutMs,
    },
  };
}

/** Reads REGISTRY_CONFIG_FILE (JSON is YAML too); undefined = no file: every host unlisted. Throws `<file>: <reason>`. */
export function loadRegistrySettings (file: string | undefined): RegistrySettings {
  if (file === undefined) return registrySettingsOf({});
  const text = readText(file, 'the registry configuration');
  let raw: unknown;
  try {
    raw = parseYaml(text, { maxAliasCount: 0 }) ?? {};
  } catch (err) {
    throw new Error(`${file}: not JSON or YAML (${(err as Error).message.split('\n')[0] ?? 'parse error'})`);
  }
  try {
    return registrySettingsOf(raw);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
}
