import type { Bundle } from '@sigstore/bundle';
import { TrustedRoot } from '@sigstore/protobuf-specs';
import { toSignedEntity, toTrustMaterial, Verifier } from '@sigstore/verify';

/**
 * Sigstore keyless signatures (a Fulcio-style certificate in a Sigstore bundle), verified by
 * @sigstore/verify against the trusted root the operator supplies (SIGSTORE_TRUSTED_ROOT_FILE: the
 * `trusted_root.json` of the Sigstore instance, e.g. from `cosign trusted-root create` or the TUF
 * repository, fetched by the operator — never at run time). The certificate must chain to a CA of the
 * root at a time vouched for by a transparency-log entry or an RFC 3161 timestamp of the root, and
 * carry an SCT of one of its CT logs; the signer is then named by the certificate's subject and OIDC issuer.
 */

export interface KeylessSigner {
  issuer: string;
  subject: string;
}

export interface KeylessVerifier {
  /** The signer when the bundle verifies against the trusted root, else the reason it does not. */
  verify(bundle: Bundle): { signer: KeylessSigner } | { failure: string };
}

export interface KeylessThresholds {
  /** Transparency-log entries a bundle must carry (default 1). */
  tlogThreshold?: number;
  /** Signed certificate timestamps the certificate must carry (default 1). */
  ctlogThreshold?: number;
  /** Verified times (tlog integration times and RFC 3161 timestamps) needed (default 1; never 0: the certificate is checked at them). */
  timestampThreshold?: number;
}

/** Parses a trusted root (JSON of `dev.sigstore.trustroot.v1.TrustedRoot`); throws with a one-line reason when it is not one. */
export function keylessVerifierFrom (trustedRootJson: unknown, thresholds: KeylessThresholds = {}): KeylessVerifier {
  const root = TrustedRoot.fromJSON(trustedRootJson);
  if (root.certificateAuthorities.length === 0) throw new Error('the trusted root names no certificate authority');
  const material = toTrustMaterial(root);
  const verifier = new Verifier(material, {
    tlogThreshold: thresholds.tlogThreshold ?? 1,
    ctlogThreshold: thresholds.ctlogThreshold ?? 1,
    timestampThreshold: Math.max(1, thresholds.timestampThreshold ?? 1),
  });
  return {
    verify: (bundle) => {
      try {
        const signer = verifier.verify(toSignedEntity(bundle));
        const subject = signer.identity?.subjectAlternativeName;
        const issuer = signer.identity?.extensions?.issuer;
        if (subject === undefined || issuer === undefined) return { failure: 'the certificate names no subject or no OIDC issuer' };
        return { signer: { issuer, subject } };
      } catch (err) {
        return { failure: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}
