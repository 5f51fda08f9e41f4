/**
 * Project extension (not upstream): `data.trustPolicy`, which signatures and attestations a digest
 * needs before a rollout of it is issued (issue 21, docs/trust.md). Caller-writable; absent = no
 * verification (the behaviour before trust policies). When present, a digest needs at least one
 * valid signature by one of the policy's signers that names exactly this digest and repository, and
 * one valid attestation by one of them for each required predicate type.
 *
 * The schema bounds every member; what it cannot see (a PEM that does not parse or is not an ECDSA
 * P-256 or Ed25519 key, duplicate key ids, a subject pattern that does not compile, no signer at all)
 * is checked by `trustPolicyProblems` (src/domain/trust/policy.ts).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Timestamp, strictObject } from './common.js';

export const trustPolicyLimits = {
  publicKeys: 32,
  keylessIdentities: 32,
  requiredAttestations: 16,
  keyIdLength: 128,
  pemLength: 8192,
  uriLength: 1024,
  patternLength: 512,
  descriptionLength: 256,
} as const;

/** The predicate type a signature made with `cosign sign --new-bundle-format` carries (it is a signature, not an attestation). */
export const COSIGN_SIGN_PREDICATE_TYPE = 'https://sigstore.dev/cosign/sign/v1';

export const ICosignPublicKey = strictObject({
  keyId: Type.String({
    minLength: 1,
    maxLength: trustPolicyLimits.keyIdLength,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$',
    description: 'a name for the key, unique in the policy: verdicts and verification summaries name the key by it (e.g. `ci-2026`)',
  }),
  publicKeyPem: Type.String({
    minLength: 1,
    maxLength: trustPolicyLimits.pemLength,
    pattern: '-----BEGIN PUBLIC KEY-----',
    description: 'the public key as PEM (SPKI), ECDSA P-256 or Ed25519, e.g. cosign.pub from `cosign generate-key-pair`',
  }),
  description: Type.Optional(Type.String({ maxLength: trustPolicyLimits.descriptionLength })),
});
export type ICosignPublicKey = Static<typeof ICosignPublicKey>;

export const IKeylessIdentity = strictObject({
  issuer: Type.String({
    minLength: 1,
    maxLength: trustPolicyLimits.uriLength,
    description: 'the OIDC issuer the signing certificate names, compared exactly (e.g. `https://token.actions.githubusercontent.com`)',
  }),
  subject: Type.Optional(Type.String({
    minLength: 1,
    maxLength: trustPolicyLimits.uriLength,
    description: 'the certificate subject (an e-mail address or URI), compared exactly; give this or subjectPattern',
  })),
  subjectPattern: Type.Optional(Type.String({
    minLength: 1,
    maxLength: trustPolicyLimits.patternLength,
    description: 'a regular expression (JavaScript syntax) the whole certificate subject must match, e.g. ' +
      '`https://github.com/acme/shop/\\.github/workflows/release\\.yml@refs/tags/v.*`; give this or subject',
  })),
});
export type IKeylessIdentity = Static<typeof IKeylessIdentity>;

export const ITrustPolicy = strictObject({
  publicKeys: Type.Optional(Type.Array(ICosignPublicKey, {
    maxItems: trustPolicyLimits.publicKeys,
    description: 'cosign public keys whose signatures are trusted (default: none)',
  })),
  keylessIdentities: Type.Optional(Type.Array(IKeylessIdentity, {
    maxItems: trustPolicyLimits.keylessIdentities,
    description: 'Sigstore keyless signers trusted, checked against the trusted root the operator configured (SIGSTORE_TRUSTED_ROOT_FILE); default: none',
  })),
  requiredAttestations: Type.Optional(Type.Array(Type.String({
    minLength: 1,
    maxLength: trustPolicyLimits.uriLength,
    pattern: '^[a-z][a-z0-9+.-]*:[^\\s]+$',
    description: 'an in-toto predicate type URI, e.g. `https://slsa.dev/provenance/v1`',
  }), {
    maxItems: trustPolicyLimits.requiredAttestations,
    uniqueItems: true,
    description: 'predicate types the digest needs an attestation of, each signed by one of the trusted signers (default: none)',
  })),
});
export type ITrustPolicy = Static<typeof ITrustPolicy>;

/**
 * A release's signature verdict in brief, as release listings answer it (the full verification, with the
 * signed Verification Summary, is `GET /v1/services/:serviceId/image-releases/:releaseId/verification`).
 */
export const IReleaseSignatureVerdict = strictObject({
  verdict: Type.Literal('passed'),
  verifiedAt: Timestamp,
  /** sha256 hex of the trust policy's canonical JSON it passed. */
  policyDigest: Type.String({ pattern: '^[0-9a-f]{64}$' }),
  signers: Type.Array(Type.Union([
    strictObject({ keyId: Type.String() }),
    strictObject({ issuer: Type.String(), subject: Type.String() }),
  ]), { description: 'who signed: a trusted key by its keyId, or a Sigstore keyless identity' }),
  /** The required predicate types verified. */
  attestations: Type.Array(Type.String()),
  /** sha256 hex of the signed Verification Summary envelope. */
  summaryDigest: Type.String(),
});
export type IReleaseSignatureVerdict = Static<typeof IReleaseSignatureVerdict>;
