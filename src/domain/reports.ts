import type { IImageRolloutReporterStatus, IImmutableImageDeploymentPlan, IService } from '../contracts/index.js';
import type { ReportDeploymentSnapshotsInput } from '../contracts/reports.js';
import { errors, type AppError, type Problem } from '../errors.js';
import { verifyReplicaEvidence } from './evidence.js';
import type { Principal } from './principal.js';
import { countReporterReplicas, type ReplicaDetail, type ReporterEvidence } from './rolloutStatus.js';

/**
 * Pure rules of Coreflow snapshot reports (DESIGN §5 "Snapshot reports", "Rollout status"):
 * who the reporter is, which deployments a report may name, which envelopes are current, and
 * the reporter's entry in the rollout status. src/operations/reportSnapshot.ts sequences the
 * reads and writes. Refusals are returned, never thrown.
 */

/** The reporter's identity comes from the verified token, never from the request. */
export const reporterIdOf = (principal: Principal): string => `${principal.clusterId ?? 'none'}/${principal.subject}`;

export const staleReport = (detail: string, plan: IImmutableImageDeploymentPlan | undefined): AppError =>
  errors.staleRolloutReport(detail, { currentRolloutId: plan?.rolloutId ?? null, currentGeneration: plan?.rolloutGeneration ?? 0 });

/** Before schema validation: a reporter without the capability gets its own code, not a schema error. */
export function missingCapabilityRefusal (input: unknown): AppError | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const envelope = (input as Record<string, unknown>)['immutableReport'];
  if (envelope === undefined || envelope === null || typeof envelope !== 'object') return undefined;
  const capabilities = (envelope as Record<string, unknown>)['reporterCapabilities'];
  const version = capabilities !== null && typeof capabilities === 'object'
    ? (capabilities as Record<string, unknown>)['immutableImageDeploymentVersion']
    : undefined;
  return version === 1 ? undefined : errors.runtimeCapabilityMissing(version);
}

/** The node set the report speaks for: the envelope's, else the request's `reporterNodeNames`; undefined = the whole cluster. */
export function reportNodeScope (input: ReportDeploymentSnapshotsInput): { scope: string[] | undefined } | { problems: Problem[] } {
  const envelope = input.immutableReport;
  if (input.reporterNodeNames && envelope) {
    const a = [...new Set(input.reporterNodeNames)].sort().join('\n');
    const b = [...new Set(envelope.reporterNodeNames)].sort().join('\n');
    if (a !== b) return { problems: [{ field: '/reporterNodeNames', message: 'must name the same nodes as immutableReport.reporterNodeNames' }] };
  }
  const names = envelope?.reporterNodeNames ?? input.reporterNodeNames;
  return { scope: names ? [...new Set(names)] : undefined };
}

/** Every deployment is of the reported service, on a node of the scope, and named once. */
export function deploymentProblems (input: ReportDeploymentSnapshotsInput, scope: readonly string[] | undefined): Problem[] {
  const inScope = scope ? new Set(scope) : undefined;
  const problems: Problem[] = input.deployments.flatMap((d, i) => [
    ...(d.serviceId === input.serviceId ? [] : [{ field: `/deployments/${i}/serviceId`, message: `must be the reported service '${input.serviceId}'` }]),
    ...(inScope && (d.nodeName === undefined || !inScope.has(d.nodeName))
      ? [{ field: `/deployments/${i}/nodeName`, message: 'must be one of the reporter node names' }]
      : []),
  ]);
  const ids = new Set<string>();
  input.deployments.forEach((d, i) => {
    if (ids.has(d.id)) problems.push({ field: `/deployments/${i}/id`, message: `duplicate deployment id '${d.id}'` });
    ids.add(d.id);
  });
  return problems;
}

/** Every node the report names: its scope and its deployments' nodes (they must all be the reporter's cluster's). */
export const reportedNodes = (input: ReportDeploymentSnapshotsInput, scope: readonly string[] | undefined): string[] =>
  [...new Set<string>([...(scope ?? []), ...input.deployments.flatMap((d) => (d.nodeName === undefined ? [] : [d.nodeName]))])].sort();

/** A node not registered to the reporter's own cluster: the refusal. */
export function foreignNodeRefusal (principal: Principal, nodes: readonly string[], owners: Map<string, { clusterId: string }>): AppError | undefined {
  for (const node of nodes) {
    const owner = owners.get(node)?.clusterId;
    if (owner !== principal.clusterId) {
      const registration = owner ? `registered to cluster '${owner}'` : 'not registered';
      return errors.forbidden(`node '${node}' is ${registration}, not to cluster '${principal.clusterId ?? ''}'`);
    }
  }
  return undefined;
}

/** An immutable service's report must carry an envelope of the current plan, on target nodes, from a targeted cluster. */
export function envelopeRefusal (service: IService, input: ReportDeploymentSnapshotsInput, clusterId: string): AppError | undefined {
  const envelope = input.immutableReport;
  if (!envelope) return errors.runtimeAttestationMissing(service.id);
  const plan = service.data.imageDeployment;
  if (!plan) return errors.immutablePlanMissing(service.id);
  if (!plan.targetScope.targetClusterIds.includes(clusterId)) {
    return errors.forbidden(`cluster '${clusterId}' is outside the target scope of rollout '${plan.rolloutId}'`);
  }
  if (envelope.rolloutId !== plan.rolloutId || envelope.rolloutGeneration !== plan.rolloutGeneration) {
    const detail = `the report is for rollout '${envelope.rolloutId}' generation ${envelope.rolloutGeneration};` +
      ` the current rollout is '${plan.rolloutId}' generation ${plan.rolloutGeneration}`;
    return staleReport(detail, plan);
  }
  const targetNodes = new Set(plan.targetScope.targetNodeNames);
  const outside = envelope.reporterNodeNames.filter((n) => !targetNodes.has(n)).sort();
  if (outside.length > 0) return staleReport(`node '${outside[0]}' is not in the target scope of rollout '${plan.rolloutId}'`, plan);
  if (envelope.reporterNodeNames.length === 0) {
    return errors.validationFailed([{ field: '/immutableReport/reporterNodeNames', message: 'must name at least one node' }]);
  }
  return undefined;
}

/** The reporter's entry in the rollout status and its per-replica evidence, from the server's own verdicts. */
export function reporterEntryOf (
  plan: IImmutableImageDeploymentPlan,
  input: ReportDeploymentSnapshotsInput & { immutableReport: NonNullable<ReportDeploymentSnapshotsInput['immutableReport']> },
  reporter: { reporterId: string, clusterId: string }
): { entry: IImageRolloutReporterStatus, evidence: ReporterEvidence } {
  const envelope = input.immutableReport;
  const reporterNodes = [...new Set(envelope.reporterNodeNames)].sort();
  const replicas: ReplicaDetail[] = input.deployments.map((d) => {
    const verdict = verifyReplicaEvidence(plan, d);
    return {
      nodeName: d.nodeName ?? '',
      deploymentId: d.id,
      deploymentStatus: d.status,
      health: verdict.health,
      verification: verdict.verification,
      mismatchReason: verdict.mismatchReason,
      counted: false,
    };
  });
  const { counts, replicas: detail } = countReporterReplicas(plan, reporterNodes, replicas);
  const entry: IImageRolloutReporterStatus = {
    reporterId: reporter.reporterId,
    reporterSessionId: envelope.reporterSessionId,
    clusterId: reporter.clusterId,
    reporterNodeNames: reporterNodes,
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    reportSequence: envelope.reportSequence,
    reportedAt: input.reportedAt,
    ...counts,
  };
  return { entry, evidence: { reporterId: reporter.reporterId, clusterId: reporter.clusterId, reportedAt: input.reportedAt, replicas: detail } };
}

/** How the reporter's earlier entry orders this report: apply it, answer it as a replay, or refuse it. */
export type SequenceVerdict = { kind: 'apply' } | { kind: 'replay' } | { kind: 'refuse', error: AppError };

/**
 * Per session the sequence only grows (equal = a harmless replay, lower = stale); a new session
 * takes over only with a later `reportedAt`; a session id belongs to one reporter; a node is
 * reported by at most one reporter per rollout.
 */
export function sequenceVerdict (
  plan: IImmutableImageDeploymentPlan,
  reporters: readonly IImageRolloutReporterStatus[],
  entry: IImageRolloutReporterStatus
): SequenceVerdict {
  const previous = reporters.find((r) => r.reporterId === entry.reporterId);
  if (previous && previous.reporterSessionId === entry.reporterSessionId) {
    if (entry.reportSequence < previous.reportSequence) {
      const detail = `reportSequence ${entry.reportSequence} is lower than ${previous.reportSequence}` +
        ` already accepted for session '${entry.reporterSessionId}'`;
      return { kind: 'refuse', error: staleReport(detail, plan) };
    }
    if (entry.reportSequence === previous.reportSequence) return { kind: 'replay' };
  } else if (previous && entry.reportedAt <= previous.reportedAt) {
    const detail = `session '${entry.reporterSessionId}' reports older than the current session '${previous.reporterSessionId}'`;
    return { kind: 'refuse', error: staleReport(detail, plan) };
  }
  const sessionOwner = reporters.find((r) => r.reporterId !== entry.reporterId && r.reporterSessionId === entry.reporterSessionId);
  if (sessionOwner) {
    const message = `session '${entry.reporterSessionId}' belongs to reporter '${sessionOwner.reporterId}'`;
    return { kind: 'refuse', error: errors.validationFailed([{ field: '/immutableReport/reporterSessionId', message }]) };
  }
  const taken = reporters.find((r) => r.reporterId !== entry.reporterId && r.reporterNodeNames.some((n) => entry.reporterNodeNames.includes(n)));
  if (taken) {
    const node = taken.reporterNodeNames.find((n) => entry.reporterNodeNames.includes(n)) ?? '';
    return { kind: 'refuse', error: staleReport(`node '${node}' is already reported by reporter '${taken.reporterId}' for this rollout`, plan) };
  }
  return { kind: 'apply' };
}
