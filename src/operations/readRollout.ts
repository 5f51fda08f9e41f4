import { Type, type Static } from '@sinclair/typebox';
import { ReportedDeployment } from '../contracts/reports.js';
import { deliveryMetrics, metricsWindow, type DeliveryMetrics, type DeliveryMetricsQuery } from '../domain/deliveryMetrics.js';
import { effectiveRolloutPolicy } from '../domain/lifecycle.js';
import { historyItemOf, type RolloutHistoryPage, type RolloutHistoryQuery } from '../domain/history.js';
import type { Clock, Repositories, StatusSnapshot } from '../domain/ports/index.js';
import { rolloutRecordId, type ReportRecord } from '../domain/reports.js';
import { rolloutView, type RolloutView } from '../domain/rolloutView.js';
import { errors } from '../errors.js';
import { refusal, success, type Result } from '../domain/result.js';

/** A service's stored deployments: what each reporter's latest accepted report stated. */
export const StoredDeployments = Type.Object({
  rolloutId: Type.Optional(Type.String({ description: 'the rollout the reports were made for (absent: a service without the immutable policy)' })),
  deployments: Type.Array(Type.Object({
    clusterId: Type.String(),
    reporterId: Type.String(),
    reportedAt: Type.Integer({ description: 'the report\'s reportedAt (reporter\'s clock)' }),
    receivedAt: Type.Integer({ description: 'when the server accepted the report (server\'s clock)' }),
    deployment: ReportedDeployment,
  })),
});
export type StoredDeployments = Static<typeof StoredDeployments>;

const deploymentsOf = (records: readonly ReportRecord[]): StoredDeployments['deployments'] => records
  .flatMap((r) => {
    const scoped = new Map((r.nodeSources ?? []).map((s) => [s.nodeName, s]));
    return r.deployments.map((deployment) => {
      const source = (deployment.nodeName === undefined ? undefined : scoped.get(deployment.nodeName)) ??
        { reporterId: r.reporterId, reportedAt: r.position.reportedAt, receivedAt: r.position.receivedAt };
      return { clusterId: r.clusterId, reporterId: source.reporterId, reportedAt: source.reportedAt, receivedAt: source.receivedAt, deployment };
    });
  })
  .sort((a, b) => a.clusterId.localeCompare(b.clusterId) || (a.deployment.nodeName ?? '').localeCompare(b.deployment.nodeName ?? '') ||
    a.deployment.id.localeCompare(b.deployment.id));

/** The whole history the delivery metrics look at, at most (newest first). */
const METRICS_HISTORY_LIMIT = 10_000;

type ReadPorts = Pick<Repositories, 'catalogue' | 'releases' | 'reports' | 'rollouts' | 'statusEvents' | 'statusSummaries'>;

/** What the reads need: the stores they read and the clock. */
export interface ReadDeps { repos: ReadPorts, now: Clock }

/** The current rollout's reports (by `_id`: the reporters its status names). */
const rolloutReports = (repos: ReadPorts, rolloutId: string, reporterIds: readonly string[]): Promise<ReportRecord[]> =>
  repos.reports.findRecords(reporterIds.map((reporterId) => rolloutRecordId(rolloutId, reporterId)));

/** The plan, the status, each reporter's evidence and what blocks success (GET /v1/services/:id/rollout). */
export async function readRollout ({ repos, now }: ReadDeps, serviceId: string): Promise<Result<RolloutView>> {
  const state = await repos.statusSummaries.findRolloutState(serviceId);
  if (!state) return refusal(errors.serviceNotFound(serviceId));
  const { imageDeployment: plan, imageRolloutStatus: status } = state.service.data;
  return success(rolloutView({
    serviceId,
    plan,
    status,
    revision: state.statusRevision,
    evidence: state.evidence,
    automationHold: state.automationHold,
    lifecycle: state.lifecycle,
    policy: effectiveRolloutPolicy(state.service.data.rolloutPolicy),
    queued: state.automationQueue,
    now: now(),
  }));
}

/**
 * The stored deployments (GET /v1/services/:id/deployments): for a service with the immutable
 * policy, what each reporter last stated for the current rollout; without it, for the service.
 */
export async function readDeployments ({ repos }: ReadDeps, serviceId: string): Promise<Result<StoredDeployments>> {
  const scope = await repos.catalogue.findDeploymentScope(serviceId);
  if (!scope) return refusal(errors.serviceNotFound(serviceId));
  const { immutableImageRequired, rolloutId, reporterIds } = scope;
  if (!immutableImageRequired || rolloutId === undefined) {
    return success({ deployments: deploymentsOf(await repos.reports.listServiceRecords(serviceId)) });
  }
  return success({ rolloutId, deployments: deploymentsOf(await rolloutReports(repos, rolloutId, reporterIds)) });
}

/** The stored status changes after `revision` (what an SSE stream starts from). */
export async function readStatusEvents ({ repos }: ReadDeps, serviceId: string, revision: number): Promise<Result<StatusSnapshot>> {
  const snapshot = await repos.statusEvents.statusEventsAfter(serviceId, revision);
  return snapshot ? success(snapshot) : refusal(errors.serviceNotFound(serviceId));
}

/** Deployment frequency, lead time, change-failure rate and time to restore over a window (src/domain/deliveryMetrics.ts). */
export async function readDeliveryMetrics ({ repos, now }: ReadDeps, serviceId: string, query: DeliveryMetricsQuery): Promise<Result<DeliveryMetrics>> {
  if (!(await repos.catalogue.exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
  const { from, to } = metricsWindow(query, now());
  // The window's rollouts and the one current at its start; later ones too (a failure's restore may come after `to`).
  const rollouts = await repos.rollouts.listOutcomes(serviceId, METRICS_HISTORY_LIMIT, from);
  const firstObservedAt = await repos.releases.firstObservedAt(rollouts.map((r) => r.releaseId));
  return success(deliveryMetrics({ serviceId, rollouts, firstObservedAt, from, to }));
}

/** The audit trail: every rollout of a service, newest generation first, keyset-paged by generation. */
export async function readRolloutHistory ({ repos }: ReadDeps, serviceId: string, query: RolloutHistoryQuery): Promise<Result<RolloutHistoryPage>> {
  if (!(await repos.catalogue.exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
  const limit = query.limit ?? 50;
  const records = await repos.rollouts.list(serviceId, limit + 1, query.cursor === undefined ? undefined : Number(query.cursor));
  const page = records.slice(0, limit);
  const last = page.at(-1);
  return success({
    rollouts: page.map(historyItemOf),
    nextCursor: records.length > limit && last ? String(last.generation) : undefined,
  });
}

/** Read where a rollout stands: the rollout view, its status changes (SSE), the stored deployments and the rollout history — bound to their dependencies. */
export function rolloutReads (deps: ReadDeps) {
  return {
    readRollout: (serviceId: string) => readRollout(deps, serviceId),
    readDeployments: (serviceId: string) => readDeployments(deps, serviceId),
    readStatusEvents: (serviceId: string, revision: number) => readStatusEvents(deps, serviceId, revision),
    readDeliveryMetrics: (serviceId: string, query: DeliveryMetricsQuery) => readDeliveryMetrics(deps, serviceId, query),
    readRolloutHistory: (serviceId: string, query: RolloutHistoryQuery) => readRolloutHistory(deps, serviceId, query),
  };
}

export type RolloutReads = ReturnType<typeof rolloutReads>;
