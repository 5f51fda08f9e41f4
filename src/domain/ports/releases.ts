import type { AutomaticPromotionOutcome, IImageRelease, IImmutableRegistryPushEvent, ImageTagHistoryEntry } from '../../contracts/index.js';
import type { KeysetPosition, ReleaseIdentity } from '../releases.js';
import type { ReleaseVerification } from '../trust/releaseVerification.js';

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

export interface ReleaseRepository {
  findById(releaseId: string): Promise<IImageRelease | null>;
  /** When each of these releases was first observed (releases that do not exist are absent). */
  firstObservedAt(releaseIds: readonly string[]): Promise<Map<string, number>>;
  /** The service's release of this digest in this repository (the identity tuple), if observed. */
  findByTuple(tuple: Pick<ReleaseIdentity, 'serviceId' | 'registryHost' | 'repository' | 'registryRootDigest'>): Promise<IImageRelease | null>;
  /** The releases whose id is `identity.releaseId` or whose (service, host, repository, digest) is the identity's: at most two. */
  findByIdOrTuple(identity: ReleaseIdentity): Promise<IImageRelease[]>;
  /** The idempotent upsert of one observation; never lowers a counter, never sets acceptedAt. */
  recordObservation(observation: ReleaseObservation): Promise<RecordObservationResult>;
  /** acceptedAt = min(acceptedAt, at); lastPromotedAt = max(…, at); promotionCount = max(…, count). */
  recordPromotion(releaseId: string, at: number, promotionCount: number): Promise<void>;
  /** The release's stored signature verification (the newest a rollout of it relied on), if any. */
  findVerification(releaseId: string): Promise<ReleaseVerification | null>;
  /** The stored verifications of these releases, by release id (releases without one are absent). */
  findVerifications(releaseIds: readonly string[]): Promise<Map<string, ReleaseVerification>>;
  /** Keeps the verification unless the release has a newer one (by verifiedAt): idempotent, any order. */
  recordVerification(releaseId: string, verification: ReleaseVerification): Promise<void>;
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
  /** What automatic promotion decided for the event (promoted, queued, skipped, conflict), once decided. */
  automation?: AutomaticPromotionOutcome;
}

export interface PushEventRepository {
  findById(eventId: string): Promise<StoredPushEvent | null>;
  /** false when the eventId is already recorded (unique `_id`). */
  insert(record: StoredPushEvent): Promise<boolean>;
  /** Records what automatic promotion decided for the event. */
  recordAutomation(eventId: string, outcome: AutomaticPromotionOutcome): Promise<void>;
  /** Removes the event only if it still has this fingerprint. */
  remove(eventId: string, fingerprint: string): Promise<void>;
  /** Stored events whose identity is exactly this release's. */
  countForRelease(identity: ReleaseIdentity): Promise<number>;
  /** A tag's events, `observedAt` desc then eventId desc; `at`: only `observedAt <= at`. */
  tagHistory(serviceId: string, tag: string, query: { at?: number, limit: number, after?: KeysetPosition }): Promise<ImageTagHistoryEntry[]>;
}
