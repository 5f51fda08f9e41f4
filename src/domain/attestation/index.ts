/**
 * Attestations (issue 21, docs/attestations.md): in-toto Statements v1 in DSSE envelopes, signed by
 * the server (port: ../ports/signer.ts) and verifiable offline — by `cloudly-release attestation
 * verify` and by `cosign verify-attestation`. Pure; node:crypto only.
 */
export * from './canonical.js';
export * from './chain.js';
export * from './dsse.js';
export * from './issuance.js';
export * from './keys.js';
export * from './oci.js';
export * from './refusal.js';
export * from './schemas.js';
export * from './sign.js';
export * from './statements.js';
export * from './verify.js';
export * from './verifyView.js';
export * from './view.js';
