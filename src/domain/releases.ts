import { createHash } from 'node:crypto';
import {
  buildDigestPinnedImageReference, ociTagPattern, releasePageLimits,
  type IImageRelease, type IImmutableRegistryPushEvent, type IRegistryTarget, type IService,
  type ImageReleasePage, type ImageTagHistory, type ImageTagHistoryEntry,
} from '../contracts/index.js';
import { AppError, serviceNotFound, validationFailed, type Problem } from '../errors.js';
import { compareNames } from './clusters.js';
import type { ServiceRepository } from './services.js';

/**
 * Image releases: ingestion of immutable registry push events, the release listing
 * and the tag ledger (DESIGN §5 "Releases", "History").
 *
 * Crash safety without transactions: every accepted event is stored first (its
 * eventId is the dedup key), then the release is upserted with idempotent operators
 * only ($setOnInsert, $addToSet, $min, $max), its observationCount being the number
 * of stored events of the release written with $max. Whatever step a crash
 * interrupts, re-sending the same event completes it, and no interleaving of writers
 * lowers a counter.
 */

/** What names a release, taken from a push event. Two events of one release agree on all of it. */
export interface ReleaseIdentity {
  releaseId: string;
  serviceId: string;
  registryHost: string;
  repository: string;
  registryRootDigest: IImageRelease['data']['registryRootDigest'];
  imageId: string;
  manifestMediaType: IImageRelease['data']['manifestMediaType'];
  digestPinnedImageReference: string;
}

export interface ReleaseObservation {
  identity: ReleaseIdentity;
  tag: string;
  observedAt: number;
  /** Stored events of the release, counted after this event was stored. */
  observationCount: number;
}

export type RecordObservationResult =
  | { outcome: 'recorded', release: IImageRelease }
  /** The releaseId names another tuple, or the tuple has another releaseId (unique indexes). */
  | { outcome: 'identity-conflict' };

/** A position in a newest-first listing: the sort key of the last item returned. */
export interface KeysetPosition {
  /** `lastObservedAt` (releases) or `observedAt` (tag ledger). */
  time: number;
  /** releaseId (releases) or eventId (tag ledger). */
  id: string;
}

export interface ReleaseRepository {
  findById(releaseId: string): Promise<IImageRelease | null>;
  /** The releases whose id is `identity.releaseId` or whose (service, host, repository, digest) is the identity's: at most two. */
  findByIdOrTuple(identity: ReleaseIdentity): Promise<IImageRelease[]>;
  /** The idempotent upsert of one observation; never lowers a counter, never sets acceptedAt. */
  recordObservation(observation: ReleaseObservation): Promise<RecordObservationResult>;
  /** A service's releases, `lastObservedAt` desc then id desc, strictly after `after`. */
  listByService(serviceId: string, page: { limit: number, after?: KeysetPosition }): Promise<IImageRelease[]>;
}

export interface StoredPushEvent {
  event: IImmutableRegistryPushEvent;
  /** `pushEventFingerprint(event)`: tells a retry (same content) from a reused eventId. */
  fingerprint: string;
  recordedAt: number;
  /** Subject of the verified token that reported the event. */
  reportedBy: string;
}

export interface PushEventRepository {
  findById(eventId: string): Promise<StoredPushEvent | null>;
  /** false when the eventId is already recorded (unique `_id`). */
  insert(record: StoredPushEvent): Promise<boolean>;
  /** Removes the event only if it still has this fingerprint. */
  remove(eventId: string, fingerprint: string): Promise<void>;
  /** Stored events whose identity is exactly this release's. */
  countForRelease(identity: ReleaseIdentity): Promise<number>;
  /** A tag's events, `observedAt` desc then eventId desc; `at`: only `observedAt <= at`. */
  tagHistory(serviceId: string, tag: string, query: { at?: number, limit: number, after?: KeysetPosition }): Promise<ImageTagHistoryEntry[]>;
}

/** What ingestion returns; automatic promotion (src/http/operations.ts) acts on it. */
export interface PushEventIngestResult {
  release: IImageRelease;
  /** true when the eventId was already recorded with the same content. */
  duplicate: boolean;
  service: IService;
  event: IImmutableRegistryPushEvent;
}

export interface ReleaseDeps {
  releases: ReleaseRepository;
  pushEvents: PushEventRepository;
  services: Pick<ServiceRepository, 'findById'>;
  now: () => number;
}

// Pure rules -------------------------------------------------------------------

/** JSON with object keys sorted at every level: the same value always gives the same text. */
const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => compareNames(a, b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
};

/** sha256 of the event's canonical JSON: equal for the same content whatever its key order. */
export const pushEventFingerprint = (event: IImmutableRegistryPushEvent): string =>
  createHash('sha256').update(canonicalJson(event)).digest('hex');

const ociTag = new RegExp(ociTagPattern);

/** Whether the upstream reference builder accepts `host` / `repository`, each checked alone (with a known-good rest). */
const knownGoodDigest = `sha256:${'0'.repeat(64)}` as const;
const builds = (host: string, repository: string): boolean => {
  try {
    buildDigestPinnedImageReference(host, repository, knownGoodDigest);
    return true;
  } catch {
    return false;
  }
};

/**
 * The checks a schema cannot express, after schema validation: canonical host and
 * repository (the upstream builder), an OCI tag (the ledger is addressed by tag),
 * and `digestPinnedImageReference === buildDigestPinnedImageReference(host, repo, digest)`.
 * `fieldPrefix` is where the event sits in the request (`/body`, `/request/event`).
 */
export function assertPushEventConsistent (event: IImmutableRegistryPushEvent, fieldPrefix: string): void {
  const problems: Problem[] = [];
  const hostOk = builds(event.registryHost, 'a');
  const repositoryOk = builds('localhost', event.repository);
  if (!hostOk) problems.push({ field: `${fieldPrefix}/registryHost`, message: 'must be a canonical OCI registry host (lower case, optional :port)' });
  if (!repositoryOk) problems.push({ field: `${fieldPrefix}/repository`, message: 'must be a canonical OCI repository name (lower case path components)' });
  if (!ociTag.test(event.tag)) problems.push({ field: `${fieldPrefix}/tag`, message: `must match ${ociTagPattern}` });
  if (hostOk && repositoryOk) {
    const expected = buildDigestPinnedImageReference(event.registryHost, event.repository, event.registryRootDigest);
    if (event.digestPinnedImageReference !== expected) {
      problems.push({ field: `${fieldPrefix}/digestPinnedImageReference`, message: `must be '${expected}' (registryHost/repository@registryRootDigest)` });
    }
  }
  if (problems.length > 0) throw validationFailed(problems);
}

/**
 * Whether an event's (canonical) host and repository are the service's registry
 * target: the host compares case-insensitively (DNS names are), the repository
 * exactly (OCI repository names are lower case, so an upper-case target matches
 * nothing). No aliasing: `docker.io` ≠ `index.docker.io`, `host` ≠ `host:443`,
 * `web` ≠ `library/web`. The target's `tag` and `imageId` are not compared:
 * every tag pushed to the repository is observed.
 */
export const registryTargetMatches = (target: IRegistryTarget, event: Pick<IImmutableRegistryPushEvent, 'registryHost' | 'repository'>): boolean =>
  target.registryHost.toLowerCase() === event.registryHost && target.repository === event.repository;

/** The opaque cursor of a keyset position: base64url of `[time, id]`. */
export const encodeCursor = (position: KeysetPosition): string =>
  Buffer.from(JSON.stringify([position.time, position.id]), 'utf8').toString('base64url');

/** The position a cursor names; `validation-failed` naming `field` when it is not one of ours. */
export function decodeCursor (cursor: string, field: string): KeysetPosition {
  const malformed = () => validationFailed([{ field, message: 'is not a cursor returned by this API' }]);
  let decoded: unknown;
  try {
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    // Buffer decoding is lenient: only the exact encoding of a key counts.
    if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw malformed();
    decoded = JSON.parse(text);
  } catch {
    throw malformed();
  }
  if (!Array.isArray(decoded) || decoded.length !== 2) throw malformed();
  const [time, id] = decoded as unknown[];
  if (typeof time !== 'number' || !Number.isSafeInteger(time) || time < 0) throw malformed();
  if (typeof id !== 'string' || id.length < 1 || id.length > 128) throw malformed();
  return { time, id };
}

/** Tag history query rules a schema cannot express. */
export function assertTagHistoryQuery (query: { at?: number, cursor?: string }, fieldPrefix: string): void {
  if (query.at !== undefined && query.cursor !== undefined) {
    throw validationFailed([{ field: `${fieldPrefix}/cursor`, message: 'does not apply with `at`, which answers a single entry' }]);
  }
  if (query.cursor !== undefined) decodeCursor(query.cursor, `${fieldPrefix}/cursor`);
}

export const releaseIdentityOf = (event: IImmutableRegistryPushEvent): ReleaseIdentity => ({
  releaseId: event.releaseId,
  serviceId: event.serviceId,
  registryHost: event.registryHost,
  repository: event.repository,
  registryRootDigest: event.registryRootDigest,
  imageId: event.imageId,
  manifestMediaType: event.manifestMediaType,
  digestPinnedImageReference: event.digestPinnedImageReference,
});

/** True when an existing release is the one the identity names (same id, tuple and attributes). */
export const isSameRelease = (release: IImageRelease, identity: ReleaseIdentity): boolean =>
  release.id === identity.releaseId &&
  release.data.serviceId === identity.serviceId &&
  release.data.registryHost === identity.registryHost &&
  release.data.repository === identity.repository &&
  release.data.registryRootDigest === identity.registryRootDigest &&
  release.data.imageId === identity.imageId &&
  release.data.manifestMediaType === identity.manifestMediaType;

const identityConflict = (identity: ReleaseIdentity, existing?: IImageRelease): AppError => {
  const tuple = `${identity.registryHost}/${identity.repository}@${identity.registryRootDigest} of service '${identity.serviceId}'`;
  const detail = !existing
    ? `release '${identity.releaseId}' conflicts with an existing release (${tuple})`
    : existing.id === identity.releaseId
      ? `release id '${identity.releaseId}' already names ${existing.data.registryHost}/${existing.data.repository}@${existing.data.registryRootDigest} of service '${existing.data.serviceId}' (image '${existing.data.imageId}', ${existing.data.manifestMediaType})`
      : `${tuple} is already release '${existing.id}'`;
  return new AppError('release-identity-conflict', detail, {
    details: { releaseId: identity.releaseId, ...(existing ? { existingReleaseId: existing.id } : {}) },
  });
};

// Operations -------------------------------------------------------------------

export function releaseOperations (deps: ReleaseDeps) {
  const requireService = async (serviceId: string): Promise<IService> => {
    const service = await deps.services.findById(serviceId);
    if (!service) throw serviceNotFound(serviceId);
    return service;
  };

  /** Counts the release's stored events, then upserts; a conflict removes the (refused) event again. */
  const observe = async (event: IImmutableRegistryPushEvent, fingerprint: string): Promise<IImageRelease> => {
    const identity = releaseIdentityOf(event);
    const observationCount = await deps.pushEvents.countForRelease(identity);
    const result = await deps.releases.recordObservation({ identity, tag: event.tag, observedAt: event.observedAt, observationCount });
    if (result.outcome === 'recorded') return result.release;
    // Lost a race to an incompatible release: the event can never belong to one, so it leaves no trace.
    await deps.pushEvents.remove(event.eventId, fingerprint);
    const [existing] = (await deps.releases.findByIdOrTuple(identity)).filter((r) => !isSameRelease(r, identity));
    throw identityConflict(identity, existing);
  };

  const replay = async (event: IImmutableRegistryPushEvent, fingerprint: string, recorded: StoredPushEvent): Promise<IImageRelease> => {
    if (recorded.fingerprint !== fingerprint) {
      throw new AppError('push-event-conflict', `event '${event.eventId}' was already recorded with different content`, {
        details: { eventId: event.eventId },
      });
    }
    // Same event again: re-run the idempotent upsert, which completes a write a crash interrupted.
    return observe(event, fingerprint);
  };

  return {
    /**
     * Checks (in this order, nothing written when one fails): canonical names and
     * pinned reference, service exists, registry target; then records the event and
     * upserts its release. Schema validation happens before, in the adapters.
     */
    async ingestPushEvent (event: IImmutableRegistryPushEvent, opts: { fieldPrefix: string, reportedBy: string }): Promise<PushEventIngestResult> {
      assertPushEventConsistent(event, opts.fieldPrefix);
      const service = await requireService(event.serviceId);
      const target = service.data.registryTarget;
      if (!target || !registryTargetMatches(target, event)) {
        throw new AppError('registry-target-mismatch', target
          ? `${event.registryHost}/${event.repository} is not the registry target ${target.registryHost}/${target.repository} of service '${service.id}'`
          : `service '${service.id}' has no registry target`, {
          details: { serviceId: service.id, registryHost: event.registryHost, repository: event.repository },
        });
      }

      const fingerprint = pushEventFingerprint(event);
      const recorded = await deps.pushEvents.findById(event.eventId);
      if (recorded) return { release: await replay(event, fingerprint, recorded), duplicate: true, service, event };

      // Refuse an identity conflict before writing anything; the unique indexes catch the races.
      const identity = releaseIdentityOf(event);
      const [conflicting] = (await deps.releases.findByIdOrTuple(identity)).filter((r) => !isSameRelease(r, identity));
      if (conflicting) throw identityConflict(identity, conflicting);

      const record: StoredPushEvent = { event, fingerprint, recordedAt: deps.now(), reportedBy: opts.reportedBy };
      // A lost insert race is a duplicate; the winner vanishing again (it was refused and removed) frees the id.
      for (let attempt = 1; ; attempt++) {
        if (await deps.pushEvents.insert(record)) return { release: await observe(event, fingerprint), duplicate: false, service, event };
        const winner = await deps.pushEvents.findById(event.eventId);
        if (winner) return { release: await replay(event, fingerprint, winner), duplicate: true, service, event };
        if (attempt >= 3) throw new Error(`push event '${event.eventId}' could not be recorded: its id keeps being taken and released`);
      }
    },

    /** Upstream `getServiceImageReleases`: newest observation first, at most `upstreamListingCap`. */
    async getServiceImageReleases (serviceId: string): Promise<IImageRelease[]> {
      await requireService(serviceId);
      return deps.releases.listByService(serviceId, { limit: releasePageLimits.upstreamListingCap });
    },

    /** One page of a service's releases (keyset pagination, stable under concurrent inserts). */
    async getServiceImageReleasesPage (serviceId: string, query: { limit?: number, cursor?: string }, fieldPrefix: string): Promise<ImageReleasePage> {
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, `${fieldPrefix}/cursor`);
      await requireService(serviceId);
      const limit = query.limit ?? releasePageLimits.defaultPageSize;
      const rows = await deps.releases.listByService(serviceId, { limit: limit + 1, ...(after ? { after } : {}) });
      const releases = rows.slice(0, limit);
      const last = releases[releases.length - 1];
      return rows.length > limit && last
        ? { releases, nextCursor: encodeCursor({ time: last.data.lastObservedAt, id: last.id }) }
        : { releases };
    },

    /** The tag ledger: which digest the tag pointed to, newest first, or at one instant (`at`). */
    async getServiceImageTagHistory (serviceId: string, tag: string, query: { at?: number, limit?: number, cursor?: string }, fieldPrefix: string): Promise<ImageTagHistory> {
      assertTagHistoryQuery(query, fieldPrefix);
      await requireService(serviceId);
      if (query.at !== undefined) {
        return { tag, entries: await deps.pushEvents.tagHistory(serviceId, tag, { at: query.at, limit: 1 }) };
      }
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, `${fieldPrefix}/cursor`);
      const limit = query.limit ?? releasePageLimits.defaultPageSize;
      const rows = await deps.pushEvents.tagHistory(serviceId, tag, { limit: limit + 1, ...(after ? { after } : {}) });
      const entries = rows.slice(0, limit);
      const last = entries[entries.length - 1];
      return rows.length > limit && last
        ? { tag, entries, nextCursor: encodeCursor({ time: last.observedAt, id: last.eventId }) }
        : { tag, entries };
    },
  };
}

export type ReleaseOperations = ReturnType<typeof releaseOperations>;
