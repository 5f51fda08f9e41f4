import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { ed25519ph } from '@noble/curves/ed25519.js';

/**
 * The cosign public keys of a trust policy, parsed once, and the signature checks over them.
 * node:crypto verifies ECDSA P-256 (SHA-256, DER or IEEE P1363) and pure Ed25519; cosign signs
 * container images with Ed25519ph when given an Ed25519 key (RFC 8032's pre-hashed variant, which
 * node:crypto does not offer), checked with @noble/curves.
 */

export type KeyAlgorithm = 'ecdsa-p256' | 'ed25519';

export interface TrustedKey {
  keyId: string;
  algorithm: KeyAlgorithm;
  key: KeyObject;
  /** Hex sha256 of the key's DER SPKI: identifies the key material whatever id a policy gives it. */
  fingerprint: string;
  /** base64 sha256 of the DER SPKI: the `publicKey.hint` cosign writes into Sigstore bundles. */
  hint: string;
  /** Ed25519 only: the raw 32-byte public key. */
  raw?: Uint8Array;
}

export type KeyParse = { key: TrustedKey } | { problem: string };

export function parsePublicKey (keyId: string, pem: string): KeyParse {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    return { problem: 'is not a PEM public key (SPKI: -----BEGIN PUBLIC KEY-----)' };
  }
  const der = key.export({ type: 'spki', format: 'der' });
  const digest = createHash('sha256').update(der).digest();
  const base = { keyId, key, fingerprint: digest.toString('hex'), hint: digest.toString('base64') };
  if (key.asymmetricKeyType === 'ed25519') {
    const jwk = key.export({ format: 'jwk' });
    return { key: { ...base, algorithm: 'ed25519', raw: Buffer.from(jwk.x ?? '', 'base64url') } };
  }
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return { key: { ...base, algorithm: 'ecdsa-p256' } };
  }
  const curve = key.asymmetricKeyDetails?.namedCurve;
  const kind = `${key.asymmetricKeyType ?? 'unknown'}${curve === undefined ? '' : ` (${curve})`}`;
  return { problem: `is a ${kind} key: only ECDSA P-256 and Ed25519 keys are accepted` };
}

/** True when `signature` is the key's signature over exactly `data`. */
export function signatureValid (trusted: TrustedKey, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    if (trusted.algorithm === 'ecdsa-p256') {
      const dsaEncoding = signature.length === 64 ? 'ieee-p1363' : 'der';
      return verify('sha256', data, { key: trusted.key, dsaEncoding }, signature);
    }
    if (signature.length !== 64) return false;
    if (verify(null, data, trusted.key, signature)) return true;
    return trusted.raw !== undefined && ed25519ph.verify(signature, data, trusted.raw);
  } catch {
    // A malformed signature (bad DER, a point not on the curve) is simply not a valid one.
    return false;
  }
}
