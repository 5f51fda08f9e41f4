import type { IImmutableImageDeploymentPlan } from '../../contracts/index.js';
import { canonicalDigest } from './canonical.js';
import {
  REVOCATION_TYPE, RUNTIME_VERIFICATION_TYPE, STATEMENT_TYPE, SVR_TYPE, VERIFIER_ID, VSA_TYPE, svrProperties,
  type ChainLink, type DriftEvidence, type ReplicaEvidence, type RevocationPredicate, type RuntimeVerificationPredicate, type SvrPredicate,
} from './schemas.js';

/**
 * Pure builders of the three statements the server signs. Times come in as epoch milliseconds (the
 * server's clock, as everywhere in this project) and go out as RFC 3339 UTC. Digests of the plan
 * and the policies are sha256 over their canonical JSON (RFC 8785), as stored.
 */

export interface StatementOf<P> {
  _type: typeof STATEMENT_TYPE;
  subject: [{ name: string, digest: { sha256: string } }];
  predicateType: string;
  predicate: P;
}

/** The head of a service's chain: its latest attestation (runtime verification or revocation). */
export interface ChainHead {
  sequence: number;
  /** sha256 hex of that attestation's envelope (AttestationView.digest). */
  envelopeDigest: string;
}

export const iso = (ms: number): string => new Date(ms).toISOString();

/** The link a new attestation carries: after `previous`, or the first of the service. */
export const chainLinkAfter = (previous: ChainHead | null): ChainLink => previous === null
  ? { sequence: 1, previousEnvelopeDigest: null }
  : { sequence: previous.sequence + 1, previousEnvelopeDigest: { sha256: previous.envelopeDigest } };

/** The subject: the image, named by its digest-pinned reference, with the digest's hex. */
export function imageSubject (plan: Pick<IImmutableImageDeploymentPlan, 'digestPinnedImageReference' | 'requestedDigest'>): StatementOf<unknown>['subject'] {
  return [{ name: plan.digestPinnedImageReference, digest: { sha256: plan.requestedDigest.slice('sha256:'.length) } }];
}

/** One required replica's evidence as the server verified it. */
export interface ReplicaEvidenceInput {
  nodeName: string;
  deploymentId: string;
  slot?: number;
  containerImageId: string;
  repoDigests: readonly string[];
  resolvedDigest?: string;
  /** Since when it has run verified (ms, server's clock). */
  verifiedSince: number;
  reporterId: string;
  reporterSessionId: string;
}

export interface RuntimeVerificationInput {
  service: { id: string, name: string };
  plan: IImmutableImageDeploymentPlan;
  outcome: 'succeeded' | 'rolled-back';
  /** The rollout policy in force (effective, defaults filled in) and the trust policy (undefined: none). */
  rolloutPolicy: unknown;
  trustPolicy: unknown;
  replicas: readonly ReplicaEvidenceInput[];
  /** sha256 hex of the SLSA VSA envelope the promotion relied on; null without a trust policy. */
  verificationSummaryDigest: string | null;
  verifiedAt: number;
  previous: ChainHead | null;
  /** Who let the rollout through, when governance did: the approvals of its promotion request, a break-glass grant. */
  governance?: RolloutGovernance;
}

export interface RolloutGovernance {
  approval?: { requestId: string, requestedBy: { subject: string }, approvedBy: ReadonlyArray<{ subject: string }> } | undefined;
  breakGlass?: { grantId: string, requestedBy: string, approvedBy: string, reason: string } | undefined;
}

/** The predicate's governance members (subjects only: a role is the server's configuration, not the person). */
const governanceOf = (g: RolloutGovernance | undefined): Pick<RuntimeVerificationPredicate['rollout'], 'approval' | 'breakGlass'> => {
  const out: Pick<RuntimeVerificationPredicate['rollout'], 'approval' | 'breakGlass'> = {};
  if (g?.approval) {
    out.approval = { requestId: g.approval.requestId, requestedBy: g.approval.requestedBy.subject, approvedBy: g.approval.approvedBy.map((a) => a.subject) };
  }
  if (g?.breakGlass) {
    out.breakGlass = { grantId: g.breakGlass.grantId, requestedBy: g.breakGlass.requestedBy, approvedBy: g.breakGlass.approvedBy, reason: g.breakGlass.reason };
  }
  return out;
};

const replicaEvidence = (r: ReplicaEvidenceInput): ReplicaEvidence => ({
  nodeName: r.nodeName,
  deploymentId: r.deploymentId,
  ...(r.slot === undefined ? {} : { slot: r.slot }),
  containerImageId: r.containerImageId,
  repoDigests: [...r.repoDigests],
  ...(r.resolvedDigest === undefined ? {} : { resolvedDigest: r.resolvedDigest }),
  verifiedSince: iso(r.verifiedSince),
  reporter: { id: r.reporterId, sessionId: r.reporterSessionId },
});

/** Replicas in a stable order (node, then deployment id): the same evidence always makes the same statement. */
const byNodeThenDeployment = (a: ReplicaEvidenceInput, b: ReplicaEvidenceInput): number =>
  a.nodeName === b.nodeName ? (a.deploymentId < b.deploymentId ? -1 : 1) : (a.nodeName < b.nodeName ? -1 : 1);

export function runtimeVerificationStatement (input: RuntimeVerificationInput): StatementOf<RuntimeVerificationPredicate> {
  const { plan } = input;
  const predicate: RuntimeVerificationPredicate = {
    service: { id: input.service.id, name: input.service.name },
    rollout: {
      id: plan.rolloutId,
      generation: plan.rolloutGeneration,
      mode: plan.mode,
      releaseId: plan.releaseId,
      ...(plan.rollbackOfRolloutId === undefined ? {} : { rollbackOfRolloutId: plan.rollbackOfRolloutId }),
      ...governanceOf(input.governance),
    },
    outcome: input.outcome,
    planDigest: { sha256: canonicalDigest(plan) },
    policyDigests: {
      rolloutPolicy: { sha256: canonicalDigest(input.rolloutPolicy) },
      trustPolicy: input.trustPolicy === undefined ? null : { sha256: canonicalDigest(input.trustPolicy) },
    },
    targetScope: {
      nodeNames: [...plan.targetScope.targetNodeNames],
      replicasPerNode: plan.targetScope.replicasPerNode,
      requiredReplicaCount: plan.targetScope.requiredReplicaCount,
    },
    replicas: [...input.replicas].sort(byNodeThenDeployment).map(replicaEvidence),
    signatureVerification: input.verificationSummaryDigest === null
      ? null
      : { predicateType: VSA_TYPE, envelopeDigest: { sha256: input.verificationSummaryDigest } },
    verifiedAt: iso(input.verifiedAt),
    chain: chainLinkAfter(input.previous),
  };
  return { _type: STATEMENT_TYPE, subject: imageSubject(plan), predicateType: RUNTIME_VERIFICATION_TYPE, predicate };
}

/**
 * The same outcome as in-toto's Simple Verification Result v0.2, for SVR-aware tools: who verified
 * (this server, versioned), under which policies (their digests), which properties passed.
 */
export function svrStatement (runtime: StatementOf<RuntimeVerificationPredicate>, verifierId = VERIFIER_ID): StatementOf<SvrPredicate> {
  const p = runtime.predicate;
  const policies = [
    { name: 'rollout-policy', digest: { ...p.policyDigests.rolloutPolicy } },
    ...(p.policyDigests.trustPolicy === null ? [] : [{ name: 'trust-policy', digest: { ...p.policyDigests.trustPolicy } }]),
  ];
  const properties: string[] = [
    p.outcome === 'succeeded' ? svrProperties.runtimeVerified : svrProperties.rollbackRuntimeVerified,
    svrProperties.allRequiredReplicasVerified,
    ...(p.signatureVerification === null ? [] : [svrProperties.signaturesVerified]),
  ];
  return {
    _type: STATEMENT_TYPE,
    subject: [{ name: runtime.subject[0].name, digest: { ...runtime.subject[0].digest } }],
    predicateType: SVR_TYPE,
    predicate: { verifier: { id: verifierId, policies }, timeCreated: p.verifiedAt, properties },
  };
}

export interface RevocationInput {
  service: { id: string, name: string };
  /** The plan of the rollout whose attestation is revoked (its image is the subject). */
  plan: Pick<IImmutableImageDeploymentPlan, 'rolloutId' | 'rolloutGeneration' | 'digestPinnedImageReference' | 'requestedDigest'>;
  revokes: { attestationId: string, envelopeDigest: string };
  reason: RevocationPredicate['reason'];
  /** The replicas that drifted; times in ms. */
  evidence: ReadonlyArray<Omit<DriftEvidence, 'observedAt'> & { observedAt: number }>;
  revokedAt: number;
  previous: ChainHead;
}

export function revocationStatement (input: RevocationInput): StatementOf<RevocationPredicate> {
  const predicate: RevocationPredicate = {
    service: { id: input.service.id, name: input.service.name },
    rollout: { id: input.plan.rolloutId, generation: input.plan.rolloutGeneration },
    revokes: { attestationId: input.revokes.attestationId, envelopeDigest: { sha256: input.revokes.envelopeDigest }, predicateType: RUNTIME_VERIFICATION_TYPE },
    reason: { ...input.reason },
    evidence: input.evidence.map((e) => ({ ...e, observedAt: iso(e.observedAt) })),
    revokedAt: iso(input.revokedAt),
    chain: chainLinkAfter(input.previous),
  };
  return { _type: STATEMENT_TYPE, subject: imageSubject(input.plan), predicateType: REVOCATION_TYPE, predicate };
}
