import { dsse } from '@sigstore/core';
import type { VerificationCache } from './cache.js';
import type { Envelope, SimpleSignature } from './artifacts.js';
import { signatureValid, type TrustedKey } from './keys.js';
import type { KeylessVerifier } from './keyless.js';
import type { CompiledTrustPolicy } from './policy.js';

/**
 * Who signed a signature or an envelope, among the policy's trusted signers: the first trusted key
 * whose signature check passes (cached per signed content and key fingerprint), or the keyless
 * identity of a bundle's certificate when the trusted root vouches for it and the policy names it.
 */

export type SignerName = { keyId: string } | { issuer: string, subject: string };

export interface SignerCheck {
  signer?: SignerName;
  /** A keyless bundle's identity when it verified against the root but the policy does not name it. */
  untrustedIdentity?: { issuer: string, subject: string };
}

export interface SignerContext {
  policy: CompiledTrustPolicy;
  keyless?: KeylessVerifier;
  cache?: VerificationCache;
}

function checked (context: SignerContext, contentDigest: string, key: TrustedKey, check: () => boolean): boolean {
  const cacheKey = `${contentDigest}:${key.fingerprint}`;
  const known = context.cache?.get(cacheKey);
  if (known !== undefined) return known;
  const valid = check();
  context.cache?.set(cacheKey, valid);
  return valid;
}

export function simpleSignatureSigner (candidate: SimpleSignature, context: SignerContext): SignerCheck {
  const key = context.policy.keys.find((k) => checked(context, candidate.contentDigest, k, () => signatureValid(k, candidate.payload, candidate.signature)));
  return key === undefined ? {} : { signer: { keyId: key.keyId } };
}

export function envelopeSigner (candidate: Envelope, context: SignerContext): SignerCheck {
  const material = candidate.bundle?.verificationMaterial.content;
  if (material !== undefined && material.$case !== 'publicKey') return keylessSigner(candidate, context);
  // A bundle's hint names its key; a bare envelope's keyid is usually empty (cosign), so every key is tried.
  const hinted = context.policy.keys.filter((k) => k.hint === candidate.keyHint);
  const keys = hinted.length > 0 ? hinted : context.policy.keys;
  const pae = dsse.preAuthEncoding(candidate.envelope.payloadType, candidate.envelope.payload);
  const key = keys.find((k) => checked(context, candidate.contentDigest, k,
    () => candidate.envelope.signatures.some((signature) => signatureValid(k, pae, signature.sig))));
  return key === undefined ? {} : { signer: { keyId: key.keyId } };
}

function keylessSigner (candidate: Envelope, context: SignerContext): SignerCheck {
  if (candidate.bundle === undefined || context.keyless === undefined || context.policy.identities.length === 0) return {};
  const outcome = context.keyless.verify(candidate.bundle);
  if ('failure' in outcome) return {};
  const { issuer, subject } = outcome.signer;
  const trusted = context.policy.identities.some((identity) => identity.issuer === issuer && identity.matches(subject));
  return trusted ? { signer: { issuer, subject } } : { untrustedIdentity: { issuer, subject } };
}

export const describeSigner = (signer: SignerName): string =>
  'keyId' in signer ? `key ${signer.keyId}` : `${signer.subject} (issuer ${signer.issuer})`;
