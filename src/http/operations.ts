import type { IService } from '../contracts/index.js';
import { typedRequestContracts } from '../contracts/index.js';
import { can } from '../domain/principal.js';
import { rejectServerManagedFields, serviceOperations, ServiceListQuery, ServicePage } from '../domain/services.js';
import { releaseTypedRequestContracts } from '../contracts/releases.js';
import { releaseOperations } from '../domain/releases.js';
import { clusterContracts, clusterListLimits } from '../contracts/clusters.js';
import { clusterOperations, rejectDuplicateNodeNames } from '../domain/clusters.js';
import type { Stores } from '../store/index.js';
import { isAppError } from '../errors.js';
import type { AutomaticPromotionOutcome } from '../contracts/releases.js';
import type { PushEventIngestResult } from '../domain/releases.js';
import { isReplayedError, type ReleaseLifecycle, type RolloutRequest, type RolloutResult } from '../domain/releaseLifecycle.js';
import { CAS_CODES, type OperationMetrics } from '../metrics.js';
import { issuerOf, type RolloutIntent } from '../domain/rollouts.js';
import { rejectMissingCapability, type ReportOutcome } from '../domain/reports.js';
import { ReportDeploymentSnapshotsInput } from '../contracts/reports.js';
import type { Principal } from '../domain/principal.js';
import { defineOperation, type OperationContext } from './operation.js';

/**
 * Every operation of the API, defined once. The TypedRequest dispatcher exposes
 * each by its method name; the REST routes call the same definitions.
 */
export interface OperationDeps {
  stores: Stores;
  lifecycle: ReleaseLifecycle;
  reports: { report(input: ReportDeploymentSnapshotsInput, principal: Principal): Promise<ReportOutcome> };
  /** Promotions, rollbacks, reports and replays are counted at this boundary. */
  metrics: OperationMetrics;
}

export function createOperations ({ stores, lifecycle, reports, metrics }: OperationDeps) {
  const now = Date.now;
  const services = serviceOperations({ services: stores.services, now });
  const markReplayed = (ctx: OperationContext, replayed: boolean): void => {
    if (replayed) ctx.setHeader?.('idempotent-replayed', 'true');
  };
  /** Every promotion and rollback, manual or automatic, is counted here (mode × outcome). */
  const issueRollout = (req: RolloutRequest): Promise<RolloutResult> =>
    metrics.rollout(req.intent.kind === 'rollback' ? 'rollback' : req.intent.mode, lifecycle.issueRollout(req));

  /**
   * deployOnPush (DESIGN §5): at most once per event (the idempotency key is the event id),
   * under the same compare-and-swap as a manual promotion, never while an operator's rollback holds.
   */
  async function promoteAutomatically (result: PushEventIngestResult, reportedBy: string): Promise<AutomaticPromotionOutcome> {
    const { service, release, event } = result;
    if (!service.data.deployOnPush || !service.data.immutableImageRequired) return { outcome: 'skipped', reason: 'not-enabled' };
    try {
      const promoted = await issueRollout({
        serviceId: service.id,
        releaseId: release.id,
        idempotencyKey: `\u0001automatic:${event.eventId}`,
        intent: { kind: 'promotion', mode: 'automatic' },
        issuer: { subject: `registry-push:${event.actorUserId ?? reportedBy}`, role: 'system', type: 'machine' },
        reason: `automatic promotion: tag '${event.tag}' pushed (event ${event.eventId})`,
      });
      const plan = promoted.service.data.imageDeployment;
      return {
        outcome: 'promoted',
        ...(plan ? { rolloutId: plan.rolloutId, rolloutGeneration: plan.rolloutGeneration } : {}),
        ...(promoted.replayed ? { replayed: true } : {}),
      };
    } catch (err) {
      if (!isAppError(err)) throw err;
      const replayed = isReplayedError(err) ? { replayed: true } : {};
      if (err.code === 'automatic-promotion-skipped') return { outcome: 'skipped', reason: String(err.details['reason']), ...replayed };
      if (CAS_CODES.has(err.code)) {
        return { outcome: 'conflict', reason: err.message, ...replayed };
      }
      if (err.code === 'invalid-deployment-plan') return { outcome: 'skipped', reason: `invalid-deployment-plan: ${err.message}`, ...replayed };
      throw err;
    }
  }
  const releases = releaseOperations({ releases: stores.releases, pushEvents: stores.pushEvents, services: stores.services, now });
  const rc = releaseTypedRequestContracts;
  const clusters = clusterOperations({ clusters: stores.clusters, now });
  const c = typedRequestContracts;

  /** Promotion and rollback by a caller: the same lifecycle call, log line and replay header. */
  async function manualRollout (
    input: { serviceId: string, releaseId: string, idempotencyKey: string, expectedRolloutGeneration: number },
    ctx: OperationContext,
    intent: RolloutIntent
  ): Promise<{ service: IService }> {
    const result = await issueRollout({
      serviceId: input.serviceId,
      releaseId: input.releaseId,
      idempotencyKey: input.idempotencyKey,
      expectedRolloutGeneration: input.expectedRolloutGeneration,
      intent,
      issuer: issuerOf(ctx.principal),
      reason: ctx.reason ?? (intent.kind === 'rollback' ? 'manual rollback' : 'manual promotion'),
      fingerprintExtra: [ctx.reason ?? null],
    });
    markReplayed(ctx, result.replayed);
    if (!result.replayed) {
      ctx.log.info({ serviceId: input.serviceId, releaseId: input.releaseId, rolloutId: result.rolloutId }, intent.kind === 'rollback' ? 'rolled back' : 'promoted');
    }
    return { service: result.service };
  }

  return {
    registerCluster: defineOperation({
      method: clusterContracts.registerCluster.method,
      action: 'register clusters',
      roles: can.administer,
      request: clusterContracts.registerCluster.payload,
      response: clusterContracts.registerCluster.response,
      precheck: (input) => rejectDuplicateNodeNames(input, '/request'),
      handle: async (input) => ({ cluster: await clusters.registerCluster(input.clusterId, { name: input.name, nodeNames: input.nodeNames }) }),
    }),
    getCluster: defineOperation({
      method: clusterContracts.getCluster.method,
      action: 'read clusters',
      roles: can.read,
      request: clusterContracts.getCluster.payload,
      response: clusterContracts.getCluster.response,
      handle: async (input) => ({ cluster: await clusters.getCluster(input.clusterId) }),
    }),
    listClusters: defineOperation({
      method: clusterContracts.listClusters.method,
      action: 'read clusters',
      roles: can.read,
      request: clusterContracts.listClusters.payload,
      response: clusterContracts.listClusters.response,
      handle: async (input) => ({
        clusters: await clusters.listClusters({ limit: input.limit ?? clusterListLimits.default, ...(input.after === undefined ? {} : { after: input.after }) }),
      }),
    }),
    getServiceById: defineOperation({
      method: c.getServiceById.method,
      action: 'read services',
      roles: can.read,
      request: c.getServiceById.payload,
      response: c.getServiceById.response,
      handle: async (input) => ({ service: await services.getServiceById(input.serviceId) }),
    }),
    createService: defineOperation({
      method: c.createService.method,
      action: 'create services',
      roles: can.administer,
      request: c.createService.payload,
      response: c.createService.response,
      precheck: (input) => rejectServerManagedFields(field(input, 'serviceData'), '/request/serviceData'),
      handle: async (input) => ({ service: await services.createService(input.serviceData) }),
    }),
    listServices: defineOperation({
      method: 'listServices',
      action: 'read services',
      roles: can.read,
      request: ServiceListQuery,
      response: ServicePage,
      handle: async (input) => services.listServices(input, '/request'),
    }),
    updateService: defineOperation({
      method: c.updateService.method,
      action: 'update services',
      roles: can.administer,
      request: c.updateService.payload,
      response: c.updateService.response,
      precheck: (input) => rejectServerManagedFields(field(input, 'serviceData'), '/request/serviceData'),
      handle: async (input) => ({ service: await services.updateService(input.serviceId, input.serviceData) }),
    }),
    reportImmutableRegistryPushEvent: defineOperation({
      method: rc.reportImmutableRegistryPushEvent.method,
      action: 'push registry events',
      roles: can.release,
      request: rc.reportImmutableRegistryPushEvent.payload,
      response: rc.reportImmutableRegistryPushEvent.response,
      handle: async (input, ctx) => {
        const result = await releases.ingestPushEvent(input.event, { fieldPrefix: '/request/event', reportedBy: ctx.principal.subject });
        ctx.log.info({ serviceId: result.service.id, releaseId: result.release.id, eventId: input.event.eventId, duplicate: result.duplicate }, 'push event recorded');
        if (result.duplicate) metrics.pushEventReplayed();
        // Runs for duplicates too, so that a retry after a crash completes it; the key makes it once per event.
        const autoPromotion = await promoteAutomatically(result, ctx.principal.subject);
        if (autoPromotion.outcome !== 'skipped' || autoPromotion.reason !== 'not-enabled') {
          ctx.log.info({ serviceId: result.service.id, eventId: input.event.eventId, ...autoPromotion }, 'automatic promotion');
        }
        return { release: result.release, duplicate: result.duplicate, autoPromotion };
      },
    }),
    promoteServiceImageRelease: defineOperation({
      method: c.promoteServiceImageRelease.method,
      action: 'promote releases',
      roles: can.release,
      request: c.promoteServiceImageRelease.payload,
      response: c.promoteServiceImageRelease.response,
      handle: async (input, ctx) => manualRollout(input, ctx, {
        kind: 'promotion',
        mode: 'promotion',
        ...(input.expectedCurrentRolloutId === undefined ? {} : { expectedCurrentRolloutId: input.expectedCurrentRolloutId }),
      }),
    }),
    rollbackServiceImageRelease: defineOperation({
      method: c.rollbackServiceImageRelease.method,
      action: 'roll back releases',
      roles: can.release,
      request: c.rollbackServiceImageRelease.payload,
      response: c.rollbackServiceImageRelease.response,
      handle: async (input, ctx) => manualRollout(input, ctx, { kind: 'rollback', expectedCurrentRolloutId: input.expectedCurrentRolloutId }),
    }),
    reportDeploymentSnapshots: defineOperation({
      method: c.reportDeploymentSnapshots.method,
      action: 'report deployment snapshots',
      roles: can.report,
      request: ReportDeploymentSnapshotsInput,
      response: c.reportDeploymentSnapshots.response,
      precheck: (input) => {
        try {
          rejectMissingCapability(input);
        } catch (err) {
          metrics.reportRefused(err);
          throw err;
        }
      },
      handle: async (input, ctx) => {
        const outcome = await metrics.report(reports.report(input, ctx.principal));
        ctx.log.info({ serviceId: input.serviceId, outcome: outcome.kind, status: 'status' in outcome ? outcome.status.status : undefined }, 'snapshot report');
        ctx.setOutcome?.(outcome);
        return {};
      },
    }),
    getServiceImageReleases: defineOperation({
      method: c.getServiceImageReleases.method,
      action: 'read releases',
      roles: can.read,
      request: c.getServiceImageReleases.payload,
      response: c.getServiceImageReleases.response,
      handle: async (input) => ({ releases: await releases.getServiceImageReleases(input.serviceId) }),
    }),
    getServiceImageReleasesPage: defineOperation({
      method: rc.getServiceImageReleasesPage.method,
      action: 'read releases',
      roles: can.read,
      request: rc.getServiceImageReleasesPage.payload,
      response: rc.getServiceImageReleasesPage.response,
      handle: async ({ serviceId, ...query }) => releases.getServiceImageReleasesPage(serviceId, query, '/request'),
    }),
    getServiceImageTagHistory: defineOperation({
      method: rc.getServiceImageTagHistory.method,
      action: 'read releases',
      roles: can.read,
      request: rc.getServiceImageTagHistory.payload,
      response: rc.getServiceImageTagHistory.response,
      handle: async ({ serviceId, tag, ...query }) => releases.getServiceImageTagHistory(serviceId, tag, query, '/request'),
    }),
  };
}

export type Operations = ReturnType<typeof createOperations>;

const field = (value: unknown, name: string): unknown =>
  value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
