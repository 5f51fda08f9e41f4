/**
 * The trust chain's pure side (issue 21, docs/trust.md): trust policy rules, the verification of a
 * digest's signatures and attestations, the verification-result cache and the SLSA Verification
 * Summary. The registry client (src/outbound/registry/) fetches what `verifyDigest` reads.
 */
export { LruVerificationCache, type VerificationCache } from './cache.js';
export { keylessVerifierFrom, type KeylessSigner, type KeylessThresholds, type KeylessVerifier } from './keyless.js';
export { parsePublicKey, type KeyAlgorithm, type TrustedKey } from './keys.js';
export { compileTrustPolicy, trustPolicyProblems, type CompiledTrustPolicy, type PolicyContext } from './policy.js';
export type { SignerName } from './signers.js';
export {
  buildVerificationSummary, canonicalJson, trustPolicyDigest, SLSA_PROVENANCE_V1, VERIFICATION_SUMMARY_PREDICATE_TYPE,
  type SummaryInput, type VerificationSummaryStatement,
} from './summary.js';
export {
  pinnedReference, trustRefusalError, verifyDigest,
  type TrustRefusalCode, type TrustVerdict, type VerifiedArtifact, type VerifiedAttestation, type VerifyDigestInput,
} from './verify.js';
export {
  ReleaseVerification, ReleaseVerificationView, RolloutTrustCheck, releaseVerificationOf, VerificationSigner,
} from './releaseVerification.js';
