import { generateKeyPairSync } from 'node:crypto';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { ITrustPolicy } from '../../../../src/contracts/trustPolicy.js';
import {
  buildVerificationSummary, canonicalJson, compileTrustPolicy, keylessVerifierFrom, trustPolicyProblems, verifyDigest,
} from '../../../../src/domain/trust/index.js';
import { FIXTURE_HOST, FIXTURE_REPOSITORY, fixtureArtifacts, fixtureDigest, fixtureKeyPem } from '../../../support/cosignFixtures.js';

const at = '/body/serviceData/trustPolicy';
const withRoot = { trustedRootConfigured: true };
const ecdsa = fixtureKeyPem('trusted');
const pemOf = (type: 'rsa' | 'ec', options: object): string =>
  generateKeyPairSync(type as 'rsa', options as { modulusLength: number }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

describe('the trust policy schema', () => {
  it('accepts a policy of keys, identities and attestations, and refuses unknown members and bad key ids', () => {
    const policy = {
      publicKeys: [{ keyId: 'ci-2026', publicKeyPem: ecdsa }],
      keylessIdentities: [{ issuer: 'https://token.actions.githubusercontent.com', subjectPattern: 'https://github\\.com/acme/.*' }],
      requiredAttestations: ['https://slsa.dev/provenance/v1'],
    };
    expect(Value.Check(ITrustPolicy, policy)).toBe(true);
    expect(Value.Check(ITrustPolicy, { ...policy, extra: 1 })).toBe(false);
    expect(Value.Check(ITrustPolicy, { publicKeys: [{ keyId: ' spaced', publicKeyPem: ecdsa }] })).toBe(false);
    expect(Value.Check(ITrustPolicy, { requiredAttestations: ['a', 'a'] })).toBe(false);
  });
});

describe('trustPolicyProblems', () => {
  it('has none for a sound policy, or none at all', () => {
    expect(trustPolicyProblems(undefined, at, withRoot)).toEqual([]);
    const keys = [{ keyId: 'a', publicKeyPem: ecdsa }, { keyId: 'b', publicKeyPem: fixtureKeyPem('ed25519') }];
    expect(trustPolicyProblems({ publicKeys: keys }, at, withRoot)).toEqual([]);
  });

  it('names each problem with its field', () => {
    const problems = trustPolicyProblems({
      publicKeys: [
        { keyId: 'a', publicKeyPem: ecdsa },
        { keyId: 'a', publicKeyPem: fixtureKeyPem('untrusted') },
        { keyId: 'b', publicKeyPem: ecdsa },
        { keyId: 'c', publicKeyPem: '-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----' },
        { keyId: 'd', publicKeyPem: pemOf('rsa', { modulusLength: 2048 }) },
        { keyId: 'e', publicKeyPem: pemOf('ec', { namedCurve: 'secp384r1' }) },
      ],
      keylessIdentities: [
        { issuer: 'https://accounts.example.com', subjectPattern: '(' },
        { issuer: 'https://accounts.example.com', subject: 'a@example.com', subjectPattern: '.*' },
        { issuer: 'http://insecure.example.com', subject: 'a@example.com' },
      ],
    }, at, { trustedRootConfigured: false });
    expect(problems).toEqual([
      { field: `${at}/publicKeys/1/keyId`, message: 'repeats the keyId of /publicKeys/0' },
      { field: `${at}/publicKeys/2/publicKeyPem`, message: 'is the same key as /publicKeys/0' },
      { field: `${at}/publicKeys/3/publicKeyPem`, message: 'is not a PEM public key (SPKI: -----BEGIN PUBLIC KEY-----)' },
      { field: `${at}/publicKeys/4/publicKeyPem`, message: 'is a rsa key: only ECDSA P-256 and Ed25519 keys are accepted' },
      { field: `${at}/publicKeys/5/publicKeyPem`, message: 'is a ec (secp384r1) key: only ECDSA P-256 and Ed25519 keys are accepted' },
      { field: `${at}/keylessIdentities/0/subjectPattern`, message: expect.stringMatching(/^is not a regular expression: /) },
      { field: `${at}/keylessIdentities/1`, message: 'needs exactly one of subject and subjectPattern' },
      { field: `${at}/keylessIdentities/2/issuer`, message: 'must be an https:// URL (the OIDC issuer)' },
      { field: `${at}/keylessIdentities`, message: 'needs a Sigstore trusted root, and this server has none configured (SIGSTORE_TRUSTED_ROOT_FILE)' },
    ]);
  });

  it('refuses a policy that trusts no signer', () => {
    expect(trustPolicyProblems({ requiredAttestations: ['https://slsa.dev/provenance/v1'] }, at, withRoot)).toEqual([
      { field: at, message: 'trusts no signer: name at least one of publicKeys or keylessIdentities (or remove trustPolicy)' },
    ]);
  });

  it('anchors subject patterns: the whole subject must match', () => {
    const compiled = compileTrustPolicy({ keylessIdentities: [{ issuer: 'https://i.example', subjectPattern: 'https://github\\.com/acme/.*' }] });
    expect(compiled.identities[0]?.matches('https://github.com/acme/shop')).toBe(true);
    expect(compiled.identities[0]?.matches('evil https://github.com/acme/shop')).toBe(false);
  });
});

describe('keylessVerifierFrom', () => {
  it('refuses what is not a trusted root with a CA', () => {
    expect(() => keylessVerifierFrom({ mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1' })).toThrow(/no certificate authority/);
  });
});

describe('buildVerificationSummary', () => {
  const image = { registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY, digest: fixtureDigest('signed') };
  const policy = { requiredAttestations: ['https://slsa.dev/provenance/v1'], publicKeys: [{ keyId: 'ci', publicKeyPem: ecdsa }] };

  it('states a PASSED verification as an in-toto Statement v1 with the SLSA VSA predicate', () => {
    const verdict = verifyDigest({ image, fetched: fixtureArtifacts('signed'), policy: compileTrustPolicy(policy) });
    const summary = buildVerificationSummary({
      image,
      verdict,
      policy,
      policyUri: 'https://cloudly.example/v1/services/svc-1#trustPolicy',
      verifier: { id: 'https://cloudly.example' },
      timeVerified: Date.UTC(2026, 11, 4),
    });
    const reference = `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${image.digest}`;
    expect(summary).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: reference, digest: { sha256: image.digest.slice(7) } }],
      predicateType: 'https://slsa.dev/verification_summary/v1',
      predicate: {
        verifier: { id: 'https://cloudly.example' },
        timeVerified: '2026-12-04T00:00:00.000Z',
        resourceUri: reference,
        verificationResult: 'PASSED',
        verifiedLevels: ['SLSA_BUILD_LEVEL_1'],
      },
    });
    expect(summary.predicate.inputAttestations).toHaveLength(2);
    expect(summary.predicate.inputAttestations[0]?.uri).toMatch(new RegExp(`^${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@sha256:`));
    // The policy digest is over canonical JSON: member order does not change it.
    const reordered = buildVerificationSummary({
      image,
      verdict,
      policy: { publicKeys: policy.publicKeys, requiredAttestations: policy.requiredAttestations },
      policyUri: 'u',
      verifier: { id: 'v' },
      timeVerified: 0
    });
    expect(reordered.predicate.policy.digest).toEqual(summary.predicate.policy.digest);
  });

  it('states a refusal as FAILED, with no input attestations and no level', () => {
    const unsigned = { ...image, digest: fixtureDigest('unsigned') };
    const verdict = verifyDigest({ image: unsigned, fetched: fixtureArtifacts('unsigned'), policy: compileTrustPolicy(policy) });
    const summary = buildVerificationSummary({ image, verdict, policy, policyUri: 'u', verifier: { id: 'v' }, timeVerified: 0 });
    expect(summary.predicate).toMatchObject({ verificationResult: 'FAILED', inputAttestations: [], verifiedLevels: [] });
  });

  it('canonicalJson sorts members at every depth', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 'x' }], a: true, u: undefined })).toBe('{"a":true,"b":[{"c":"x","d":1}]}');
  });
});
