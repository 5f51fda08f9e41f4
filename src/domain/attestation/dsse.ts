import { Type, type Static } from '@sinclair/typebox';
import { canonicalDigest } from './canonical.js';

/**
 * DSSE v1 (secure-systems-lab/dsse, protocol.md and envelope.md, 1.0.2): the JSON envelope and
 * the Pre-Authentication Encoding every signature is computed over. The in-toto payload type is
 * the only one this project signs or accepts.
 */

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

/** Bounds: an attestation of a 4,096-node rollout with a few replicas per node fits comfortably. */
export const envelopeLimits = { payloadLength: 16 * 1024 * 1024, signatures: 16, sigLength: 1024, keyIdLength: 256 } as const;

export const DsseSignature = Type.Object({
  // Optional as DSSE says (unset = empty); this project always sets it.
  keyid: Type.Optional(Type.String({
    maxLength: envelopeLimits.keyIdLength,
    description: 'unauthenticated hint: the lower-case hex sha256 of the signing key\'s SPKI DER',
  })),
  sig: Type.String({ minLength: 1, maxLength: envelopeLimits.sigLength, description: 'base64 of the signature over PAE(payloadType, payload)' }),
}, { additionalProperties: false });
export type DsseSignature = Static<typeof DsseSignature>;

export const DsseEnvelope = Type.Object({
  payloadType: Type.String({ minLength: 1, maxLength: 256 }),
  payload: Type.String({ maxLength: envelopeLimits.payloadLength, description: 'base64 of the serialized in-toto Statement' }),
  signatures: Type.Array(DsseSignature, { maxItems: envelopeLimits.signatures }),
}, { additionalProperties: false, description: 'a DSSE JSON envelope (github.com/secure-systems-lab/dsse envelope.md)' });
export type DsseEnvelope = Static<typeof DsseEnvelope>;

/**
 * PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, LEN = the byte length in
 * ASCII decimal without leading zeros. `type` is taken as UTF-8.
 */
export function pae (payloadType: string, body: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'ascii'),
    type,
    Buffer.from(` ${body.length} `, 'ascii'),
    body,
  ]);
}

const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const URL_SAFE_BASE64 = /^[A-Za-z0-9_-]*={0,2}$/;

/**
 * Decodes base64, standard or URL-safe (DSSE: verifiers MUST accept either); undefined when the
 * text is not base64 — Buffer.from would skip the characters it does not know and decode the rest.
 */
export function decodeBase64 (text: string): Buffer | undefined {
  if (text.length % 4 === 1) return undefined;
  if (STANDARD_BASE64.test(text)) return Buffer.from(text, 'base64');
  if (URL_SAFE_BASE64.test(text)) return Buffer.from(text, 'base64url');
  return undefined;
}

/**
 * The envelope's digest: lower-case hex sha256 of its canonical JSON (RFC 8785). It names an
 * attestation in the hash chain (`previous`), in a revocation (`revokes`) and in the API (`digest`).
 */
export const envelopeDigest = (envelope: DsseEnvelope): string =>
  canonicalDigest({ payloadType: envelope.payloadType, payload: envelope.payload, signatures: envelope.signatures });
