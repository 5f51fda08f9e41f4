import { createHash, generateKeyPairSync } from 'node:crypto';
import type { IImmutableImageDeploymentPlan } from '../../src/contracts/index.js';
import { buildDigestPinnedImageReference, validateImmutableImageDeploymentPlan } from '../../src/contracts/helpers.js';
import {
  attestationIdOf, parsePublicKeyPems, revocationStatement, runtimeVerificationStatement, signStatement, svrStatement,
  type ChainHead, type ReplicaEvidenceInput, type SignedEnvelope, type TrustedKey,
} from '../../src/domain/attestation/index.js';
import type { AttestationSigner } from '../../src/domain/ports/signer.js';
import { ConfiguredAttestationSigner } from '../../src/outbound/signer/index.js';

/**
 * Real attestations for tests: real keys (node:crypto), the real signer adapter, the real builders.
 * A rollout of 3 nodes × 2 replicas of one image, as the server would attest it.
 */

export type Algorithm = 'ed25519' | 'ecdsa-p256';

export function generateSigningKeyPem (algorithm: Algorithm): { privateKeyPem: string, publicKeyPem: string } {
  const { privateKey, publicKey } = algorithm === 'ed25519'
    ? generateKeyPairSync('ed25519')
    : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export interface TestSigner {
  signer: AttestationSigner;
  privateKeyPem: string;
  publicKeyPem: string;
  trusted: TrustedKey[];
}

export function testSigner (algorithm: Algorithm = 'ed25519', retiredPublicKeysPem?: string): TestSigner {
  const { privateKeyPem, publicKeyPem } = generateSigningKeyPem(algorithm);
  const signer = new ConfiguredAttestationSigner({ signingKeyPem: privateKeyPem, retiredPublicKeysPem });
  return { signer, privateKeyPem, publicKeyPem, trusted: trustedKeys(publicKeyPem) };
}

export function trustedKeys (pem: string): TrustedKey[] {
  const parsed = parsePublicKeyPems(pem);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.value;
}

export const sha256Of = (seed: string): `sha256:${string}` => `sha256:${createHash('sha256').update(seed).digest('hex')}`;

export const NODES = ['node-a', 'node-b', 'node-c'];
export const T0 = Date.UTC(2026, 11, 4, 12, 0, 0);

export interface PlanOptions { digest?: `sha256:${string}`, mode?: 'promotion' | 'rollback', generation?: number, host?: string, repository?: string }

export function samplePlan (opts: PlanOptions = {}) {
  const digest = opts.digest ?? sha256Of('demo-shop build 7');
  const host = opts.host ?? 'registry.example.com';
  const repository = opts.repository ?? 'demo/demo-shop';
  const mode = opts.mode ?? 'promotion';
  const plan: IImmutableImageDeploymentPlan = {
    policy: 'immutable-digest',
    rolloutId: `ro_${(opts.generation ?? 3).toString().padStart(4, '0')}-demo`,
    rolloutGeneration: opts.generation ?? 3,
    releaseId: 'demo-shop-v7',
    registryHost: host,
    repository,
    requestedDigest: digest,
    digestPinnedImageReference: buildDigestPinnedImageReference(host, repository, digest),
    manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
    createdAt: T0,
    mode,
    ...(mode === 'rollback' ? { rollbackOfRolloutId: 'ro_0002-demo' } : {}),
    targetScope: { targetClusterIds: ['cluster-1'], targetNodeNames: NODES, replicasPerNode: 2, requiredReplicaCount: NODES.length * 2 },
  };
  const problems = validateImmutableImageDeploymentPlan(plan);
  if (problems.length > 0) throw new Error(problems.join('; '));
  return plan;
}

export function sampleReplicas (plan: IImmutableImageDeploymentPlan): ReplicaEvidenceInput[] {
  return plan.targetScope.targetNodeNames.flatMap((node, n) => [1, 2].map((slot) => ({
    nodeName: node,
    deploymentId: `${node}.${slot}.g${plan.rolloutGeneration}`,
    slot,
    containerImageId: sha256Of(`config of ${plan.requestedDigest}`),
    repoDigests: [plan.digestPinnedImageReference],
    verifiedSince: T0 + 20_000 + n * 1_000 + slot * 100,
    reporterId: 'cluster:cluster-1',
    reporterSessionId: 'coreflow-session-1',
  })));
}

export interface SampleOptions {
  plan?: IImmutableImageDeploymentPlan;
  previous?: ChainHead | null;
  trustPolicy?: unknown;
  summaryDigest?: string | null;
  verifiedAt?: number;
}

export const sampleRolloutPolicy = { progressDeadlineSeconds: 600, stabilityWindowSeconds: 10, clockToleranceSeconds: 5 };

/** The runtime-verification statement of a sample rollout. */
export function sampleRuntimeStatement (opts: SampleOptions = {}) {
  const plan = opts.plan ?? samplePlan();
  return runtimeVerificationStatement({
    service: { id: 'svc_demo-shop', name: 'demo-shop' },
    plan,
    outcome: plan.mode === 'rollback' ? 'rolled-back' : 'succeeded',
    rolloutPolicy: sampleRolloutPolicy,
    trustPolicy: opts.trustPolicy,
    replicas: sampleReplicas(plan),
    verificationSummaryDigest: opts.summaryDigest ?? null,
    verifiedAt: opts.verifiedAt ?? T0 + 35_000,
    previous: opts.previous ?? null,
  });
}

export interface SampleAttestation {
  signed: SignedEnvelope;
  summary: SignedEnvelope;
  statement: ReturnType<typeof sampleRuntimeStatement>;
}

export async function signedSample (signer: AttestationSigner, opts: SampleOptions = {}): Promise<SampleAttestation> {
  const statement = sampleRuntimeStatement(opts);
  return { statement, signed: await signStatement(statement, signer), summary: await signStatement(svrStatement(statement), signer) };
}

/** A revocation of `revoked` (a replica of node-b now runs another digest). */
export async function signedRevocation (signer: AttestationSigner, revoked: SignedEnvelope, previous: ChainHead, plan = samplePlan()) {
  const statement = revocationStatement({
    service: { id: 'svc_demo-shop', name: 'demo-shop' },
    plan,
    revokes: { attestationId: attestationIdOf('svc_demo-shop', plan.rolloutId, 'runtime-verification'), envelopeDigest: revoked.digest },
    reason: {
      kind: 'replica-mismatched',
      mismatchReason: 'pulled-digest-mismatch',
      detail: "replica 'node-b.2.g3' on node 'node-b' does not run the planned digest",
    },
    evidence: [{
      nodeName: 'node-b',
      deploymentId: 'node-b.2.g3',
      state: 'mismatched',
      mismatchReason: 'pulled-digest-mismatch',
      containerImageId: sha256Of('config of another build'),
      repoDigests: [`${plan.registryHost}/${plan.repository}@${sha256Of('another build')}`],
      observedAt: T0 + 600_000,
      reporter: { id: 'cluster:cluster-1', sessionId: 'coreflow-session-1' },
    }],
    revokedAt: T0 + 601_000,
    previous,
  });
  return { statement, signed: await signStatement(statement, signer) };
}
