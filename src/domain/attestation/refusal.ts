/**
 * Why an attestation is refused: a stable code (scripts match on it) and a reason that says exactly
 * what failed (people read it). Every check of verify.ts and chain.ts ends in one of these.
 */
export const refusalCodes = [
  'envelope-malformed', 'payload-type-unsupported', 'signature-missing', 'signature-untrusted', 'signature-invalid',
  'statement-malformed', 'predicate-type-unsupported', 'subject-malformed', 'subject-inconsistent', 'subject-digest-mismatch',
  'predicate-invalid', 'predicate-inconsistent', 'replicas-incomplete', 'replicas-duplicated', 'replica-outside-scope',
  'replica-evidence-mismatch', 'chain-link-invalid', 'chain-service-mismatch', 'chain-start-mismatch', 'chain-forked',
  'chain-reordered', 'chain-gap', 'chain-broken', 'view-inconsistent', 'summary-invalid',
] as const;
export type RefusalCode = typeof refusalCodes[number];

export interface Refusal {
  code: RefusalCode;
  reason: string;
}

export type Checked<T> = { ok: true, value: T } | { ok: false, refusal: Refusal };

export const accept = <T>(value: T): Checked<T> => ({ ok: true, value });
export const refuse = <T = never>(code: RefusalCode, reason: string): Checked<T> => ({ ok: false, refusal: { code, reason } });
