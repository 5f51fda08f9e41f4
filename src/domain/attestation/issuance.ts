import type { IImmutableImageDeploymentPlan, IVerifiedRuntimeImageEvidence } from '../../contracts/index.js';
import type { DomainEvent } from '../events.js';
import type { VerifiedRelease } from '../lifecycle.js';
import type { ReportRecord } from '../reports.js';
import type { ReplicaDetail } from '../rolloutStatus.js';
import type { DsseEnvelope } from './dsse.js';
import type { DriftEvidence, RevocationPredicate } from './schemas.js';
import type { ReplicaEvidenceInput } from './statements.js';
import type { AttestationKind, AttestationView } from './view.js';

/**
 * Issuing attestations (docs/attestations.md "Issuance"): what the server owes and how it finds the
 * evidence. A success (`succeeded` / `rolled-back`) and a drift each put an AttestationDue on the
 * service document IN THE SAME WRITE that decides them (the milestone's compare-and-swap): there is no
 * success without its due attestation. The issuer (src/operations/attestations.ts) works the dues off
 * in order, inserting each attestation under a unique id per (service, rollout, kind) and a unique
 * place in the service's chain, then takes the due off with its domain event. Pure.
 */

/** The drift a revocation names: why, and the replicas that drifted (times in ms). */
export interface DriftFacts {
  reason: RevocationPredicate['reason'];
  evidence: Array<Omit<DriftEvidence, 'observedAt'> & { observedAt: number }>;
}

/** An attestation the server owes: decided durably with the milestone, issued once by whichever process gets there. */
export interface AttestationDue {
  /** `<kind>:<rolloutId>`: one due of each kind per rollout. */
  key: string;
  kind: AttestationKind;
  rolloutId: string;
  generation: number;
  /** When the rollout succeeded (runtime verification) or drifted (revocation): the statement's time. */
  at: number;
  drift?: DriftFacts;
}

/** An attestation as stored (the `attestations` collection): the view, its place in the chain, and whether it reached the registry. */
export interface AttestationRecord extends AttestationView {
  sequence: number;
  /** The image it is about (where a registry attachment goes). */
  image: string;
  /** Attached to the image in the registry (when the registry allows writes): pending until done. */
  attach?: 'pending' | 'done';
  /** Failed attachments so far, and when the sweeper tries again (backing off: a registry that is away is not hammered). */
  attachFailures?: number;
  attachAfter?: number;
}

export const attestationDueKey = (kind: AttestationKind, rolloutId: string): string => `${kind}:${rolloutId}`;

/** The id of a rollout's attestation of a kind: one per (service, rollout, kind), also the store's `_id`. */
export const attestationIdOf = (serviceId: string, rolloutId: string, kind: AttestationKind): string =>
  `att_${kind === 'revocation' ? 'rev' : 'rv'}_${serviceId}_${rolloutId}`;

/** The runtime verification a success owes (decided with the success milestone). */
export const runtimeVerificationDue = (verified: Pick<VerifiedRelease, 'rolloutId' | 'generation' | 'succeededAt'>): AttestationDue => ({
  key: attestationDueKey('runtime-verification', verified.rolloutId),
  kind: 'runtime-verification',
  rolloutId: verified.rolloutId,
  generation: verified.generation,
  at: verified.succeededAt,
});

export const revocationDue = (plan: Pick<IImmutableImageDeploymentPlan, 'rolloutId' | 'rolloutGeneration'>, at: number, drift: DriftFacts): AttestationDue => ({
  key: attestationDueKey('revocation', plan.rolloutId),
  kind: 'revocation',
  rolloutId: plan.rolloutId,
  generation: plan.rolloutGeneration,
  at,
  drift,
});

/** The event an issued attestation makes (recorded with the due's removal: once). */
export const attestationEvent = (record: AttestationRecord): DomainEvent => ({
  key: `attestation:${record.id}`,
  type: record.kind === 'revocation' ? 'attestation.revoked' : 'attestation.issued',
  time: record.issuedAt,
  data: {
    attestationId: record.id,
    rolloutId: record.rolloutId,
    generation: record.generation,
    kind: record.kind,
    digest: record.digest,
    keyId: record.keyId,
    sequence: record.sequence,
    ...(record.revokes === undefined ? {} : { revokes: record.revokes }),
  },
});

/** The record's view as the API answers it (the stored record without its bookkeeping). */
export const attestationViewOf = (record: AttestationRecord): AttestationView => {
  const { sequence: _s, image: _i, attach: _a, attachFailures: _f, attachAfter: _t, ...view } = record;
  return view;
};

/** When a failed attachment is tried again: 5 s, doubling per failure, at most an hour. */
export const attachRetryDelayMs = (failures: number): number => Math.min(5_000 * 2 ** Math.max(0, failures - 1), 60 * 60 * 1000);

type Deployment = ReportRecord['deployments'][number];

/** A counted replica that ran verified and stable, with the deployment it stated and who reported it. */
interface Candidate { detail: ReplicaDetail, deployment: Deployment, record: ReportRecord }

function candidatesOf (plan: IImmutableImageDeploymentPlan, records: readonly ReportRecord[]): Candidate[] {
  const targets = new Set(plan.targetScope.targetNodeNames);
  const found: Candidate[] = [];
  for (const record of records) {
    if (record.rolloutId !== plan.rolloutId) continue;
    const deployments = new Map(record.deployments.map((d) => [d.id, d]));
    for (const detail of record.replicas) {
      const deployment = deployments.get(detail.deploymentId);
      if (!detail.counted || detail.verification !== 'verified' || detail.stable !== true || !targets.has(detail.nodeName)) continue;
      if (deployment?.runtimeImageEvidence?.verificationStatus !== 'verified' || detail.verifiedSince === undefined) continue;
      found.push({ detail, deployment, record });
    }
  }
  return found;
}

/**
 * Every required replica's evidence, from the rollout's report records: per target node the
 * `replicasPerNode` counted replicas that ran verified and stable (the ones that made the success).
 * undefined when the records no longer show a complete verified set — the evidence moved on (a
 * replica drifted before the attestation was issued) or was removed: nothing is attested then (fail closed).
 */
export function requiredReplicaEvidence (plan: IImmutableImageDeploymentPlan, records: readonly ReportRecord[]): ReplicaEvidenceInput[] | undefined {
  const perNode = new Map<string, Candidate[]>();
  for (const c of candidatesOf(plan, records)) perNode.set(c.detail.nodeName, [...(perNode.get(c.detail.nodeName) ?? []), c]);
  const chosen: Candidate[] = [];
  for (const node of plan.targetScope.targetNodeNames) {
    const onNode = (perNode.get(node) ?? []).sort((a, b) => (a.detail.deploymentId < b.detail.deploymentId ? -1 : 1));
    if (onNode.length < plan.targetScope.replicasPerNode) return undefined;
    chosen.push(...onNode.slice(0, plan.targetScope.replicasPerNode));
  }
  return chosen.map(({ detail, deployment, record }) => {
    const evidence = deployment.runtimeImageEvidence as IVerifiedRuntimeImageEvidence;
    return {
      nodeName: detail.nodeName,
      deploymentId: detail.deploymentId,
      ...(deployment.slot !== undefined && deployment.slot >= 1 ? { slot: deployment.slot } : {}),
      containerImageId: evidence.containerImageId,
      repoDigests: evidence.repoDigests,
      resolvedDigest: evidence.resolvedDigest,
      verifiedSince: detail.verifiedSince as number,
      reporterId: record.reporterId,
      reporterSessionId: record.position.sessionId ?? record.reporterId,
    };
  });
}

const byNodeThenDeployment = (a: { nodeName: string, deploymentId?: string }, b: { nodeName: string, deploymentId?: string }): number =>
  a.nodeName === b.nodeName ? ((a.deploymentId ?? '') < (b.deploymentId ?? '') ? -1 : 1) : a.nodeName < b.nodeName ? -1 : 1;

const driftStateOf = (r: ReplicaDetail): DriftEvidence['state'] | undefined => {
  if (r.verification === 'mismatched' && (r.counted || r.deploymentStatus === 'running')) return 'mismatched';
  if (r.counted && r.health === 'failed') return 'failed';
  return undefined;
};

/**
 * What a succeeded rollout's status now shows against its evidence: the replicas that mismatch or
 * failed, from the rollout's report records (newest report of each reporter); undefined when none does.
 */
export function driftOf (plan: IImmutableImageDeploymentPlan, records: readonly ReportRecord[]): DriftFacts | undefined {
  const evidence: DriftFacts['evidence'] = [];
  for (const record of records) {
    if (record.rolloutId !== plan.rolloutId) continue;
    const deployments = new Map(record.deployments.map((d) => [d.id, d]));
    for (const r of record.replicas) {
      const state = driftStateOf(r);
      if (state === undefined) continue;
      const seen = deployments.get(r.deploymentId)?.runtimeImageEvidence;
      evidence.push({
        nodeName: r.nodeName,
        deploymentId: r.deploymentId,
        state,
        ...(r.mismatchReason === undefined || r.mismatchReason === 'replica-failed' ? {} : { mismatchReason: r.mismatchReason }),
        ...(seen?.containerImageId === undefined ? {} : { containerImageId: seen.containerImageId }),
        ...(seen?.repoDigests === undefined ? {} : { repoDigests: seen.repoDigests }),
        ...(seen?.resolvedDigest === undefined ? {} : { resolvedDigest: seen.resolvedDigest }),
        observedAt: record.position.receivedAt,
        reporter: { id: record.reporterId, sessionId: record.position.sessionId ?? record.reporterId },
      });
    }
  }
  const first = evidence.find((e) => e.state === 'mismatched') ?? evidence[0];
  if (first === undefined) return undefined;
  const kind = first.state === 'mismatched' ? 'replica-mismatched' : 'replica-failed';
  const what = first.state === 'mismatched' ? 'does not run the planned digest verifiably' : 'has failed';
  return {
    reason: {
      kind,
      ...(first.mismatchReason === undefined ? {} : { mismatchReason: first.mismatchReason }),
      detail: `replica '${first.deploymentId ?? '?'}' on node '${first.nodeName}' ${what}`,
    },
    evidence: evidence.sort(byNodeThenDeployment),
  };
}

/** A stored envelope pair of a runtime verification: the envelope and its SVR. */
export interface IssuedEnvelopes { envelope: DsseEnvelope, summaryEnvelope?: DsseEnvelope }
