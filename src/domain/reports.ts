import type { IImageRolloutReporterStatus, IImageRolloutStatus, IImmutableImageDeploymentPlan, IService } from '../contracts/index.js';
import type { ReportDeploymentSnapshotsInput, ReportedDeployment } from '../contracts/reports.js';
import { AppError, forbidden, serviceNotFound, validationFailed } from '../errors.js';
import type { ServiceRolloutState } from '../store/serviceStore.js';
import { verifyReplicaEvidence } from './evidence.js';
import type { Principal } from './principal.js';
import { aggregateStatus, countReporterReplicas } from './rolloutAggregation.js';
import type { ReplicaDetail, ReporterEvidence, RolloutEvidence } from './rolloutStatus.js';

/**
 * Coreflow snapshot reports (DESIGN §5 "Snapshot reports", "Rollout status"):
 * authorize the reporter, persist its deployments, and for services that
 * require immutable images check the report envelope, re-verify every
 * replica's evidence and fold the report into the rollout status with a
 * compare-and-swap on the status revision (concurrent reporters never lose
 * each other's updates). A refused report changes nothing.
 */

export interface ReportRepositories {
  services: {
    findRolloutState(id: string): Promise<ServiceRolloutState | null>;
    compareAndSetStatus(id: string, rolloutId: string, revision: number, status: IImageRolloutStatus, evidence: RolloutEvidence, event: boolean, now: number): Promise<boolean>;
  };
  clusters: { findNodeOwners(nodeNames: readonly string[]): Promise<Map<string, { clusterId: string }>> };
  deployments: {
    replaceSnapshot(serviceId: string, clusterId: string, deployments: ReportedDeployment[], nodeScope: string[] | undefined, reportedAt: number, reportedBy: string): Promise<void>;
  };
}

export interface ReportDeps {
  repos: ReportRepositories;
  now(): number;
}

export type ReportOutcome =
  | { kind: 'recorded' }
  | { kind: 'applied', status: IImageRolloutStatus }
  | { kind: 'replayed', status: IImageRolloutStatus };

/** The reporter's identity comes from the verified token, never from the request. */
const reporterIdOf = (principal: Principal): string => `${principal.clusterId ?? 'none'}/${principal.subject}`;

const MAX_CAS_ATTEMPTS = 64;

const stale = (detail: string, plan: IImmutableImageDeploymentPlan | undefined): AppError =>
  new AppError('stale-rollout-report', detail, {
    details: { currentRolloutId: plan?.rolloutId ?? null, currentGeneration: plan?.rolloutGeneration ?? 0 },
  });

/** Before schema validation: a reporter without the capability gets its own code, not a schema error. */
export function rejectMissingCapability (input: unknown): void {
  if (input === null || typeof input !== 'object') return;
  const envelope = (input as Record<string, unknown>)['immutableReport'];
  if (envelope === undefined || envelope === null || typeof envelope !== 'object') return;
  const capabilities = (envelope as Record<string, unknown>)['reporterCapabilities'];
  const version = capabilities !== null && typeof capabilities === 'object' ? (capabilities as Record<string, unknown>)['immutableImageDeploymentVersion'] : undefined;
  if (version !== 1) {
    throw new AppError('runtime-capability-missing', 'the reporter does not declare immutableImageDeploymentVersion 1', {
      details: { declared: version ?? null },
    });
  }
}

export function reportOperations (deps: ReportDeps) {
  const { repos } = deps;

  /** Every node a report speaks for must be registered to the reporter's own cluster. */
  async function authorizeNodes (principal: Principal, nodeNames: Set<string>): Promise<void> {
    if (nodeNames.size === 0) return;
    const owners = await repos.clusters.findNodeOwners([...nodeNames]);
    for (const node of [...nodeNames].sort()) {
      const owner = owners.get(node)?.clusterId;
      if (owner !== principal.clusterId) {
        throw forbidden(`node '${node}' is ${owner ? `registered to cluster '${owner}'` : 'not registered'}, not to cluster '${principal.clusterId ?? ''}'`);
      }
    }
  }

  function checkDeployments (input: ReportDeploymentSnapshotsInput, scope: Set<string> | undefined): void {
    const problems = input.deployments.flatMap((d, i) => [
      ...(d.serviceId === input.serviceId ? [] : [{ field: `/deployments/${i}/serviceId`, message: `must be the reported service '${input.serviceId}'` }]),
      ...(scope && (d.nodeName === undefined || !scope.has(d.nodeName))
        ? [{ field: `/deployments/${i}/nodeName`, message: 'must be one of the reporter node names' }]
        : []),
    ]);
    const ids = new Set<string>();
    input.deployments.forEach((d, i) => {
      if (ids.has(d.id)) problems.push({ field: `/deployments/${i}/id`, message: `duplicate deployment id '${d.id}'` });
      ids.add(d.id);
    });
    if (problems.length > 0) throw validationFailed(problems);
  }

  async function report (input: ReportDeploymentSnapshotsInput, principal: Principal): Promise<ReportOutcome> {
    if (principal.clusterId === undefined) throw forbidden('only cluster tokens may report deployments');
    const clusterId = principal.clusterId;
    const state = await repos.services.findRolloutState(input.serviceId);
    if (!state) throw serviceNotFound(input.serviceId);
    const service: IService = state.service;
    const envelope = input.immutableReport;

    const scopeNames = envelope?.reporterNodeNames ?? input.reporterNodeNames;
    if (input.reporterNodeNames && envelope) {
      const a = [...new Set(input.reporterNodeNames)].sort().join('\n');
      const b = [...new Set(envelope.reporterNodeNames)].sort().join('\n');
      if (a !== b) throw validationFailed([{ field: '/reporterNodeNames', message: 'must name the same nodes as immutableReport.reporterNodeNames' }]);
    }
    const scope = scopeNames ? new Set(scopeNames) : undefined;
    checkDeployments(input, scope);
    const nodes = new Set<string>([...(scope ?? []), ...input.deployments.flatMap((d) => (d.nodeName === undefined ? [] : [d.nodeName]))]);
    await authorizeNodes(principal, nodes);

    const persist = (): Promise<void> => repos.deployments.replaceSnapshot(
      input.serviceId, clusterId, input.deployments, scopeNames ? [...new Set(scopeNames)] : undefined, input.reportedAt, reporterIdOf(principal));

    if (service.data.immutableImageRequired !== true) {
      await persist();
      return { kind: 'recorded' };
    }

    // Immutable deployment: the envelope is mandatory and everything in it is checked.
    if (!envelope) throw new AppError('runtime-attestation-missing', `service '${service.id}' requires immutable deployment: the immutableReport envelope is missing`);
    // The reporter capability was checked before (rejectMissingCapability, the operation's precheck).
    const plan = service.data.imageDeployment;
    if (!plan) throw new AppError('immutable-plan-missing', `service '${service.id}' has no immutable deployment plan`);
    if (!plan.targetScope.targetClusterIds.includes(clusterId)) {
      throw forbidden(`cluster '${clusterId}' is outside the target scope of rollout '${plan.rolloutId}'`);
    }
    if (envelope.rolloutId !== plan.rolloutId || envelope.rolloutGeneration !== plan.rolloutGeneration) {
      throw stale(`the report is for rollout '${envelope.rolloutId}' generation ${envelope.rolloutGeneration}; the current rollout is '${plan.rolloutId}' generation ${plan.rolloutGeneration}`, plan);
    }
    const targetNodes = new Set(plan.targetScope.targetNodeNames);
    const outside = envelope.reporterNodeNames.filter((n) => !targetNodes.has(n)).sort();
    if (outside.length > 0) throw stale(`node '${outside[0]}' is not in the target scope of rollout '${plan.rolloutId}'`, plan);
    if (envelope.reporterNodeNames.length === 0) throw validationFailed([{ field: '/immutableReport/reporterNodeNames', message: 'must name at least one node' }]);

    const reporterId = reporterIdOf(principal);
    const reporterNodes = [...new Set(envelope.reporterNodeNames)].sort();
    const replicas: ReplicaDetail[] = input.deployments.map((d) => {
      const verdict = verifyReplicaEvidence(plan, d);
      return {
        nodeName: d.nodeName ?? '',
        deploymentId: d.id,
        deploymentStatus: d.status,
        health: verdict.health,
        verification: verdict.verification,
        ...(verdict.mismatchReason ? { mismatchReason: verdict.mismatchReason } : {}),
        counted: false,
      };
    });
    const { counts, replicas: detail } = countReporterReplicas(plan, reporterNodes, replicas);
    const entry: IImageRolloutReporterStatus = {
      reporterId,
      reporterSessionId: envelope.reporterSessionId,
      clusterId,
      reporterNodeNames: reporterNodes,
      rolloutId: plan.rolloutId,
      rolloutGeneration: plan.rolloutGeneration,
      reportSequence: envelope.reportSequence,
      reportedAt: input.reportedAt,
      ...counts,
    };
    const evidenceEntry: ReporterEvidence = { reporterId, clusterId, reportedAt: input.reportedAt, replicas: detail };

    let persisted = false;
    let current = state;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const currentPlan = current.service.data.imageDeployment;
      if (!currentPlan || currentPlan.rolloutId !== plan.rolloutId) {
        throw stale(`rollout '${plan.rolloutId}' was superseded while the report was processed`, currentPlan);
      }
      const status = current.service.data.imageRolloutStatus;
      const reporters = status?.rolloutId === plan.rolloutId ? status.reporters : [];
      const previous = reporters.find((r) => r.reporterId === reporterId);
      if (previous) {
        if (previous.reporterSessionId === envelope.reporterSessionId) {
          if (envelope.reportSequence < previous.reportSequence) {
            throw stale(`reportSequence ${envelope.reportSequence} is lower than ${previous.reportSequence} already accepted for session '${envelope.reporterSessionId}'`, plan);
          }
          if (envelope.reportSequence === previous.reportSequence && status) return { kind: 'replayed', status };
        } else if (input.reportedAt <= previous.reportedAt) {
          throw stale(`session '${envelope.reporterSessionId}' reports older than the current session '${previous.reporterSessionId}'`, plan);
        }
      }
      const sessionOwner = reporters.find((r) => r.reporterId !== reporterId && r.reporterSessionId === envelope.reporterSessionId);
      if (sessionOwner) {
        throw validationFailed([{ field: '/immutableReport/reporterSessionId', message: `session '${envelope.reporterSessionId}' belongs to reporter '${sessionOwner.reporterId}'` }]);
      }
      const taken = reporters.find((r) => r.reporterId !== reporterId && r.reporterNodeNames.some((n) => reporterNodes.includes(n)));
      if (taken) {
        const node = taken.reporterNodeNames.find((n) => reporterNodes.includes(n));
        throw stale(`node '${node ?? ''}' is already reported by reporter '${taken.reporterId}' for this rollout`, plan);
      }
      if (!persisted) {
        await persist();
        persisted = true;
      }
      const now = deps.now();
      const next = aggregateStatus(plan, [...reporters.filter((r) => r.reporterId !== reporterId), entry], now);
      const evidence: RolloutEvidence = {
        rolloutId: plan.rolloutId,
        reporters: [
          ...(current.rolloutEvidence?.rolloutId === plan.rolloutId ? current.rolloutEvidence.reporters.filter((r) => r.reporterId !== reporterId) : []),
          evidenceEntry,
        ].sort((a, b) => a.reporterId.localeCompare(b.reporterId)),
      };
      const changed = !status || status.rolloutId !== next.rolloutId || aggregateKey(status) !== aggregateKey(next);
      if (await repos.services.compareAndSetStatus(service.id, plan.rolloutId, current.statusRevision, next, evidence, changed, now)) {
        return { kind: 'applied', status: next };
      }
      const reread = await repos.services.findRolloutState(service.id);
      if (!reread) throw new AppError('service-not-found', `service '${service.id}' does not exist`);
      current = reread;
    }
    throw new AppError('internal-error', 'the rollout status kept changing; try again');
  }

  return { report };
}

/** What an SSE listener is told about: the aggregate, not each reporter's bookkeeping. */
const aggregateKey = (s: IImageRolloutStatus): string => JSON.stringify([
  s.status, s.requiredReplicaCount, s.observedReplicaCount, s.healthyReplicaCount, s.verifiedReplicaCount, s.failedReplicaCount, s.mismatchReason ?? null,
]);
