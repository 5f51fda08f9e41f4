import { createHash } from 'node:crypto';
import {
  buildDigestPinnedImageReference, ociTagPattern,
  type IImageRelease, type IImmutableRegistryPushEvent, type IRegistryTarget, type IService,
} from '../contracts/index.js';
import { errors, type AppError, type Problem } from '../errors.js';
import { compareNames } from './names.js';

/**
 * Pure rules of image releases (docs/lifecycle.md "Releases", "History"): what identifies a release,
 * when a push event is consistent, whose registry target it names, and the opaque cursors of
 * the newest-first listings. src/operations/observePushEvent.ts sequences the writes.
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

/** A position in a newest-first listing: the sort key of the last item returned. */
export interface KeysetPosition {
  /** `lastObservedAt` (releases) or `observedAt` (tag ledger). */
  time: number;
  /** releaseId (releases) or eventId (tag ledger). */
  id: string;
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
 * Fields are named relative to the event (`/registryHost`); adapters say where it sits.
 */
/**
 * How far ahead of the server's clock a push event's `observedAt` may be: "never an older release"
 * compares first observations, so one event stamped in the future (a registry sending microseconds,
 * a skewed clock) would make every real push after it look older, and stop automatic promotion.
 */
export const PUSH_EVENT_FUTURE_TOLERANCE_MS = 5 * 60_000;

export function pushEventProblems (event: IImmutableRegistryPushEvent, now: number): Problem[] {
  const problems: Problem[] = [];
  if (event.observedAt > now + PUSH_EVENT_FUTURE_TOLERANCE_MS) {
    const ahead = `is more than ${PUSH_EVENT_FUTURE_TOLERANCE_MS / 1000} s ahead of the server's clock (milliseconds since the epoch)`;
    problems.push({ field: '/observedAt', message: ahead });
  }
  const hostOk = builds(event.registryHost, 'a');
  const repositoryOk = builds('localhost', event.repository);
  if (!hostOk) problems.push({ field: '/registryHost', message: 'must be a canonical OCI registry host (lower case, optional :port)' });
  if (!repositoryOk) problems.push({ field: '/repository', message: 'must be a canonical OCI repository name (lower case path components)' });
  if (!ociTag.test(event.tag)) problems.push({ field: '/tag', message: `must match ${ociTagPattern}` });
  if (hostOk && repositoryOk) {
    const expected = buildDigestPinnedImageReference(event.registryHost, event.repository, event.registryRootDigest);
    if (event.digestPinnedImageReference !== expected) {
      problems.push({ field: '/digestPinnedImageReference', message: `must be '${expected}' (registryHost/repository@registryRootDigest)` });
    }
  }
  return problems;
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

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** The position a cursor names, or undefined when it is not one of ours. */
export function decodeCursor (cursor: string): KeysetPosition | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  // Buffer decoding is lenient: only the exact encoding of a key counts.
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) return undefined;
  const decoded = parseJson(text);
  if (!Array.isArray(decoded) || decoded.length !== 2) return undefined;
  const [time, id] = decoded as unknown[];
  if (typeof time !== 'number' || !Number.isSafeInteger(time) || time < 0) return undefined;
  if (typeof id !== 'string' || id.length < 1 || id.length > 128) return undefined;
  return { time, id };
}

export const cursorProblem: Problem = { field: '/cursor', message: 'is not a cursor returned by this API' };

/** Tag history query rules a schema cannot express (fields relative to the query). */
export function tagHistoryQueryProblems (query: { at?: number, cursor?: string }): Problem[] {
  if (query.at !== undefined && query.cursor !== undefined) {
    return [{ field: '/cursor', message: 'does not apply with `at`, which answers a single entry' }];
  }
  return query.cursor !== undefined && decodeCursor(query.cursor) === undefined ? [cursorProblem] : [];
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

export const identityConflict = (identity: ReleaseIdentity, existing?: IImageRelease): AppError => {
  const tuple = `${identity.registryHost}/${identity.repository}@${identity.registryRootDigest} of service '${identity.serviceId}'`;
  const detail = !existing
    ? `release '${identity.releaseId}' conflicts with an existing release (${tuple})`
    : existing.id === identity.releaseId
      ? `release id '${identity.releaseId}' already names ${existing.data.registryHost}/${existing.data.repository}@${existing.data.registryRootDigest}` +
        ` of service '${existing.data.serviceId}' (image '${existing.data.imageId}', ${existing.data.manifestMediaType})`
      : `${tuple} is already release '${existing.id}'`;
  return errors.releaseIdentityConflict(detail, identity.releaseId, existing?.id);
};

/** Whether the event names the service's registry target; the refusal otherwise. */
export function registryTargetRefusal (service: IService, event: IImmutableRegistryPushEvent): AppError | undefined {
  const target = service.data.registryTarget;
  if (target && registryTargetMatches(target, event)) return undefined;
  const detail = target
    ? `${event.registryHost}/${event.repository} is not the registry target ${target.registryHost}/${target.repository} of service '${service.id}'`
    : `service '${service.id}' has no registry target`;
  return errors.registryTargetMismatch(detail, { serviceId: service.id, registryHost: event.registryHost, repository: event.repository });
}
