import { errors, type AppError } from '../../errors.js';
import type { ArtifactSource, ImageLocator, SignatureArtifacts } from '../ports/registry.js';
import { readArtifacts, type Envelope, type SimpleSignature } from './artifacts.js';
import type { VerificationCache } from './cache.js';
import type { KeylessVerifier } from './keyless.js';
import type { CompiledTrustPolicy } from './policy.js';
import { describeSigner, envelopeSigner, simpleSignatureSigner, type SignerContext, type SignerName } from './signers.js';
import { namedImage } from './simpleSigning.js';

/**
 * The trust decision for one digest (issue 21): pure, from what the registry holds, the service's
 * compiled trust policy, the digest and its repository. A digest passes when a trusted signer's
 * valid signature names exactly this digest (and, for simple signing, this repository), and each
 * required predicate type has a trusted signer's valid attestation whose subject is this digest.
 * Otherwise the verdict names the first failing rule and what was found.
 */

export interface VerifyDigestInput {
  image: ImageLocator;
  fetched: SignatureArtifacts;
  policy: CompiledTrustPolicy;
  /** Present when the operator configured a Sigstore trusted root. */
  keyless?: KeylessVerifier;
  cache?: VerificationCache;
}

export interface VerifiedArtifact {
  signer: SignerName;
  /** The manifest the signature or attestation was read from. */
  artifactDigest: string;
  source: ArtifactSource;
  format: 'simple-signing' | 'dsse' | 'sigstore-bundle';
}

export interface VerifiedAttestation extends VerifiedArtifact {
  predicateType: string;
}

export type TrustRefusalCode = 'signature-missing' | 'signature-untrusted' | 'signature-digest-mismatch' | 'attestation-missing';

export type TrustVerdict =
  | { outcome: 'passed', image: string, signatures: VerifiedArtifact[], attestations: VerifiedAttestation[] }
  | { outcome: 'refused', code: TrustRefusalCode, image: string, detail: string, found: Record<string, unknown> };

const formatOf = (candidate: SimpleSignature | Envelope): VerifiedArtifact['format'] =>
  candidate.kind === 'simple-signing' ? 'simple-signing' : candidate.bundle === undefined ? 'dsse' : 'sigstore-bundle';

const verified = (candidate: SimpleSignature | Envelope, signer: SignerName): VerifiedArtifact =>
  ({ signer, artifactDigest: candidate.artifact.digest, source: candidate.artifact.source, format: formatOf(candidate) });

interface SignatureFindings {
  accepted: VerifiedArtifact[];
  mismatched: Array<{ signer: SignerName, namedDigest?: string, namedReference?: string }>;
  identities: Array<{ issuer: string, subject: string }>;
  keyHints: string[];
}

function judgeSignatures (candidates: Array<SimpleSignature | Envelope>, input: VerifyDigestInput, context: SignerContext): SignatureFindings {
  const findings: SignatureFindings = { accepted: [], mismatched: [], identities: [], keyHints: [] };
  for (const candidate of candidates) {
    const check = candidate.kind === 'simple-signing' ? simpleSignatureSigner(candidate, context) : envelopeSigner(candidate, context);
    if (candidate.kind === 'dsse' && candidate.keyHint !== undefined) findings.keyHints.push(candidate.keyHint);
    if (check.untrustedIdentity !== undefined) findings.identities.push(check.untrustedIdentity);
    if (check.signer === undefined) continue;
    if (candidate.kind === 'simple-signing') {
      const named = namedImage(candidate.payload, input.image);
      if (named.matches) findings.accepted.push(verified(candidate, check.signer));
      else findings.mismatched.push({ signer: check.signer, namedDigest: named.digest, namedReference: named.reference });
    } else if (candidate.statement?.subjectDigests.includes(input.image.digest) === true) {
      findings.accepted.push(verified(candidate, check.signer));
    } else {
      findings.mismatched.push({ signer: check.signer, namedDigest: candidate.statement?.subjectDigests.join(', ') });
    }
  }
  return findings;
}

function signatureRefusal (image: string, count: number, unreadable: number, findings: SignatureFindings, input: VerifyDigestInput): TrustVerdict {
  if (findings.mismatched.length > 0) {
    const first = findings.mismatched[0];
    const names = first === undefined ? '' : [first.namedDigest, first.namedReference].filter((v) => v !== undefined).join(' in ');
    return {
      outcome: 'refused',
      code: 'signature-digest-mismatch',
      image,
      detail: `${image}: the signature of ${first === undefined ? 'a trusted signer' : describeSigner(first.signer)} names ${names}, not this image`,
      found: {
        keyIds: unique(findings.mismatched.flatMap((m) => ('keyId' in m.signer ? [m.signer.keyId] : []))),
        namedDigests: unique(findings.mismatched.flatMap((m) => (m.namedDigest === undefined ? [] : [m.namedDigest]))),
        namedReferences: unique(findings.mismatched.flatMap((m) => (m.namedReference === undefined ? [] : [m.namedReference]))),
      },
    };
  }
  if (count === 0) {
    return {
      outcome: 'refused',
      code: 'signature-missing',
      image,
      detail: `${image} has no signature (looked at the OCI referrers and cosign's ${input.image.digest.replace(':', '-')}.sig tag)`,
      found: { artifacts: input.fetched.artifacts.length, unreadable, skipped: input.fetched.skipped.slice(0, 20) },
    };
  }
  const trustedKeyIds = input.policy.keys.map((k) => k.keyId);
  return {
    outcome: 'refused',
    code: 'signature-untrusted',
    image,
    detail: `${image} has ${count} signature${count === 1 ? '' : 's'}, none valid under the trusted ` +
      `keys (${trustedKeyIds.join(', ') || 'none'})${input.policy.identities.length > 0 ? ' or keyless identities' : ''}`,
    found: { signatures: count, trustedKeyIds, keyHints: unique(findings.keyHints), identities: findings.identities.slice(0, 20) },
  };
}

/** The digest-pinned reference (what `buildDigestPinnedImageReference` builds for canonical names; never throws). */
export const pinnedReference = (image: ImageLocator): string => `${image.registryHost}/${image.repository}@${image.digest}`;

const unique = (values: string[]): string[] => [...new Set(values)].slice(0, 20);

function judgeAttestations (candidates: Envelope[], input: VerifyDigestInput, context: SignerContext, image: string): TrustVerdict | VerifiedAttestation[] {
  const accepted: VerifiedAttestation[] = [];
  const unverified: string[] = [];
  for (const candidate of candidates) {
    const type = candidate.statement?.predicateType;
    if (type === undefined) continue;
    const { signer } = envelopeSigner(candidate, context);
    if (signer !== undefined && candidate.statement?.subjectDigests.includes(input.image.digest) === true) {
      accepted.push({ ...verified(candidate, signer), predicateType: type });
    } else {
      unverified.push(type);
    }
  }
  const present = unique(accepted.map((a) => a.predicateType));
  const missing = input.policy.requiredAttestations.filter((type) => !present.includes(type));
  if (missing.length === 0) return accepted.filter((a) => input.policy.requiredAttestations.includes(a.predicateType));
  return {
    outcome: 'refused',
    code: 'attestation-missing',
    image,
    detail: `${image} has no attestation of ${missing.join(', ')} signed by a trusted signer` +
      (present.length > 0 ? ` (verified: ${present.join(', ')})` : ''),
    found: { missing, present, unverified: unique(unverified) },
  };
}

export function verifyDigest (input: VerifyDigestInput): TrustVerdict {
  const image = pinnedReference(input.image);
  const context: SignerContext = { policy: input.policy, keyless: input.keyless, cache: input.cache };
  const read = readArtifacts(input.fetched);
  const findings = judgeSignatures(read.signatures, input, context);
  if (findings.accepted.length === 0) return signatureRefusal(image, read.signatures.length, read.unreadable, findings, input);
  const attestations = judgeAttestations(read.attestations, input, context, image);
  if (!Array.isArray(attestations)) return attestations;
  return { outcome: 'passed', image, signatures: findings.accepted, attestations };
}

/** The refusal as the coded error promotion answers with (422, details naming what was found). */
export function trustRefusalError (verdict: Extract<TrustVerdict, { outcome: 'refused' }>): AppError {
  const parts = { image: verdict.image, detail: verdict.detail, found: verdict.found };
  switch (verdict.code) {
    case 'signature-missing': return errors.signatureMissing(parts);
    case 'signature-untrusted': return errors.signatureUntrusted(parts);
    case 'signature-digest-mismatch': return errors.signatureDigestMismatch(parts);
    case 'attestation-missing': return errors.attestationMissing(parts);
  }
}
