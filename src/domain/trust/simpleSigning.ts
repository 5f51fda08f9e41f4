import type { ImageLocator } from '../ports/registry.js';

/**
 * cosign's simple-signing payload (the "Red Hat simple signing" format cosign signs):
 * `{ critical: { identity: { docker-reference }, image: { docker-manifest-digest }, type }, optional }`.
 * The signature covers these exact bytes; this says which image they name.
 */

const SIMPLE_SIGNING_TYPE = 'cosign container image signature';

/** Docker Hub's names for itself: one registry. */
const DOCKER_HUB = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/** `host/repository` without a tag or digest, lower-case host, Docker Hub's aliases as `docker.io`. */
export function normalizedRepository (reference: string): string {
  const withoutDigest = reference.split('@')[0] ?? '';
  const slash = withoutDigest.indexOf('/');
  const lastColon = withoutDigest.lastIndexOf(':');
  const untagged = lastColon > withoutDigest.lastIndexOf('/') ? withoutDigest.slice(0, lastColon) : withoutDigest;
  if (slash < 0) return untagged;
  const host = untagged.slice(0, slash).toLowerCase();
  return `${DOCKER_HUB.has(host) ? 'docker.io' : host}${untagged.slice(slash)}`;
}

export interface NamedImage {
  matches: boolean;
  digest?: string;
  reference?: string;
}

export function namedImage (payload: Uint8Array, image: ImageLocator): NamedImage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload).toString('utf8'));
  } catch {
    return { matches: false };
  }
  const critical = (parsed as { critical?: { type?: unknown, image?: Record<string, unknown>, identity?: Record<string, unknown> } } | null)?.critical;
  const digest = critical?.image?.['docker-manifest-digest'];
  const reference = critical?.identity?.['docker-reference'];
  const named: NamedImage = {
    matches: false,
    ...(typeof digest === 'string' ? { digest } : {}),
    ...(typeof reference === 'string' ? { reference } : {}),
  };
  if (critical?.type !== SIMPLE_SIGNING_TYPE || named.digest === undefined || named.reference === undefined) return named;
  const expected = normalizedRepository(`${image.registryHost}/${image.repository}`);
  return { ...named, matches: named.digest === image.digest && normalizedRepository(named.reference) === expected };
}
