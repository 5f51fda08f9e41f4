// The cosign fixtures (test/fixtures/cosign/README.md), read from disk: the artifacts of an image as
// the registry client hands them to the verifier, and every manifest and blob to push into a registry.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { SignatureArtifact, SignatureArtifacts } from '../../src/domain/ports/registry.js';
import { isVerifiableMediaType } from '../../src/domain/trust/artifacts.js';

const dir = path.join(import.meta.dirname, '..', 'fixtures', 'cosign');

export type FixtureCase =
  'signed' | 'signed-ed25519' | 'signed-bundle' | 'signed-referrer' | 'signed-keyless' | 'no-attestation' | 'untrusted' | 'wrong-digest' | 'unsigned';

export interface FixtureManifest { digest: string, mediaType: string, tag?: string, subject?: string }

interface FixtureIndex {
  registryHost: string;
  repository: string;
  images: Record<FixtureCase, string>;
  manifests: FixtureManifest[];
}

export const fixtureIndex = JSON.parse(readFileSync(path.join(dir, 'registry.json'), 'utf8')) as FixtureIndex;
export const FIXTURE_HOST = fixtureIndex.registryHost;
export const FIXTURE_REPOSITORY = fixtureIndex.repository;
export const fixtureDigest = (name: FixtureCase): string => fixtureIndex.images[name];

export const fixtureBlob = (digest: string): Buffer => readFileSync(path.join(dir, 'blobs', 'sha256', digest.replace(/^sha256:/, '')));
export const fixtureKeyPem = (name: 'trusted' | 'untrusted' | 'ed25519'): string => readFileSync(path.join(dir, 'keys', `${name}.pub`), 'utf8');

interface ParsedManifest {
  artifactType?: string;
  config?: { mediaType: string };
  annotations?: Record<string, string>;
  layers?: Array<{ mediaType: string, digest: string, size: number, annotations?: Record<string, string> }>;
}

function artifactOf (manifest: FixtureManifest, source: SignatureArtifact['source']): SignatureArtifact {
  const parsed = JSON.parse(fixtureBlob(manifest.digest).toString('utf8')) as ParsedManifest;
  return {
    source,
    ...(manifest.tag === undefined ? {} : { tag: manifest.tag }),
    digest: manifest.digest,
    artifactType: parsed.artifactType ?? parsed.config?.mediaType ?? '',
    annotations: parsed.annotations ?? {},
    layers: (parsed.layers ?? []).filter((layer) => isVerifiableMediaType(layer.mediaType))
      .map((descriptor) => ({ descriptor, bytes: fixtureBlob(descriptor.digest) })),
  };
}

/** What the registry holds for the image: its referrers and its cosign `.sig` / `.att` tags. */
export function fixtureArtifacts (name: FixtureCase): SignatureArtifacts {
  const digest = fixtureDigest(name);
  const tagPrefix = digest.replace(':', '-');
  const referrers = fixtureIndex.manifests.filter((m) => m.subject === digest).map((m) => artifactOf(m, 'referrers-api'));
  const tags = fixtureIndex.manifests.filter((m) => m.tag === `${tagPrefix}.sig` || m.tag === `${tagPrefix}.att`).map((m) => artifactOf(m, 'cosign-tag'));
  return {
    image: { registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY, digest },
    artifacts: [...referrers, ...tags],
    skipped: [],
    referrersApi: true,
  };
}
