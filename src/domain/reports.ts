import type { IImageRolloutReporterStatus, IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { ReportDeploymentSnapshotsInput, ReportedDeployment } from '../contracts/reports.js';
import { errors, type AppError, type Problem } from '../errors.js';
import { verifyReplicaEvidence, type ReplicaVerdict } from './evidence.js';
import { replicaStability, type EffectivePolicy } from './lifecycle.js';
import type { Principal } from './principal.js';
import { countReporterReplicas, type ReplicaDetail } from './rolloutStatus.js';

/**
 * Pure rules of Coreflow snapshot reports (docs/api.md "Snapshot reports and rollout status"):
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
export function envelopeRefusal (
  target: { serviceId: string, plan?: IImmutableImageDeploymentPlan },
  input: ReportDeploymentSnapshotsInput,
  clusterId: string
): AppError | undefined {
  const envelope = input.immutableReport;
  if (!envelope) return errors.runtimeAttestationMissing(target.serviceId);
  const plan = target.plan;
  if (!plan) return errors.immutablePlanMissing(target.serviceId);
  if (!plan.targetScope.targetClusterIds.includes(clusterId)) {
    return errors.forbidden(`cluster '${clusterId}' is outside the target scope of rollout '${plan.rolloutId}'`);
  }
  if (envelope.rolloutId !== plan.rolloutId || envelope.rolloutGeneration !== plan.rolloutGeneration) {
    const detail = `the report is for rollout '${envelope.rolloutId}' generation ${envelope.rolloutGeneration};` +
      ` the current rollout is '${plan.rolloutId}' generation ${plan.rolloutGeneration}`;
    return staleReport(detail, plan);
  }
  const targetNodes = targetNodesOf(plan);
  const outside = envelope.reporterNodeNames.filter((n) => !targetNodes.has(n)).sort();
  if (outside.length > 0) return staleReport(`node '${outside[0]}' is not in the target scope of rollout '${plan.rolloutId}'`, plan);
  if (envelope.reporterNodeNames.length === 0) {
    return errors.validationFailed([{ field: '/immutableReport/reporterNodeNames', message: 'must name at least one node' }]);
  }
  return undefined;
}

/** What stability is judged against: the reporter's previous report of the rollout, when this one arrived, the service's window. */
export interface StabilityContext {
  previous: readonly ReplicaDetail[];
  /** Every node the reporter has reported before in the rollout (its record's nodes and earlier nodes). */
  previousNodes?: readonly string[];
  receivedAt: number;
  policy: Pick<EffectivePolicy, 'stabilityWindowSeconds' | 'clockToleranceSeconds'>;
}

const replicaKey = (nodeName: string, deploymentId: string): string => `${nodeName}\u0000${deploymentId}`;

/**
 * The nodes of the reporter's earlier reports of the rollout that a node-scoped report (top-level
 * `reporterNodeNames`) leaves as they were: its replicas' verdicts stay in the entry (and its
 * deployments in the record). A report without `reporterNodeNames` replaces everything.
 */
export function keptNodes (input: ReportDeploymentSnapshotsInput, previous: Pick<ReportHead, 'nodeNames'> | null): string[] {
  if (input.reporterNodeNames === undefined || !previous) return [];
  const reported = new Set(input.immutableReport?.reporterNodeNames ?? input.reporterNodeNames);
  return previous.nodeNames.filter((n) => !reported.has(n));
}

/**
 * The reporter's entry in the rollout status and its per-replica verdicts, from the server's own
 * verification: this report's replicas, and those of `kept` nodes (earlier node-scoped reports) as
 * they were.
 */
export function reporterEntryOf (
  plan: IImmutableImageDeploymentPlan,
  input: ReportDeploymentSnapshotsInput & { immutableReport: NonNullable<ReportDeploymentSnapshotsInput['immutableReport']> },
  reporter: { reporterId: string, clusterId: string },
  stability: StabilityContext,
  kept: readonly string[] = []
): { entry: IImageRolloutReporterStatus, replicas: ReplicaDetail[] } {
  const envelope = input.immutableReport;
  const reporterNodes = [...new Set([...envelope.reporterNodeNames, ...kept])].sort();
  const keptSet = new Set(kept);
  const previous = new Map(stability.previous.map((r) => [replicaKey(r.nodeName, r.deploymentId), r]));
  const seenNodes = new Set(stability.previousNodes ?? []);
  const replicas: ReplicaDetail[] = input.deployments.map((d) => {
    const verdict = verifyReplicaEvidence(plan, d);
    const nodeName = d.nodeName ?? '';
    const stable = replicaStability({
      previous: previous.get(replicaKey(nodeName, d.id)),
      nodeSeenBefore: seenNodes.has(nodeName),
      running: verdict.health === 'healthy',
      verified: verdict.verification === 'verified',
      deployedAt: d.deployedAt,
      reportedAt: input.reportedAt,
      receivedAt: stability.receivedAt,
      policy: stability.policy,
    });
    return {
      nodeName,
      deploymentId: d.id,
      deploymentStatus: d.status,
      health: verdict.health,
      verification: verdict.verification,
      mismatchReason: verdict.mismatchReason,
      ...runningDigestOf(verdict, d),
      counted: false,
      ...stable,
    };
  });
  const carried = kept.length === 0 ? [] : stability.previous.filter((r) => keptSet.has(r.nodeName));
  const { counts, replicas: detail } = countReporterReplicas(plan, reporterNodes, [...replicas, ...carried]);
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
  return { entry, replicas: detail };
}

/** What a mismatched replica runs instead, as its evidence says (only a well-formed digest: the evidence is the reporter's word). */
function runningDigestOf (verdict: ReplicaVerdict, deployment: ReportedDeployment): { runningDigest?: string } {
  const resolved = deployment.runtimeImageEvidence?.resolvedDigest;
  return verdict.verification === 'mismatched' && typeof resolved === 'string' && /^sha256:[a-f0-9]{64}$/.test(resolved)
    ? { runningDigest: resolved }
    : {};
}

/** Where a report stands in its reporter's sequence: the session, its sequence, and when (reporter's clock, server's clock). */
export interface ReportPosition {
  sessionId?: string;
  sequence?: number;
  reportedAt: number;
  receivedAt: number;
}

/**
 * One reporter's latest accepted report, as stored: for a rollout (services with the immutable
 * policy: the envelope's position, the reporter's status entry and per-replica verdicts), or for
 * the service (without the policy: only the deployments). Written with compare-and-swap on
 * `version`, one document per (rollout or service, reporter): one fenced write per accepted report.
 */
export interface ReportRecord {
  id: string;
  serviceId: string;
  /** The rollout it reports on; undefined for a service without the immutable policy. */
  rolloutId?: string;
  reporterId: string;
  clusterId: string;
  /** +1 on every accepted report: the compare-and-swap token. */
  version: number;
  position: ReportPosition;
  /** Sessions this reporter used before the current one for the rollout (newest last): none may report again. */
  retiredSessions: string[];
  /** The nodes the report spoke for (sorted); empty: the whole cluster. */
  nodeNames: string[];
  /**
   * Nodes the reporter reported earlier in the rollout and has left out since (sorted): the server
   * has seen them, so a replica on one of them is never "seen for the first time" again (stability).
   */
  earlierNodes?: string[];
  /** The reporter's entry in the rollout status (immutable policy only). */
  entry?: IImageRolloutReporterStatus;
  /**
   * Set when the report changed nothing in the status summary (its counts and reason equal the
   * summary's contribution of the reporter, which accounted for the previous record): the
   * summary version that accounts for this record too, so the summary was not written.
   */
  coveredBy?: number;
  replicas: ReplicaDetail[];
  /** The deployments the report stated (for a node scope, merged with the reporter's others). */
  deployments: ReportedDeployment[];
  /**
   * A service record's nodes whose deployments a later node-scoped report stated: who reported
   * them and when (the record's own reporter and position are those of the report that stated the
   * rest). Absent on rollout records.
   */
  nodeSources?: NodeSource[];
}

/** Who stated a node's deployments in a service record, and when. */
export interface NodeSource { nodeName: string, reporterId: string, reportedAt: number, receivedAt: number }

/** The summary version that accounts for a record: its own, or the one that covered it (`coveredBy`). */
export const accountedVersion = (record: Pick<ReportRecord, 'version' | 'coveredBy'>): number => record.coveredBy ?? record.version;

/** A record without the deployments it stated: all the report path decides from (the deployments can be megabytes). */
export type ReportHead = Omit<ReportRecord, 'deployments'>;

/** At most this many earlier sessions are remembered per reporter and rollout. */
export const RETIRED_SESSIONS_KEPT = 32;

/** A plan's target nodes as a set, built once per plan object (the store hands the report path the same object per rollout). */
const targetNodeSets = new WeakMap<IImmutableImageDeploymentPlan, ReadonlySet<string>>();
function targetNodesOf (plan: IImmutableImageDeploymentPlan): ReadonlySet<string> {
  let nodes = targetNodeSets.get(plan);
  if (!nodes) {
    nodes = new Set(plan.targetScope.targetNodeNames);
    targetNodeSets.set(plan, nodes);
  }
  return nodes;
}

export const rolloutRecordId = (rolloutId: string, reporterId: string): string => `rollout:${rolloutId}:${reporterId}`;
/**
 * The stored deployments of a service without the immutable policy are kept per reporting cluster
 * (a full report replaces all of the cluster's, whichever of its tokens reported them). Records
 * written before were kept per reporter (`service:<serviceId>:<clusterId>/<sub>`); the start-up migrations
 * (src/store/migrations.ts, version 5) made the newest of each cluster its cluster's record.
 */
export const serviceRecordId = (serviceId: string, clusterId: string): string => `service:${serviceId}:${clusterId}`;

/** How the reporter's earlier report orders this one: apply it, answer it as a replay, or refuse it. */
export type PositionVerdict = { kind: 'apply', retire?: string } | { kind: 'replay' } | { kind: 'refuse', error: AppError };

/**
 * When a report counts as made, for ordering sessions: its `reportedAt` (the reporter's clock), but
 * never later than the server's receipt time plus the clock tolerance — a reporter whose clock ran far
 * ahead once cannot lock its later sessions out for the rest of the rollout.
 */
export const orderingTimeOf = (position: { reportedAt: number, receivedAt: number }, toleranceMs: number): number =>
  Math.min(position.reportedAt, position.receivedAt + toleranceMs);

/**
 * Per session the sequence only grows (equal = a harmless replay, lower = stale); a new session
 * takes over only with a later `reportedAt` (`orderingTimeOf`: bounded by the server's clock), and
 * retires the one it replaces for good: a retired session never reports again, whatever its
 * sequence (the sequence is compared per session AND across sessions).
 */
export function positionVerdict (
  plan: IImmutableImageDeploymentPlan,
  record: ReportHead | null,
  report: { sessionId: string, sequence: number, reportedAt: number, receivedAt: number },
  toleranceMs: number
): PositionVerdict {
  const current = record?.position;
  if (!current?.sessionId) return { kind: 'apply' };
  if (current.sessionId === report.sessionId) {
    const accepted = current.sequence ?? 0;
    if (report.sequence < accepted) {
      const detail = `reportSequence ${report.sequence} is lower than ${accepted} already accepted for session '${report.sessionId}'`;
      return { kind: 'refuse', error: staleReport(detail, plan) };
    }
    return report.sequence === accepted ? { kind: 'replay' } : { kind: 'apply' };
  }
  if (record?.retiredSessions.includes(report.sessionId)) {
    return { kind: 'refuse', error: staleReport(`session '${report.sessionId}' was replaced by session '${current.sessionId}' and reports no more`, plan) };
  }
  if (orderingTimeOf(report, toleranceMs) <= orderingTimeOf(current, toleranceMs)) {
    return { kind: 'refuse', error: staleReport(`session '${report.sessionId}' reports older than the current session '${current.sessionId}'`, plan) };
  }
  return { kind: 'apply', retire: current.sessionId };
}

/**
 * The first report of a reporter in a rollout, against its record of the rollout before: a session
 * it retired there stays retired (for good, across rollouts), and a session other than the one it
 * reported with last retires that one. (Sequences start afresh per rollout: an agent may count them
 * per plan.)
 */
export function inheritedVerdict (
  plan: IImmutableImageDeploymentPlan, inherited: Pick<ReportHead, 'position' | 'retiredSessions'> | null, sessionId: string
): PositionVerdict {
  if (!inherited) return { kind: 'apply' };
  if (inherited.retiredSessions.includes(sessionId)) {
    return { kind: 'refuse', error: staleReport(`session '${sessionId}' was replaced in an earlier rollout and reports no more`, plan) };
  }
  const last = inherited.position.sessionId;
  return last !== undefined && last !== sessionId ? { kind: 'apply', retire: last } : { kind: 'apply' };
}

/** What a claim refused: a node or session of the rollout another reporter holds. */
export interface ClaimRefusal { kind: 'node' | 'session', name: string, owner: string }

/**
 * A node or session claim its owner's record does not back (no accepted report of the owner named
 * it) counts as abandoned once this old: the report that made it was refused or superseded after
 * claiming, or killed before its record. A report takes far less from claim to record.
 */
export const UNBACKED_CLAIM_AFTER_MS = 60_000;

/** The refusal for a node or session another reporter of the rollout already holds. */
export function claimRefusal (plan: IImmutableImageDeploymentPlan, refused: ClaimRefusal): AppError {
  if (refused.kind === 'session') {
    const message = `session '${refused.name}' belongs to reporter '${refused.owner}'`;
    return errors.validationFailed([{ field: '/immutableReport/reporterSessionId', message }]);
  }
  return staleReport(`node '${refused.name}' is already reported by reporter '${refused.owner}' for this rollout`, plan);
}

/**
 * Who stated each node's deployments after a node-scoped report (its nodes: this report; the
 * record's other scoped nodes as they were); a report without a scope states them all.
 */
export function nodeSourcesAfter (
  previous: readonly NodeSource[], scope: readonly string[] | undefined, source: Omit<NodeSource, 'nodeName'>
): NodeSource[] | undefined {
  if (scope === undefined) return undefined;
  const reported = new Set(scope);
  return [...previous.filter((s) => !reported.has(s.nodeName)), ...[...reported].sort().map((nodeName) => ({ nodeName, ...source }))];
}

/**
 * The deployments a reporter's stored record holds after this report: with a node scope, its
 * earlier deployments on other nodes stay; without one, the report replaces them all.
 */
export function mergedDeployments (
  previous: readonly ReportedDeployment[],
  reported: readonly ReportedDeployment[],
  scope: readonly string[] | undefined
): ReportedDeployment[] {
  if (scope === undefined) return [...reported];
  const replaced = new Set(scope);
  return [...previous.filter((d) => d.nodeName === undefined || !replaced.has(d.nodeName)), ...reported];
}
