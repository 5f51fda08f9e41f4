import type { AttestationKey } from '../attestation/keys.js';

/**
 * The attestation signer: the key the server signs attestations and verification summaries with,
 * and the public keys it lists (`GET /v1/attestation-keys`) so that anyone can verify them
 * offline. Implemented by src/outbound/signer/ (keys from configuration); a KMS or HSM adapter
 * would implement the same port. The domain builds the bytes to sign (DSSE PAE) and the envelope.
 */
export interface AttestationSigner {
  /** The key new signatures are made with (`retired: false`). */
  readonly activeKey: AttestationKey;
  /** Signs `data` with the active key: Ed25519, or ECDSA P-256 over SHA-256 with an ASN.1 DER signature. */
  sign(data: Uint8Array): Promise<{ keyId: string, signature: Uint8Array }>;
  /** The active key first, then every retired key still listed (attestations they signed still verify). */
  publicKeys(): readonly AttestationKey[];
}
