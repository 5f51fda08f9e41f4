import { describe, expect, it } from 'vitest';
import type { ITrustPolicy } from '../../../../src/contracts/trustPolicy.js';
import type { SignatureArtifacts } from '../../../../src/domain/ports/registry.js';
import {
  compileTrustPolicy, LruVerificationCache, trustRefusalError, verifyDigest, type TrustVerdict, type VerificationCache,
} from '../../../../src/domain/trust/index.js';
import { FIXTURE_HOST, FIXTURE_REPOSITORY, fixtureArtifacts, fixtureDigest, fixtureKeyPem, type FixtureCase } from '../../../support/cosignFixtures.js';

// The real cosign's signatures and attestations (test/fixtures/cosign), verified with real crypto.
const PROVENANCE = 'https://slsa.dev/provenance/v1';
const policy: ITrustPolicy = {
  publicKeys: [{ keyId: 'ci', publicKeyPem: fixtureKeyPem('trusted') }, { keyId: 'release-ed25519', publicKeyPem: fixtureKeyPem('ed25519') }],
  requiredAttestations: [PROVENANCE],
};
const compiled = compileTrustPolicy(policy);

interface Overrides { policy?: ITrustPolicy, fetched?: SignatureArtifacts, repository?: string, host?: string }
const verify = (name: FixtureCase, overrides: Overrides = {}): TrustVerdict => {
  const fetched = overrides.fetched ?? fixtureArtifacts(name);
  return verifyDigest({
    image: { registryHost: overrides.host ?? FIXTURE_HOST, repository: overrides.repository ?? FIXTURE_REPOSITORY, digest: fixtureDigest(name) },
    fetched,
    policy: overrides.policy === undefined ? compiled : compileTrustPolicy(overrides.policy),
  });
};

const refused = (verdict: TrustVerdict): Extract<TrustVerdict, { outcome: 'refused' }> => {
  if (verdict.outcome !== 'refused') throw new Error(`expected a refusal, got ${JSON.stringify(verdict)}`);
  return verdict;
};

/** A copy of the artifacts with one byte of one layer flipped. */
function flipped (fetched: SignatureArtifacts, pick: (mediaType: string) => boolean, at = 40): SignatureArtifacts {
  let done = false;
  return {
    ...fetched,
    artifacts: fetched.artifacts.map((artifact) => ({
      ...artifact,
      layers: artifact.layers.map((layer) => {
        if (done || !pick(layer.descriptor.mediaType)) return layer;
        done = true;
        const bytes = Buffer.from(layer.bytes);
        bytes[at] = (bytes[at] ?? 0) ^ 0x01;
        return { ...layer, bytes };
      }),
    })),
  };
}

describe('verifyDigest with cosign-made fixtures', () => {
  it.each([
    ['signed', 'ci', 'simple-signing', 'cosign-tag'],
    ['signed-ed25519', 'release-ed25519', 'simple-signing', 'cosign-tag'],
    ['signed-bundle', 'ci', 'sigstore-bundle', 'referrers-api'],
    ['signed-referrer', 'ci', 'simple-signing', 'referrers-api'],
  ] as const)('passes %s: signed by key %s (%s, %s) with a verified SLSA provenance', (name, keyId, format, source) => {
    const verdict = verify(name);
    expect(verdict.outcome, JSON.stringify(verdict)).toBe('passed');
    if (verdict.outcome !== 'passed') return;
    expect(verdict.image).toBe(`${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${fixtureDigest(name)}`);
    expect(verdict.signatures).toEqual([expect.objectContaining({ signer: { keyId }, format, source })]);
    expect(verdict.attestations).toEqual([expect.objectContaining({ signer: { keyId }, predicateType: PROVENANCE })]);
  });

  it('refuses an unsigned digest: signature-missing', () => {
    const verdict = refused(verify('unsigned'));
    expect(verdict.code).toBe('signature-missing');
    expect(verdict.found).toMatchObject({ artifacts: 0 });
    expect(trustRefusalError(verdict)).toMatchObject({ code: 'signature-missing', statusCode: 422 });
  });

  it('refuses a digest signed by a key the policy does not trust: signature-untrusted, naming the trusted key ids', () => {
    const verdict = refused(verify('untrusted'));
    expect(verdict.code).toBe('signature-untrusted');
    expect(verdict.found).toMatchObject({ signatures: 1, trustedKeyIds: ['ci', 'release-ed25519'] });
    expect(trustRefusalError(verdict).details).toMatchObject({ image: verdict.image, signatures: 1 });
  });

  it('refuses a replayed signature whose payload names another digest: signature-digest-mismatch', () => {
    const verdict = refused(verify('wrong-digest'));
    expect(verdict.code).toBe('signature-digest-mismatch');
    expect(verdict.found).toMatchObject({ keyIds: ['ci'], namedDigests: [fixtureDigest('signed')] });
  });

  it('refuses a signature made for another repository or another registry host: signature-digest-mismatch', () => {
    for (const where of [{ repository: 'cloudly/other' }, { host: 'registry.example.com' }]) {
      const verdict = refused(verify('signed', where));
      expect(verdict.code).toBe('signature-digest-mismatch');
      expect(verdict.found).toMatchObject({ namedReferences: [`${FIXTURE_HOST}/${FIXTURE_REPOSITORY}`] });
    }
  });

  it('refuses a signed digest without the required attestation: attestation-missing, naming what is present', () => {
    const verdict = refused(verify('no-attestation'));
    expect(verdict.code).toBe('attestation-missing');
    expect(verdict.found).toEqual({ missing: [PROVENANCE], present: [], unverified: [] });
    expect(verify('no-attestation', { policy: { publicKeys: policy.publicKeys } }).outcome).toBe('passed');
  });

  it('refuses an attestation required of another predicate type, naming the type present', () => {
    const verdict = refused(verify('signed', { policy: { ...policy, requiredAttestations: ['https://spdx.dev/Document'] } }));
    expect(verdict.code).toBe('attestation-missing');
    expect(verdict.found).toMatchObject({ missing: ['https://spdx.dev/Document'], present: [PROVENANCE] });
  });

  it('refuses each signature kind when only the other key is trusted', () => {
    const onlyEd25519 = { publicKeys: [{ keyId: 'release-ed25519', publicKeyPem: fixtureKeyPem('ed25519') }] };
    expect(refused(verify('signed', { policy: onlyEd25519 })).code).toBe('signature-untrusted');
    expect(refused(verify('signed-bundle', { policy: onlyEd25519 })).found).toMatchObject({ signatures: 1, keyHints: [expect.any(String)] });
    const onlyEcdsa = { publicKeys: [{ keyId: 'ci', publicKeyPem: fixtureKeyPem('trusted') }] };
    expect(refused(verify('signed-ed25519', { policy: onlyEcdsa })).code).toBe('signature-untrusted');
  });

  it('refuses a flipped byte anywhere a signature covers', () => {
    for (const name of ['signed', 'signed-ed25519'] as const) {
      expect(refused(verify(name, { fetched: flipped(fixtureArtifacts(name), (t) => t.endsWith('simplesigning.v1+json')) })).code).toBe('signature-untrusted');
    }
    // The bundle's JSON is altered inside its base64 payload: still a bundle, no longer signed by anyone.
    const bundle = refused(verify('signed-bundle', { fetched: flipped(fixtureArtifacts('signed-bundle'), (t) => t.includes('sigstore.bundle'), 300) }));
    expect(bundle.code).toBe('signature-untrusted');
    // The attestation's envelope payload: the signature stands, the provenance no longer verifies.
    const attestation = refused(verify('signed', { fetched: flipped(fixtureArtifacts('signed'), (t) => t.includes('dsse'), 60) }));
    expect(attestation.code).toBe('attestation-missing');
  });

  it('refuses a flipped byte in the signature annotation', () => {
    const fetched = fixtureArtifacts('signed');
    const tampered: SignatureArtifacts = {
      ...fetched,
      artifacts: fetched.artifacts.map((artifact) => ({
        ...artifact,
        layers: artifact.layers.map((layer) => {
          const signature = layer.descriptor.annotations?.['dev.cosignproject.cosign/signature'];
          if (signature === undefined || signature === '') return layer;
          const bytes = Buffer.from(signature, 'base64');
          bytes[20] = (bytes[20] ?? 0) ^ 0x80;
          return { ...layer, descriptor: { ...layer.descriptor, annotations: { 'dev.cosignproject.cosign/signature': bytes.toString('base64') } } };
        }),
      })),
    };
    expect(refused(verify('signed', { fetched: tampered })).code).toBe('signature-untrusted');
  });

  it('does a signature check once per (content, key) with a cache, and decides the same', () => {
    const seen: string[] = [];
    const lru = new LruVerificationCache(100);
    const counting: VerificationCache = { get: (key) => { seen.push(key); return lru.get(key); }, set: (key, valid) => lru.set(key, valid) };
    const run = (): TrustVerdict => verifyDigest({
      image: { registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY, digest: fixtureDigest('signed') },
      fetched: fixtureArtifacts('signed'),
      policy: compiled,
      cache: counting,
    });
    const first = run();
    const filled = lru.size;
    expect(filled).toBeGreaterThan(0);
    expect(run()).toEqual(first);
    expect(lru.size).toBe(filled);
  });
});

describe('LruVerificationCache', () => {
  it('keeps at most its capacity, dropping the least recently used', () => {
    const cache = new LruVerificationCache(2);
    cache.set('a', true);
    cache.set('b', false);
    expect(cache.get('a')).toBe(true);
    cache.set('c', true);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([true, undefined, true]);
    expect(cache.size).toBe(2);
  });
});
