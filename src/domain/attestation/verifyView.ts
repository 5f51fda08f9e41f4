import { accept, refuse, type Checked } from './refusal.js';
import { attestationKinds, REVOCATION_TYPE, RUNTIME_VERIFICATION_TYPE, SVR_TYPE } from './schemas.js';
import { firstSchemaError, verifyEnvelope, type VerifiedAttestation, type VerifyOptions } from './verify.js';
import { AttestationView } from './view.js';

export interface VerifiedView {
  attestation: VerifiedAttestation;
  /** The SVR that came with a runtime verification, verified too. */
  summary?: VerifiedAttestation;
}

/** What the view says beside its envelope must be what the verified statement says. */
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
  const revokes = 'revokes' in p ? p.revokes.attestationId : undefined;
  if (view.revokes !== revokes) return differs('revokes', view.revokes, revokes);
  return accept(true);
}

/**
 * Verifies an attestation as the API lists it (AttestationView): its envelope, that the listing
 * agrees with what is signed, and its SVR (summaryEnvelope) when there is one — signed by a trusted
 * key, about the same image.
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
  if (view.summaryEnvelope === undefined) return accept({ attestation: attestation.value });
  const summary = verifyEnvelope(view.summaryEnvelope, { keys: options.keys, expectedDigest: attestation.value.subject.digest, predicateTypes: [SVR_TYPE] });
  if (!summary.ok) return refuse('summary-invalid', `the SVR summary envelope is refused (${summary.refusal.code}): ${summary.refusal.reason}`);
  if (summary.value.subject.name !== attestation.value.subject.name) {
    return refuse('summary-invalid', `the SVR names ${summary.value.subject.name}, the attestation ${attestation.value.subject.name}`);
  }
  return accept({ attestation: attestation.value, summary: summary.value });
}
