import type { Repositories, StatusSnapshot } from '../domain/ports.js';
import { historyItemOf, type RolloutHistoryPage, type RolloutHistoryQuery } from '../domain/history.js';
import { rolloutView, type RolloutView } from '../domain/rolloutView.js';
import { errors } from '../errors.js';
import { refusal, success, type Result } from './result.js';

/** Read where a rollout stands: the rollout view, its status changes (SSE) and the rollout history. */
export function rolloutReads ({ repos }: { repos: Pick<Repositories, 'services' | 'rollouts'> }) {
  return {
    /** The plan, the status, each reporter's evidence and what blocks success (GET /v1/services/:id/rollout). */
    async readRollout (serviceId: string): Promise<Result<RolloutView>> {
      const state = await repos.services.findRolloutState(serviceId);
      if (!state) return refusal(errors.serviceNotFound(serviceId));
      return success(rolloutView({
        serviceId,
        plan: state.service.data.imageDeployment,
        status: state.service.data.imageRolloutStatus,
        revision: state.statusRevision,
        evidence: state.rolloutEvidence,
        automationHold: state.automationHold,
      }));
    },

    /** The stored status changes after `revision` (what an SSE stream starts from). */
    async readStatusEvents (serviceId: string, revision: number): Promise<Result<StatusSnapshot>> {
      const snapshot = await repos.services.statusEventsAfter(serviceId, revision);
      return snapshot ? success(snapshot) : refusal(errors.serviceNotFound(serviceId));
    },

    /** The audit trail: every rollout of a service, newest generation first, keyset-paged by generation. */
    async readRolloutHistory (serviceId: string, query: RolloutHistoryQuery): Promise<Result<RolloutHistoryPage>> {
      if (!(await repos.services.exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
      const limit = query.limit ?? 50;
      const records = await repos.rollouts.list(serviceId, limit + 1, query.cursor === undefined ? undefined : Number(query.cursor));
      const page = records.slice(0, limit);
      const last = page.at(-1);
      return success({
        rollouts: page.map(historyItemOf),
        nextCursor: records.length > limit && last ? String(last.generation) : undefined,
      });
    },
  };
}

export type RolloutReads = ReturnType<typeof rolloutReads>;
