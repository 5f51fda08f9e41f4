import { canonicalJson } from './canonical.js';
import { attestationIdOf } from './issuance.js';
import { accept, refuse, type Checked } from './refusal.js';
import { attestationKinds, REVOCATION_TYPE, RUNTIME_VERIFICATION_TYPE, SVR_TYPE, type RuntimeVerificationPredicate } from './schemas.js';
import { svrStatement, type StatementOf } from './statements.js';
import { firstSchemaError, verifyEnvelope, type VerifiedAttestation, type VerifyOptions } from './verify.js';
import { AttestationView } from './view.js';

export interface VerifiedView {
  attestation: VerifiedAttestation;
  /** The SVR that came with a runtime verification, verified too. */
  summary?: VerifiedAttestation;
}

/**
 * What the view says beside its envelope must be what the verified statement says. The id and the
 * issue time are not signed, but the server derives both from what is: the id from the service, the
 * rollout and the kind (attestationIdOf — a revocation's signed `revokes` names it), the time is the
 * outcome's (`verifiedAt`) or the revocation's (`revokedAt`).
 */
function checkViewAgrees (view: AttestationView, a: VerifiedAttestation): Checked<true> {
  const differs = (field: string, stated: unknown, actual: unknown): Checked<true> =>
    refuse('view-inconsistent', `the listing's ${field} is ${JSON.stringify(stated)}, the signed envelope's is ${JSON.stringify(actual)}`);
  if (view.digest !== a.envelopeDigest) return differs('digest', view.digest, a.envelopeDigest);
  if (view.keyId !== a.keyId) return differs('keyId', view.keyId, a.keyId);
  if (a.predicateType === SVR_TYPE) return refuse('view-inconsistent', 'the listing\'s envelope is an SVR; it belongs in summaryEnvelope');
  const kind = attestationKinds[a.predicateType];
  if (view.kind !== kind) return differs('kind', view.kind, kind);
  const p = a.predicate;
  if (view.serviceId !== p.service.id) return differs('serviceId', view.serviceId, p.service.id);
  if (view.rolloutId !== p.rollout.id) return differs('rolloutId', view.rolloutId, p.rollout.id);
  if (view.generation !== p.rollout.generation) return differs('generation', view.generation, p.rollout.generation);
  const id = attestationIdOf(p.service.id, p.rollout.id, kind);
  if (view.id !== id) return differs('id', view.id, id);
  const issuedAt = Date.parse('verifiedAt' in p ? p.verifiedAt : p.revokedAt);
  if (view.issuedAt !== issuedAt) return differs('issuedAt', view.issuedAt, issuedAt);
  const revokes = 'revokes' in p ? p.revokes.attestationId : undefined;
  if (view.revokes !== revokes) return differs('revokes', view.revokes, revokes);
  return accept(true);
}

/**
 * The SVR restates the runtime verification (svrStatement): the same image, verifier, policies, time
 * and properties. An SVR signed by a trusted key that says anything else is not this outcome's.
 */
function checkSummaryAgrees (a: VerifiedAttestation, summary: VerifiedAttestation): Checked<true> {
  if (summary.subject.name !== a.subject.name) {
    return refuse('summary-invalid', `the SVR names ${summary.subject.name}, the attestation ${a.subject.name}`);
  }
  if (a.predicateType !== RUNTIME_VERIFICATION_TYPE || summary.predicateType !== SVR_TYPE) return accept(true);
  const expected = svrStatement({ ...a.statement, predicate: a.predicate } as StatementOf<RuntimeVerificationPredicate>).predicate;
  const stated = summary.predicate;
  const members: Array<[string, unknown, unknown]> = [
    ['verifier id', stated.verifier.id, expected.verifier.id],
    ['policies', stated.verifier.policies, expected.verifier.policies],
    ['timeCreated', stated.timeCreated, expected.timeCreated],
    ['properties', [...stated.properties].sort(), [...expected.properties].sort()],
  ];
  for (const [member, actual, wanted] of members) {
    if (canonicalJson(actual) !== canonicalJson(wanted)) {
      return refuse('summary-invalid', `the SVR's ${member} ${JSON.stringify(actual)} ${member.endsWith('s') ? 'are' : 'is'} ` +
        `not what the runtime verification states (${JSON.stringify(wanted)})`);
    }
  }
  return accept(true);
}

/**
 * Verifies an attestation as the API lists it (AttestationView): its envelope, that the listing
 * agrees with what is signed, and its SVR (summaryEnvelope) — a runtime verification is always
 * listed with one, a revocation never — signed by a trusted key and restating the same outcome.
 */
export function verifyAttestationView (input: unknown, options: VerifyOptions): Checked<VerifiedView> {
  const problem = firstSchemaError(AttestationView, input);
  if (problem !== undefined) {
    // An envelope that does not even parse says more than the listing around it.
    const envelope = (input as { envelope?: unknown } | null)?.envelope;
    if (problem.startsWith('/envelope')) return verifyEnvelope(envelope, options) as Checked<never>;
    return refuse('view-inconsistent', `not an attestation listing: ${problem}`);
  }
  const view = input as AttestationView;
  const attestation = verifyEnvelope(view.envelope, { ...options, predicateTypes: [RUNTIME_VERIFICATION_TYPE, REVOCATION_TYPE] });
  if (!attestation.ok) return attestation;
  const agrees = checkViewAgrees(view, attestation.value);
  if (!agrees.ok) return agrees;
  const isRuntime = attestation.value.predicateType === RUNTIME_VERIFICATION_TYPE;
  if (view.summaryEnvelope === undefined) {
    if (!isRuntime) return accept({ attestation: attestation.value });
    return refuse('summary-invalid', 'a runtime verification is listed with its SVR (summaryEnvelope); this listing has none');
  }
  if (!isRuntime) return refuse('summary-invalid', 'a revocation is listed without an SVR; this listing has a summaryEnvelope');
  const summary = verifyEnvelope(view.summaryEnvelope, { keys: options.keys, expectedDigest: attestation.value.subject.digest, predicateTypes: [SVR_TYPE] });
  if (!summary.ok) return refuse('summary-invalid', `the SVR summary envelope is refused (${summary.refusal.code}): ${summary.refusal.reason}`);
  const restates = checkSummaryAgrees(attestation.value, summary.value);
  if (!restates.ok) return restates;
  return accept({ attestation: attestation.value, summary: summary.value });
}
