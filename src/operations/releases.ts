import { releasePageLimits, type IImageRelease, type ImageReleasePage, type ImageTagHistory } from '../contracts/index.js';
import type { Repositories } from '../domain/ports/index.js';
import { cursorProblem, decodeCursor, encodeCursor, tagHistoryQueryProblems } from '../domain/releases.js';
import { signatureVerdictOf, type ReleaseVerificationView } from '../domain/trust/releaseVerification.js';
import { errors } from '../errors.js';
import { invalid, refusal, success, type Result } from '../domain/result.js';

/** Read a service's image releases (newest observation first) and its tag ledger (docs/lifecycle.md "History"). */
export function releaseReads ({ repos }: { repos: Pick<Repositories, 'catalogue' | 'pushEvents' | 'releases' | 'rollouts'> }) {
  const exists = (serviceId: string): Promise<boolean> => repos.catalogue.exists(serviceId);

  return {
    /** Upstream `getServiceImageReleases`: newest observation first, at most `upstreamListingCap`. */
    async listReleases (serviceId: string): Promise<Result<{ releases: IImageRelease[] }>> {
      if (!(await exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
      return success({ releases: await repos.releases.listByService(serviceId, { limit: releasePageLimits.upstreamListingCap }) });
    },

    /** One page of a service's releases (keyset pagination, stable under concurrent inserts). */
    async listReleasePage (serviceId: string, query: { limit?: number, cursor?: string }): Promise<Result<ImageReleasePage>> {
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      if (query.cursor !== undefined && after === undefined) return invalid([cursorProblem]);
      if (!(await exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
      const limit = query.limit ?? releasePageLimits.defaultPageSize;
      const rows = await repos.releases.listByService(serviceId, { limit: limit + 1, after });
      const releases = rows.slice(0, limit);
      const last = releases.at(-1);
      const ids = releases.map((r) => r.id);
      const [verified, succeeded] = await Promise.all([repos.releases.findVerifications(ids), repos.rollouts.lastSucceeded(serviceId, ids)]);
      const verifications = verified.size === 0 ? {} : { verifications: Object.fromEntries([...verified].map(([id, v]) => [id, signatureVerdictOf(v)])) };
      const extras = { ...verifications, ...(succeeded.size === 0 ? {} : { lastSucceededAt: Object.fromEntries(succeeded) }) };
      return success(rows.length > limit && last
        ? { releases, nextCursor: encodeCursor({ time: last.data.lastObservedAt, id: last.id }), ...extras }
        : { releases, ...extras });
    },

    /**
     * The release's signature verification (docs/trust.md): the verdict, who signed, the policy digest and
     * the signed Verification Summary a promotion of it relied on; absent until one passed a trust policy.
     */
    async readVerification (serviceId: string, releaseId: string): Promise<Result<ReleaseVerificationView>> {
      const release = await repos.releases.findById(releaseId);
      if (!release || release.data.serviceId !== serviceId) {
        return refusal((await exists(serviceId)) ? errors.releaseNotFound(serviceId, releaseId) : errors.serviceNotFound(serviceId));
      }
      const verification = await repos.releases.findVerification(releaseId);
      return success(verification ? { releaseId, verification } : { releaseId });
    },

    /** The tag ledger: which digest the tag pointed to, newest first, or at one instant (`at`). */
    async tagHistory (serviceId: string, tag: string, query: { at?: number, limit?: number, cursor?: string }): Promise<Result<ImageTagHistory>> {
      const problems = tagHistoryQueryProblems(query);
      if (problems.length > 0) return invalid(problems);
      if (!(await exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
      if (query.at !== undefined) return success({ tag, entries: await repos.pushEvents.tagHistory(serviceId, tag, { at: query.at, limit: 1 }) });
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      const limit = query.limit ?? releasePageLimits.defaultPageSize;
      const rows = await repos.pushEvents.tagHistory(serviceId, tag, { limit: limit + 1, after });
      const entries = rows.slice(0, limit);
      const last = entries.at(-1);
      return success(rows.length > limit && last
        ? { tag, entries, nextCursor: encodeCursor({ time: last.observedAt, id: last.eventId }) }
        : { tag, entries });
    },
  };
}

export type ReleaseReads = ReturnType<typeof releaseReads>;
