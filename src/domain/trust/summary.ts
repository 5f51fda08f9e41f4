import { createHash } from 'node:crypto';
import type { ImageLocator } from '../ports/registry.js';
import { pinnedReference, type TrustVerdict } from './verify.js';

/**
 * The SLSA Verification Summary of a trust decision (https://slsa.dev/spec/v1.0/verification_summary):
 * an in-toto Statement v1 about the image digest, unsigned — the attestation signer wraps it in a
 * DSSE envelope. Pure: the caller names the verifier, the time and the policy's URI.
 */

export const VERIFICATION_SUMMARY_PREDICATE_TYPE = 'https://slsa.dev/verification_summary/v1';
export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';

export interface VerificationSummaryStatement {
  _type: 'https://in-toto.io/Statement/v1';
  subject: Array<{ name: string, digest: { sha256: string } }>;
  predicateType: typeof VERIFICATION_SUMMARY_PREDICATE_TYPE;
  predicate: {
    verifier: { id: string, version?: Record<string, string> };
    timeVerified: string;
    resourceUri: string;
    policy: { uri: string, digest: { sha256: string } };
    inputAttestations: Array<{ uri: string, digest: { sha256: string } }>;
    verificationResult: 'PASSED' | 'FAILED';
    verifiedLevels: string[];
    slsaVersion: '1.0';
  };
}

export interface SummaryInput {
  image: ImageLocator;
  verdict: TrustVerdict;
  /** The trust policy as stored (hashed as canonical JSON). */
  policy: unknown;
  /** Where the policy can be found, e.g. `https://cloudly.example.com/v1/services/<id>#trustPolicy`. */
  policyUri: string;
  verifier: { id: string, version?: Record<string, string> };
  /** Milliseconds since the epoch. */
  timeVerified: number;
}

/**
 * JSON with object members sorted by key at every depth and no whitespace (RFC 8785's ordering
 * for the values a policy holds: strings, integers, booleans, arrays, objects), so that the same
 * policy always has the same digest whatever order its members were written in.
 */
export function canonicalJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const members = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** sha256 hex of the policy's canonical JSON: the summary's `policy.digest.sha256`, and how a stored verification names its policy. */
export const trustPolicyDigest = (policy: unknown): string => createHash('sha256').update(canonicalJson(policy)).digest('hex');

const hex = (digest: string): string => digest.replace(/^sha256:/, '');

export function buildVerificationSummary (input: SummaryInput): VerificationSummaryStatement {
  const resourceUri = pinnedReference(input.image);
  const passed = input.verdict.outcome === 'passed';
  const used = input.verdict.outcome === 'passed' ? [...input.verdict.signatures, ...input.verdict.attestations] : [];
  const inputAttestations = [...new Set(used.map((artifact) => artifact.artifactDigest))].sort().map((digest) => ({
    uri: `${input.image.registryHost}/${input.image.repository}@${digest}`,
    digest: { sha256: hex(digest) },
  }));
  const provenanceVerified = input.verdict.outcome === 'passed' && input.verdict.attestations.some((a) => a.predicateType === SLSA_PROVENANCE_V1);
  return {
    _type: 'https://in-toto.io/Statement/v1',
    subject: [{ name: resourceUri, digest: { sha256: hex(input.image.digest) } }],
    predicateType: VERIFICATION_SUMMARY_PREDICATE_TYPE,
    predicate: {
      verifier: input.verifier,
      timeVerified: new Date(input.timeVerified).toISOString(),
      resourceUri,
      policy: { uri: input.policyUri, digest: { sha256: trustPolicyDigest(input.policy) } },
      inputAttestations,
      verificationResult: passed ? 'PASSED' : 'FAILED',
      // Only what was checked: a signed SLSA provenance attests Build L1; higher levels need facts about the builder this server does not have.
      verifiedLevels: provenanceVerified ? ['SLSA_BUILD_LEVEL_1'] : [],
      slsaVersion: '1.0',
    },
  };
}
