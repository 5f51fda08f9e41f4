import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config.js';
import { devSigningKeyPath, loadOrCreateDevSecret, loadOrCreateDevSigningKey } from '../../../../src/devSecret.js';
import {
  attestationLayer, cosignAttestationImage, cosignAttestationTag, keyIdOf, sha256Hex, verifyEnvelope, type DsseEnvelope,
} from '../../../../src/domain/attestation/index.js';
import { attestationSignerFrom } from '../../../../src/outbound/signer/index.js';
import { generateSigningKeyPem, signedSample, testSigner, trustedKeys } from '../../../support/attestations.js';

const fixture = (name: string) => readFile(join(import.meta.dirname, '..', '..', '..', 'fixtures', 'cosign-attest', name));

describe('the OCI artifact cosign reads', () => {
  it('is byte for byte what `cosign attest` pushes for the same envelope (manifest, config, layer annotations)', async () => {
    const layerBytes = await fixture('layer.json');
    const layer = {
      mediaType: 'application/vnd.dsse.envelope.v1+json',
      size: layerBytes.length,
      digest: `sha256:${sha256Hex(layerBytes)}`,
      annotations: { predicateType: 'https://example.com/p/v1', 'dev.cosignproject.cosign/signature': '' },
    };
    const { manifest, config } = cosignAttestationImage([layer]);
    expect(config.bytes).toEqual(await fixture('config.json'));
    expect(manifest.bytes).toEqual(await fixture('manifest.json'));
    expect(manifest.descriptor.digest).toBe('sha256:c3beebf4ccec1512eb8410b24100f37f37b7088aba8374e39617e7383d76ab47');
    expect(cosignAttestationTag('sha256:eb42e7e326bf3908a31e924c9c2945965439ad18672ad14278621b95a8bb061c'))
      .toBe('sha256-eb42e7e326bf3908a31e924c9c2945965439ad18672ad14278621b95a8bb061c.att');
  });

  it('cosign\'s own envelope passes this project\'s DSSE signature check with cosign\'s key (then its v0.1 statement is refused)', async () => {
    const envelope = JSON.parse((await fixture('layer.json')).toString('utf8')) as DsseEnvelope;
    const keys = trustedKeys((await fixture('cosign.pub')).toString('utf8'));
    expect(keys[0]!.algorithm).toBe('ecdsa-p256');
    const result = verifyEnvelope(envelope, { keys });
    expect(result.ok ? 'accepted' : result.refusal)
      .toEqual({ code: 'statement-malformed', reason: expect.stringMatching(/^the payload is not an in-toto Statement v1: \/_type/) });
    const other = testSigner('ecdsa-p256');
    expect(verifyEnvelope(envelope, { keys: other.trusted })).toMatchObject({ ok: false, refusal: { code: 'signature-untrusted' } });
  });

  it('a server attestation\'s layer is its envelope\'s canonical JSON: the layer digest is the attestation digest', async () => {
    const s = testSigner();
    const { signed } = await signedSample(s.signer);
    const layer = attestationLayer(signed.envelope, 'https://serve.zone/cloudly-release/runtime-verification/v1');
    expect(layer.descriptor).toEqual({
      mediaType: 'application/vnd.dsse.envelope.v1+json',
      size: layer.bytes.length,
      digest: `sha256:${signed.digest}`,
      annotations: { 'dev.cosignproject.cosign/signature': '', predicateType: 'https://serve.zone/cloudly-release/runtime-verification/v1' },
    });
    const { manifest, config } = cosignAttestationImage([layer.descriptor, layer.descriptor]);
    expect(JSON.parse(config.bytes.toString()).rootfs.diff_ids).toEqual([`sha256:${signed.digest}`, `sha256:${signed.digest}`]);
    expect(JSON.parse(manifest.bytes.toString()).layers).toHaveLength(2);
  });
});

describe('attestation keys', () => {
  it('a key id is the sha256 of the public key\'s DER SubjectPublicKeyInfo, for the private key and its public half alike', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const expected = sha256Hex(publicKey.export({ type: 'spki', format: 'der' }));
    expect(keyIdOf(privateKey)).toBe(expected);
    expect(keyIdOf(createPublicKey(privateKey))).toBe(expected);
  });

  it('configuration: the signing key and the retired keys are validated at start-up, one line each, never echoing the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'attest-config-'));
    try {
      const { privateKeyPem, publicKeyPem } = generateSigningKeyPem('ecdsa-p256');
      const retired = generateSigningKeyPem('ed25519').publicKeyPem;
      await writeFile(join(dir, 'key.pem'), privateKeyPem);
      await writeFile(join(dir, 'retired.pem'), `${retired}\n${publicKeyPem}`);
      const config = loadConfig({ ATTESTATION_SIGNING_KEY_FILE: join(dir, 'key.pem'), ATTESTATION_RETIRED_PUBLIC_KEYS_FILE: join(dir, 'retired.pem') });
      const signer = attestationSignerFrom(config)!;
      expect(signer.publicKeys().map((k) => [k.algorithm, k.retired])).toEqual([['ecdsa-p256', false], ['ed25519', true]]);
      expect(attestationSignerFrom(loadConfig({}))).toBeUndefined();

      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      expect(() => loadConfig({ ATTESTATION_SIGNING_KEY: rsa }))
        .toThrow(/^ATTESTATION_SIGNING_KEY: a rsa key: only Ed25519 and ECDSA P-256 keys sign attestations$/);
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      expect(() => loadConfig({ ATTESTATION_SIGNING_KEY: p384 })).toThrow(/^ATTESTATION_SIGNING_KEY: an EC key on secp384r1: only/);
      const broken = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----';
      expect(() => loadConfig({ ATTESTATION_SIGNING_KEY: broken })).toThrow(/^ATTESTATION_SIGNING_KEY: not a readable unencrypted PEM private key \([^\n]*\)$/);
      expect(() => loadConfig({ ATTESTATION_SIGNING_KEY: 'hunter2' })).toThrow(/^ATTESTATION_SIGNING_KEY: PEM \(PKCS#8(?!.*hunter2)/);
      expect(() => loadConfig({ ATTESTATION_RETIRED_PUBLIC_KEYS: `${retired}\n-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----` }))
        .toThrow(/^ATTESTATION_RETIRED_PUBLIC_KEYS: public key 2: not a readable PEM public key/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('npm start\'s development key: Ed25519, created once with mode 0600, then read; a damaged file is an error, never replaced', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'attest-dev-'));
    try {
      const first = await loadOrCreateDevSigningKey(join(dir, 'data'));
      expect(first.created).toBe(true);
      expect((await stat(devSigningKeyPath(join(dir, 'data')))).mode & 0o777).toBe(0o600);
      const again = await loadOrCreateDevSigningKey(join(dir, 'data'));
      expect(again).toEqual({ pem: first.pem, created: false });
      expect(attestationSignerFrom({ ATTESTATION_SIGNING_KEY: first.pem })!.activeKey.algorithm).toBe('ed25519');
      await writeFile(devSigningKeyPath(join(dir, 'data')), 'garbage');
      await expect(loadOrCreateDevSigningKey(join(dir, 'data'))).rejects.toThrow(/dev-attestation-key.pem: not a readable unencrypted PEM private key/);
      expect(await readFile(devSigningKeyPath(join(dir, 'data')), 'utf8')).toBe('garbage');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // CI on a fresh clone (stop 28): two server processes starting at once, one read the key file the other had
  // created but not written yet ("not a readable unencrypted PEM private key") and exited.
  it('many first uses at once: one key and one secret are created, every caller gets them whole', async () => {
    for (let round = 0; round < 5; round++) {
      const dir = await mkdtemp(join(tmpdir(), 'attest-dev-race-'));
      try {
        const data = join(dir, 'data');
        const keys = await Promise.all(Array.from({ length: 24 }, async () => await loadOrCreateDevSigningKey(data)));
        expect(new Set(keys.map((k) => k.pem)).size).toBe(1);
        expect(keys.filter((k) => k.created)).toHaveLength(1);
        expect((await readFile(devSigningKeyPath(data), 'utf8')).trim()).toBe(keys[0]!.pem);
        const secrets = await Promise.all(Array.from({ length: 24 }, async () => await loadOrCreateDevSecret(data)));
        expect(new Set(secrets.map((s) => s.secret)).size).toBe(1);
        expect(secrets.filter((s) => s.created)).toHaveLength(1);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});
