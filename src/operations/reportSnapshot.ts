import type { IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { ReportDeploymentSnapshotsInput } from '../contracts/reports.js';
import type { Clock, Repositories, ServiceRolloutState } from '../domain/ports.js';
import {
  deploymentProblems, envelopeRefusal, foreignNodeRefusal, missingCapabilityRefusal, reportNodeScope, reportedNodes, reporterEntryOf, reporterIdOf,
  sequenceVerdict, staleReport,
} from '../domain/reports.js';
import { aggregateKey, aggregateStatus, type RolloutEvidence } from '../domain/rolloutStatus.js';
import { errors, type AppError } from '../errors.js';
import { invalid, refusal, success, type Actor, type Result } from './result.js';
import type { Telemetry } from './telemetry.js';

/**
 * Report a Coreflow deployment snapshot (DESIGN §5 "Snapshot reports", "Rollout status"):
 * authorize the reporter's nodes, persist its deployments, and for services that require
 * immutable images check the report envelope, re-verify every replica's evidence and fold the
 * report into the rollout status with a compare-and-swap on the status revision (concurrent
 * reporters never lose each other's updates). A refused report changes nothing.
 */

export type ReportOutcome =
  | { kind: 'recorded' }
  | { kind: 'applied', status: IImageRolloutStatus }
  | { kind: 'replayed', status: IImageRolloutStatus };

export interface ReportSnapshotDeps {
  repos: Pick<Repositories, 'services' | 'clusters' | 'deployments'>;
  telemetry: Telemetry;
  now: Clock;
}

const MAX_CAS_ATTEMPTS = 64;

type ImmutableReport = ReportDeploymentSnapshotsInput & { immutableReport: NonNullable<ReportDeploymentSnapshotsInput['immutableReport']> };

export function reportSnapshot (deps: ReportSnapshotDeps) {
  const { repos } = deps;

  /** Folds the report into the rollout status: compare-and-swap on the status revision, re-read on a lost race. */
  async function fold (state: ServiceRolloutState, input: ImmutableReport, reporter: { reporterId: string, clusterId: string }, persist: () => Promise<void>) {
    const plan = state.service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const { entry, evidence: evidenceEntry } = reporterEntryOf(plan, input, reporter);
    let persisted = false;
    let current = state;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const currentPlan = current.service.data.imageDeployment;
      if (!currentPlan || currentPlan.rolloutId !== plan.rolloutId) {
        return refusal<ReportOutcome>(staleReport(`rollout '${plan.rolloutId}' was superseded while the report was processed`, currentPlan));
      }
      const status = current.service.data.imageRolloutStatus;
      const reporters = status?.rolloutId === plan.rolloutId ? status.reporters : [];
      const verdict = sequenceVerdict(plan, reporters, entry);
      if (verdict.kind === 'refuse') return refusal<ReportOutcome>(verdict.error);
      if (verdict.kind === 'replay' && status) return success<ReportOutcome>({ kind: 'replayed', status }, true);
      if (!persisted) {
        await persist();
        persisted = true;
      }
      const now = deps.now();
      const next = aggregateStatus(plan, [...reporters.filter((r) => r.reporterId !== entry.reporterId), entry], now);
      const kept = current.rolloutEvidence?.rolloutId === plan.rolloutId ? current.rolloutEvidence.reporters : [];
      const evidence: RolloutEvidence = {
        rolloutId: plan.rolloutId,
        reporters: [...kept.filter((r) => r.reporterId !== entry.reporterId), evidenceEntry].sort((a, b) => a.reporterId.localeCompare(b.reporterId)),
      };
      const event = !status || status.rolloutId !== next.rolloutId || aggregateKey(status) !== aggregateKey(next);
      const written = await repos.services.compareAndSetStatus({
        serviceId: state.service.id, rolloutId: plan.rolloutId, revision: current.statusRevision, status: next, evidence, event, now,
      });
      if (written) return success<ReportOutcome>({ kind: 'applied', status: next });
      deps.telemetry.statusConflict();
      const reread = await repos.services.findRolloutState(state.service.id);
      if (!reread) return refusal<ReportOutcome>(errors.serviceNotFound(state.service.id));
      current = reread;
    }
    throw new Error('the rollout status kept changing; try again');
  }

  async function report (input: ReportDeploymentSnapshotsInput, actor: Actor): Promise<Result<ReportOutcome>> {
    const { principal } = actor;
    if (principal.clusterId === undefined) return refusal(errors.forbidden('only cluster tokens may report deployments'));
    const clusterId = principal.clusterId;
    const state = await repos.services.findRolloutState(input.serviceId);
    if (!state) return refusal(errors.serviceNotFound(input.serviceId));
    const scoped = reportNodeScope(input);
    if ('problems' in scoped) return invalid(scoped.problems);
    const problems = deploymentProblems(input, scoped.scope);
    if (problems.length > 0) return invalid(problems);
    const nodes = reportedNodes(input, scoped.scope);
    const foreign = nodes.length === 0 ? undefined : foreignNodeRefusal(principal, nodes, await repos.clusters.findNodeOwners(nodes));
    if (foreign) return refusal(foreign);

    const reporterId = reporterIdOf(principal);
    const persist = (): Promise<void> => repos.deployments.replaceSnapshot({
      serviceId: input.serviceId, clusterId, deployments: input.deployments, nodeScope: scoped.scope, reportedAt: input.reportedAt, reportedBy: reporterId,
    });
    if (state.service.data.immutableImageRequired !== true) {
      await persist();
      return success({ kind: 'recorded' });
    }
    // Immutable deployment: the envelope is mandatory and everything in it is checked. (The reporter
    // capability was checked before schema validation, by the adapters.)
    const unacceptable = envelopeRefusal(state.service, input, clusterId);
    if (unacceptable) return refusal(unacceptable);
    return fold(state, input as ImmutableReport, { reporterId, clusterId }, persist);
  }

  const reportSnapshotOf = async (input: ReportDeploymentSnapshotsInput, actor: Actor): Promise<Result<ReportOutcome>> => {
    const result = await deps.telemetry.report(report(input, actor));
    if (result.ok) {
      const status = 'status' in result.value ? result.value.status.status : undefined;
      actor.log.info({ serviceId: input.serviceId, outcome: result.value.kind, status }, 'snapshot report');
    }
    return result;
  };
  /** Before schema validation: a reporter without the capability gets its own code (and is counted), not a schema error. */
  const precheck = (raw: unknown): AppError | undefined => {
    const refused = missingCapabilityRefusal(raw);
    if (refused) deps.telemetry.reportRefused(refused);
    return refused;
  };
  return Object.assign(reportSnapshotOf, { precheck });
}
