import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  attestationIdOf, revocationStatement, runtimeVerificationStatement, signStatement, svrStatement, type AttestationView, type SignedEnvelope,
} from '../../src/domain/attestation/index.js';
import { ConfiguredAttestationSigner } from '../../src/outbound/signer/index.js';
import { samplePlan, sampleReplicas, sampleRolloutPolicy, sha256Of, T0 } from './attestations.js';

/**
 * The example of docs/attestations.md, made by the real code: a fixed Ed25519 key (example only:
 * test/fixtures/attestation-example/, public half in docs/examples/attestation/example.pub), fixed
 * inputs, and Ed25519's deterministic signatures make the same bytes on every run, so
 * test/unit/docs/attestationsExample.test.ts can check the document against them.
 */

export const exampleKeyPem = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'attestation-example', 'example-signing-key.pem'), 'utf8');

const service = { id: 'svc_XmYIQs7m_TTdhM-Y', name: 'demo-shop' };
/** A trust policy as the service stores it (its schema comes with item 1 of issue 21; only its digest is attested). */
/** The ids the server gives them (attestationIdOf): the verifier checks a listing's id against what is signed. */
const runtimeId = attestationIdOf(service.id, samplePlan({ generation: 3 }).rolloutId, 'runtime-verification');
const revocationId = attestationIdOf(service.id, samplePlan({ generation: 3 }).rolloutId, 'revocation');
const trustPolicy = { keys: [{ keyId: 'release-ci', algorithm: 'ecdsa-p256' }], attestations: ['https://slsa.dev/provenance/v1'] };

const viewOf = (signed: SignedEnvelope, fields: Omit<AttestationView, 'keyId' | 'envelope' | 'digest'>): AttestationView =>
  ({ ...fields, keyId: signed.keyId, envelope: signed.envelope, digest: signed.digest });

/** The example rollout: 2 nodes × 1 replica (short enough to read), promotion of build 7, the 7th attestation of the service. */
function examplePlan () {
  const plan = samplePlan({ digest: sha256Of('demo-shop build 7'), generation: 3 });
  return { ...plan, targetScope: { targetClusterIds: ['cluster-1'], targetNodeNames: ['node-a', 'node-b'], replicasPerNode: 1, requiredReplicaCount: 2 } };
}

export async function attestationExample () {
  const signer = new ConfiguredAttestationSigner({ signingKeyPem: exampleKeyPem });
  const plan = examplePlan();
  const runtime = runtimeVerificationStatement({
    service,
    plan,
    outcome: 'succeeded',
    rolloutPolicy: sampleRolloutPolicy,
    trustPolicy,
    replicas: sampleReplicas(plan).filter((r) => r.slot === 1),
    verificationSummaryDigest: sha256Of('the VSA envelope of demo-shop build 7').slice(7),
    verifiedAt: T0 + 35_000,
    previous: { sequence: 6, envelopeDigest: sha256Of('the previous attestation of demo-shop').slice(7) },
  });
  const svr = svrStatement(runtime);
  const signed = await signStatement(runtime, signer);
  const summary = await signStatement(svr, signer);
  const revocation = revocationStatement({
    service,
    plan,
    revokes: { attestationId: runtimeId, envelopeDigest: signed.digest },
    reason: {
      kind: 'replica-mismatched',
      mismatchReason: 'pulled-digest-mismatch',
      detail: "replica 'node-b.1.g3' on node 'node-b' does not run the planned digest",
    },
    evidence: [{
      nodeName: 'node-b',
      deploymentId: 'node-b.1.g3',
      state: 'mismatched',
      mismatchReason: 'pulled-digest-mismatch',
      containerImageId: sha256Of('config of demo-shop build 8'),
      repoDigests: [`${plan.registryHost}/${plan.repository}@${sha256Of('demo-shop build 8')}`],
      observedAt: T0 + 3_600_000,
      reporter: { id: 'cluster:cluster-1', sessionId: 'coreflow-session-1' },
    }],
    revokedAt: T0 + 3_601_000,
    previous: { sequence: 7, envelopeDigest: signed.digest },
  });
  const revoked = await signStatement(revocation, signer);
  const common = { serviceId: service.id, rolloutId: plan.rolloutId, generation: plan.rolloutGeneration };
  return {
    signer,
    plan,
    runtime,
    svr,
    revocation,
    signed,
    summary,
    revoked,
    runtimeView: viewOf(signed, { id: runtimeId, ...common, kind: 'runtime-verification', issuedAt: T0 + 35_000, summaryEnvelope: summary.envelope }),
    revocationView: viewOf(revoked, { id: revocationId, ...common, kind: 'revocation', issuedAt: T0 + 3_601_000, revokes: runtimeId }),
  };
}
