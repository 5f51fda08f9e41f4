import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileTrustPolicy, keylessVerifierFrom, verifyDigest, type TrustVerdict } from '../../../../src/domain/trust/index.js';
import { FIXTURE_HOST, FIXTURE_REPOSITORY, fixtureArtifacts, fixtureDigest, fixtureKeyPem } from '../../../support/cosignFixtures.js';

// A keyless signature made by the real cosign (--new-bundle-format): a Fulcio-style certificate from a
// private CA and an RFC 3161 timestamp from sigstore's timestamp-authority, verified by @sigstore/verify
// against the trusted root that names both (test/fixtures/cosign/keyless). No Fulcio, Rekor or CT log:
// the tests need no transparency-log entry and no SCT (thresholds 0); the timestamp is required.
const dir = path.join(import.meta.dirname, '..', '..', '..', 'fixtures', 'cosign', 'keyless');
const root = JSON.parse(readFileSync(path.join(dir, 'trusted_root.json'), 'utf8')) as Record<string, unknown>;
const thresholds = { tlogThreshold: 0, ctlogThreshold: 0 };
const ISSUER = 'https://issuer.cloudly.test';
const image = { registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY, digest: fixtureDigest('signed-keyless') };

const verify = (identities: Array<{ issuer: string, subject?: string, subjectPattern?: string }>, trusted = root): TrustVerdict => verifyDigest({
  image,
  fetched: fixtureArtifacts('signed-keyless'),
  policy: compileTrustPolicy({ keylessIdentities: identities }),
  keyless: keylessVerifierFrom(trusted, thresholds),
});

describe('keyless signatures against an operator-supplied trusted root', () => {
  it('passes when the certificate chains to the root at the timestamp and names a trusted identity', () => {
    const verdict = verify([{ issuer: ISSUER, subject: 'release@cloudly.test' }]);
    const signer = { issuer: ISSUER, subject: 'release@cloudly.test' };
    expect(verdict).toMatchObject({ outcome: 'passed', signatures: [{ signer, format: 'sigstore-bundle' }] });
    expect(verify([{ issuer: ISSUER, subjectPattern: '.*@cloudly\\.test' }]).outcome).toBe('passed');
  });

  it('refuses another identity or another issuer, naming the identity found', () => {
    for (const identity of [{ issuer: ISSUER, subject: 'someone@cloudly.test' }, { issuer: 'https://other.example', subject: 'release@cloudly.test' }]) {
      const verdict = verify([identity]);
      const found = { identities: [{ issuer: ISSUER, subject: 'release@cloudly.test' }] };
      expect(verdict).toMatchObject({ outcome: 'refused', code: 'signature-untrusted', found });
    }
  });

  it('refuses the signature under a root without its CA, or without its timestamp authority', () => {
    const identity = [{ issuer: ISSUER, subject: 'release@cloudly.test' }];
    const otherCa = {
      ...root,
      certificateAuthorities: [{
        ...(root['certificateAuthorities'] as object[])[0],
        certChain: {
          certificates: [
            { rawBytes: readFileSync(path.join(dir, '..', '..', 'tls', 'ca.pem'), 'utf8').replace(/-----[A-Z ]+-----|\s/g, '') },
          ]
        }
      }]
    };
    expect(verify(identity, otherCa)).toMatchObject({ outcome: 'refused', code: 'signature-untrusted', found: { identities: [] } });
    expect(verify(identity, { ...root, timestampAuthorities: [] })).toMatchObject({ outcome: 'refused', code: 'signature-untrusted' });
  });

  it('is not satisfied by keys: a key-only policy does not trust a keyless signature', () => {
    const verdict = verifyDigest({
      image, fetched: fixtureArtifacts('signed-keyless'), policy: compileTrustPolicy({ publicKeys: [{ keyId: 'ci', publicKeyPem: fixtureKeyPem('trusted') }] }),
    });
    expect(verdict).toMatchObject({ outcome: 'refused', code: 'signature-untrusted' });
  });
});
