import type { KeyObject } from 'node:crypto';
import { ConfigError, type AppConfig } from '../../config.js';
import {
  keyIdOf, parsePublicKeyPems, parseSigningKeyPem, publicKeyPemOf, signBytes, type AttestationKey, type SigningAlgorithm,
} from '../../domain/attestation/keys.js';
import type { AttestationSigner } from '../../domain/ports/signer.js';

/**
 * The attestation signer backed by keys from configuration: the signing key
 * (ATTESTATION_SIGNING_KEY[_FILE], or the development key `npm start` creates under DATA_DIR) and
 * the retired public keys (ATTESTATION_RETIRED_PUBLIC_KEYS[_FILE]) that are still listed after a
 * rotation, so that everything they signed keeps verifying. Signing happens in process with
 * node:crypto; the port lets a KMS-backed signer take its place.
 */
export class ConfiguredAttestationSigner implements AttestationSigner {
  readonly activeKey: AttestationKey;
  readonly #privateKey: KeyObject;
  readonly #algorithm: SigningAlgorithm;
  readonly #keys: readonly AttestationKey[];

  constructor (options: { signingKeyPem: string, retiredPublicKeysPem?: string | undefined }) {
    const signing = parseSigningKeyPem(options.signingKeyPem);
    if (!signing.ok) throw new ConfigError(`ATTESTATION_SIGNING_KEY: ${signing.problem}`);
    this.#privateKey = signing.value.key;
    this.#algorithm = signing.value.algorithm;
    this.activeKey = {
      keyId: keyIdOf(signing.value.key),
      algorithm: signing.value.algorithm,
      publicKeyPem: publicKeyPemOf(signing.value.key),
      retired: false,
    };
    const retired: AttestationKey[] = [];
    if (options.retiredPublicKeysPem) {
      const parsed = parsePublicKeyPems(options.retiredPublicKeysPem);
      if (!parsed.ok) throw new ConfigError(`ATTESTATION_RETIRED_PUBLIC_KEYS: ${parsed.problem}`);
      for (const key of parsed.value) {
        // The active key listed among the retired ones (a rotation half done) is listed once, as active.
        if (key.keyId === this.activeKey.keyId || retired.some((r) => r.keyId === key.keyId)) continue;
        retired.push({ keyId: key.keyId, algorithm: key.algorithm, publicKeyPem: publicKeyPemOf(key.key), retired: true });
      }
    }
    this.#keys = [this.activeKey, ...retired];
  }

  async sign (data: Uint8Array): Promise<{ keyId: string, signature: Uint8Array }> {
    return { keyId: this.activeKey.keyId, signature: signBytes(this.#privateKey, this.#algorithm, data) };
  }

  publicKeys (): readonly AttestationKey[] {
    return this.#keys;
  }
}

/**
 * The signer the configuration names; undefined when no signing key is configured (server.ts puts
 * the development key into the configuration first, so `npm start` always has one).
 */
export function attestationSignerFrom (config: Pick<AppConfig, 'ATTESTATION_SIGNING_KEY' | 'ATTESTATION_RETIRED_PUBLIC_KEYS'>): AttestationSigner | undefined {
  if (!config.ATTESTATION_SIGNING_KEY) return undefined;
  return new ConfiguredAttestationSigner({ signingKeyPem: config.ATTESTATION_SIGNING_KEY, retiredPublicKeysPem: config.ATTESTATION_RETIRED_PUBLIC_KEYS });
}
