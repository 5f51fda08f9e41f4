import { Type, type Static } from '@sinclair/typebox';
import { literalUnion } from '../../contracts/literals.js';
import type { IReleaseSignatureVerdict } from '../../contracts/trustPolicy.js';
import { DsseEnvelope } from '../attestation/dsse.js';
import { canonicalJson } from './summary.js';
import type { TrustVerdict } from './verify.js';

/**
 * What a promotion of a service with a trust policy keeps of the verification it passed (issue 21,
 * docs/trust.md "Verification before promotion"): the verdict, who signed, under which policy (its
 * digest), and the SLSA Verification Summary the server signed — stored with the rollout that
 * relied on it and with its release, answered with the release. A rollback or abort to a release
 * whose stored verification was made under the policy in force relies on it instead of the registry.
 */

export const VerificationSigner = Type.Union([
  Type.Object({ keyId: Type.String() }, { additionalProperties: false }),
  Type.Object({ issuer: Type.String(), subject: Type.String() }, { additionalProperties: false }),
], { description: 'a trusted key by its keyId in the policy, or a Sigstore keyless identity' });

export const ReleaseVerification = Type.Object({
  verdict: Type.Literal('passed'),
  /** When the server verified the digest (milliseconds since the epoch). */
  verifiedAt: Type.Integer(),
  /** The digest-pinned reference verified. */
  image: Type.String(),
  /** Lower-case hex sha256 of the trust policy's canonical JSON (members sorted): which policy it passed. */
  policyDigest: Type.String({ pattern: '^[0-9a-f]{64}$' }),
  signers: Type.Array(VerificationSigner, { description: 'who made the valid signatures that name this digest' }),
  attestations: Type.Array(Type.Object({ predicateType: Type.String(), signer: VerificationSigner }, { additionalProperties: false }), {
    description: 'the required attestations, and who signed each',
  }),
  summary: Type.Object({
    envelope: DsseEnvelope,
    /** Lower-case hex sha256 of the envelope's canonical JSON. */
    digest: Type.String(),
    /** The server's attestation key that signed it (GET /v1/attestation-keys lists it). */
    keyId: Type.String(),
  }, { additionalProperties: false, description: 'the SLSA Verification Summary (https://slsa.dev/verification_summary/v1), a DSSE envelope signed by the server' }),
}, { additionalProperties: false });
export type ReleaseVerification = Static<typeof ReleaseVerification>;

/**
 * How the rollout was let through the signature rule: the registry was asked (`registry`), or the
 * release's stored verification under the same policy was relied on (`stored-summary`, a rollback or
 * abort). `storedPolicyDigest`: the release had a verification under another policy, so it was re-checked.
 */
export const RolloutTrustCheck = Type.Object({
  basis: literalUnion(['registry', 'stored-summary']),
  policyDigest: Type.String(),
  storedPolicyDigest: Type.Optional(Type.String({
    description: 'the policy digest of the stored verification a re-check replaced (the policy changed since)',
  })),
  summaryDigest: Type.String({ description: 'the digest of the verification summary relied on' }),
}, { additionalProperties: false, description: 'how the signature rule admitted the rollout (services with a trust policy only)' });
export type RolloutTrustCheck = Static<typeof RolloutTrustCheck>;

/** The release's verification view: absent until a rollout of it passed a trust policy. */
export const ReleaseVerificationView = Type.Object({
  releaseId: Type.String(),
  verification: Type.Optional(ReleaseVerification),
}, { additionalProperties: false });
export type ReleaseVerificationView = Static<typeof ReleaseVerificationView>;

/** The verification of a passed verdict, once its summary is signed. */
export function releaseVerificationOf (
  verdict: Extract<TrustVerdict, { outcome: 'passed' }>, policyDigest: string, verifiedAt: number, summary: ReleaseVerification['summary']
): ReleaseVerification {
  const signers = verdict.signatures.map((s) => s.signer).filter((signer, i, all) => all.findIndex((o) => canonicalJson(o) === canonicalJson(signer)) === i);
  return {
    verdict: 'passed',
    verifiedAt,
    image: verdict.image,
    policyDigest,
    signers,
    attestations: verdict.attestations.map((a) => ({ predicateType: a.predicateType, signer: a.signer })),
    summary,
  };
}

/** The verdict in brief, as release listings answer it. */
export const signatureVerdictOf = (v: ReleaseVerification): IReleaseSignatureVerdict => ({
  verdict: v.verdict,
  verifiedAt: v.verifiedAt,
  policyDigest: v.policyDigest,
  signers: v.signers,
  attestations: v.attestations.map((a) => a.predicateType),
  summaryDigest: v.summary.digest,
});
