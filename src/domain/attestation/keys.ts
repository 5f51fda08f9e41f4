import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { literalUnion } from '../../contracts/literals.js';
import { sha256Hex } from './canonical.js';

/**
 * The keys attestations are signed and verified with: Ed25519 or ECDSA P-256 (SHA-256, ASN.1 DER
 * signatures — what cosign, sigstore and openssl produce and accept). A key's id is the lower-case
 * hex SHA-256 of its public key's DER SubjectPublicKeyInfo, so anyone holding the PEM computes it:
 * `openssl pkey -pubin -in key.pub -outform DER | sha256sum`.
 */

export const signingAlgorithms = ['ed25519', 'ecdsa-p256'] as const;
export const SigningAlgorithm = literalUnion(signingAlgorithms);
export type SigningAlgorithm = Static<typeof SigningAlgorithm>;

/** `GET /v1/attestation-keys` lists these: the active key and every retired one still trusted for old attestations. */
export const AttestationKey = Type.Object({
  keyId: Type.String({ pattern: '^[a-f0-9]{64}$', description: 'lower-case hex sha256 of the public key\'s DER SubjectPublicKeyInfo' }),
  algorithm: SigningAlgorithm,
  publicKeyPem: Type.String({ description: 'PEM (SPKI) public key' }),
  retired: Type.Boolean({ description: 'true: no longer signs; listed so that attestations it signed still verify' }),
}, { additionalProperties: false });
export type AttestationKey = Static<typeof AttestationKey>;

/** A public key a verifier trusts: its id, algorithm and the key itself. */
export interface TrustedKey {
  keyId: string;
  algorithm: SigningAlgorithm;
  key: KeyObject;
}

/** A library error as one line (a configuration error is one line). */
const oneLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();

export type KeyParse<T> = { ok: true, value: T } | { ok: false, problem: string };

/** The algorithm of a key, when it is one this project signs with. */
export function algorithmOf (key: KeyObject): SigningAlgorithm | undefined {
  if (key.asymmetricKeyType === 'ed25519') return 'ed25519';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ecdsa-p256';
  return undefined;
}

const describeKey = (key: KeyObject): string => key.asymmetricKeyType === 'ec'
  ? `an EC key on ${key.asymmetricKeyDetails?.namedCurve ?? 'an unknown curve'}`
  : `a ${key.asymmetricKeyType ?? 'symmetric'} key`;

/** The key id of a public key (a private key's public half). */
export const keyIdOf = (key: KeyObject): string => {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return sha256Hex(publicKey.export({ type: 'spki', format: 'der' }));
};

export const publicKeyPemOf = (key: KeyObject): string =>
  (key.type === 'private' ? createPublicKey(key) : key).export({ type: 'spki', format: 'pem' }).toString();

/** A signing key from PEM (PKCS#8, unencrypted): Ed25519 or ECDSA P-256, else why not. */
export function parseSigningKeyPem (pem: string): KeyParse<{ key: KeyObject, algorithm: SigningAlgorithm }> {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (err) {
    return { ok: false, problem: `not a readable unencrypted PEM private key (${oneLine(err)})` };
  }
  const algorithm = algorithmOf(key);
  if (algorithm === undefined) return { ok: false, problem: `${describeKey(key)}: only Ed25519 and ECDSA P-256 keys sign attestations` };
  return { ok: true, value: { key, algorithm } };
}

const PEM_PUBLIC_KEY = /-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g;

/** Every public key of a PEM bundle (SPKI blocks), each Ed25519 or ECDSA P-256; else the first problem. */
export function parsePublicKeyPems (bundle: string): KeyParse<TrustedKey[]> {
  const blocks = bundle.match(PEM_PUBLIC_KEY) ?? [];
  if (blocks.length === 0) return { ok: false, problem: 'no -----BEGIN PUBLIC KEY----- block' };
  const keys: TrustedKey[] = [];
  for (const [index, block] of blocks.entries()) {
    let key: KeyObject;
    try {
      key = createPublicKey({ key: block, format: 'pem' });
    } catch (err) {
      return { ok: false, problem: `public key ${index + 1}: not a readable PEM public key (${oneLine(err)})` };
    }
    const algorithm = algorithmOf(key);
    if (algorithm === undefined) {
      return { ok: false, problem: `public key ${index + 1} is ${describeKey(key)}: only Ed25519 and ECDSA P-256 keys are accepted` };
    }
    keys.push({ keyId: keyIdOf(key), algorithm, key });
  }
  return { ok: true, value: keys };
}

/** Signs bytes: Ed25519 (pure), or ECDSA P-256 over SHA-256 with a DER signature. */
export function signBytes (key: KeyObject, algorithm: SigningAlgorithm, data: Uint8Array): Buffer {
  return algorithm === 'ed25519' ? sign(null, data, key) : sign('sha256', data, { key, dsaEncoding: 'der' });
}

/** Whether `signature` is the key's signature over `data`; a malformed signature is simply not one. */
export function verifyBytes (key: KeyObject, algorithm: SigningAlgorithm, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    return algorithm === 'ed25519'
      ? verify(null, data, key, signature)
      : verify('sha256', data, { key, dsaEncoding: 'der' }, signature);
  } catch {
    return false;
  }
}
