import { type Collection } from 'mongodb';
import {
  VERIFIED_RELEASES_KEPT, type DeadlineDecision, type DriftMilestone, type FailureMilestone, type FollowUp, type QueuedPromotion, type VerifiedRelease,
  type WindowWait,
} from '../domain/lifecycle.js';
import { runtimeVerificationDue, type AttestationDue } from '../domain/attestation/issuance.js';
import type { DomainEvent } from '../domain/events.js';
import type { LifecycleTarget, LifecycleView, MilestoneWrite, QueueResult, AutomationQueue, Lifecycles } from '../domain/ports/index.js';
import { type StatusTotals } from '../domain/rolloutStatus.js';
import type { Database } from './mongo.js';
import {
  LIFECYCLE, currentRollout, keepOneVerifiedPerDigest, lifecycleProjection, lifecycleViewOf, outboxOf, type ServiceDocument,
} from './serviceDocument.js';
import { collections } from './indexPlan.js';

/** Lifecycle control's compare-and-swaps on the current rollout's summary, and the automation queue. */
export class LifecycleStore implements Lifecycles, AutomationQueue {
  readonly collection: Collection<ServiceDocument>;

  constructor (database: Database) {
    this.collection = database.db.collection(collections.services);
  }

  async findLifecycle (id: string): Promise<LifecycleView | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: lifecycleProjection });
    return doc ? lifecycleViewOf(doc) : null;
  }

  async openLifecycles (limit: number, after?: string): Promise<LifecycleView[]> {
    // Equality on the flag (services_lifecycle_open), then by _id within it.
    const filter = after === undefined ? { 'rolloutStatus.lifecycle.open': true } : { 'rolloutStatus.lifecycle.open': true, _id: { $gt: after } };
    const docs = await this.collection.find(filter, { projection: lifecycleProjection }).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map(lifecycleViewOf);
  }

  async recordProgress (target: LifecycleTarget, totals: StatusTotals, at: number): Promise<boolean> {
    const grew = (['observed', 'healthy', 'verified'] as const).map((k) => ({ [`${LIFECYCLE}.progress.${k}`]: { $lt: totals[k] } }));
    const result = await this.collection.updateOne(
      { ...currentRollout(target), $or: grew },
      {
        $max: Object.fromEntries((['observed', 'healthy', 'verified'] as const).map((k) => [`${LIFECYCLE}.progress.${k}`, totals[k]])),
        $set: { [`${LIFECYCLE}.progress.at`]: at },
      }
    );
    return result.modifiedCount === 1;
  }

  /** The first success (sticky) with its event, and the release on the verified list: decided once, here. */
  async markSucceeded (target: LifecycleTarget, at: number, verified: VerifiedRelease, event: DomainEvent): Promise<MilestoneWrite> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.succeededAt`]: { $exists: false }, [`${LIFECYCLE}.deadline`]: { $exists: false } },
      {
        $set: { [`${LIFECYCLE}.succeededAt`]: at, [`${LIFECYCLE}.open`]: true },
        $inc: { [`${LIFECYCLE}.changes`]: 1 },
        // The success owes its attestation: recorded in this same write (src/operations/attestations.ts issues it).
        $push: {
          verifiedReleases: { $each: [verified], $slice: -VERIFIED_RELEASES_KEPT },
          attestationsDue: runtimeVerificationDue(verified),
          ...outboxOf([event]),
        },
      }
    );
    if (result.modifiedCount !== 1) return await this.milestoneLost(target);
    await keepOneVerifiedPerDigest(this.collection, target.serviceId, verified);
    return 'decided';
  }

  /** Why a milestone write did not apply: the rollout was replaced (its replacement decides), or the milestone was decided already. */
  private async milestoneLost (target: LifecycleTarget): Promise<MilestoneWrite> {
    const current = await this.collection.findOne(currentRollout(target), { projection: { _id: 1 } });
    return current ? 'decided-before' : 'not-current';
  }

  /**
   * A succeeded rollout drifted (once): the drift on its lifecycle, its release off the verified list
   * (no abort, automatic rollback or anything downstream returns to it) and the revocation it owes —
   * all in this one write.
   */
  async markDrifted (target: LifecycleTarget, drift: DriftMilestone, due: AttestationDue): Promise<MilestoneWrite> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.succeededAt`]: { $exists: true }, [`${LIFECYCLE}.drift`]: { $exists: false } },
      {
        $set: { [`${LIFECYCLE}.drift`]: drift },
        $inc: { [`${LIFECYCLE}.changes`]: 1 },
        $pull: { verifiedReleases: { rolloutId: target.rolloutId } },
        $push: { attestationsDue: due },
      }
    );
    return result.modifiedCount === 1 ? 'decided' : await this.milestoneLost(target);
  }

  async markFailure (target: LifecycleTarget, failure: FailureMilestone, event: DomainEvent): Promise<MilestoneWrite> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.failure`]: { $exists: false }, [`${LIFECYCLE}.succeededAt`]: { $exists: false } },
      { $set: { [`${LIFECYCLE}.failure`]: failure, [`${LIFECYCLE}.open`]: true }, $inc: { [`${LIFECYCLE}.changes`]: 1 }, $push: outboxOf([event]) }
    );
    return result.modifiedCount === 1 ? 'decided' : await this.milestoneLost(target);
  }

  async decideDeadline (
    target: LifecycleTarget, seenSeq: number, decision: DeadlineDecision, failure: FailureMilestone | undefined, events: readonly DomainEvent[]
  ): Promise<boolean> {
    const set: Record<string, unknown> = { [`${LIFECYCLE}.deadline`]: decision, [`${LIFECYCLE}.open`]: true };
    if (failure) set[`${LIFECYCLE}.failure`] = failure;
    const result = await this.collection.updateOne(
      {
        ...currentRollout(target),
        'rolloutStatus.seq': seenSeq,
        [`${LIFECYCLE}.deadline`]: { $exists: false },
        [`${LIFECYCLE}.succeededAt`]: { $exists: false },
        // The failure milestone is written only where none is (the caller read it absent).
        ...(failure ? { [`${LIFECYCLE}.failure`]: { $exists: false } } : {}),
      },
      { $set: set, $max: { 'rolloutStatus.updatedAt': decision.at }, $inc: { 'rolloutStatus.seq': 1, [`${LIFECYCLE}.changes`]: 1 }, $push: outboxOf(events) }
    );
    return result.modifiedCount === 1;
  }

  async markFollowUp (target: LifecycleTarget, kind: 'autoRollback' | 'deferredPromotion', followUp: FollowUp): Promise<boolean> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.${kind}`]: { $exists: false } },
      { $set: { [`${LIFECYCLE}.${kind}`]: followUp }, $inc: { [`${LIFECYCLE}.changes`]: 1 } }
    );
    return result.modifiedCount === 1;
  }

  async closeLifecycle (target: LifecycleTarget, seenChanges: number): Promise<boolean> {
    const result = await this.collection.updateOne(
      { ...currentRollout(target), [`${LIFECYCLE}.changes`]: seenChanges, [`${LIFECYCLE}.open`]: true },
      { $set: { [`${LIFECYCLE}.open`]: false } }
    );
    return result.modifiedCount === 1;
  }

  async queuePromotion (target: LifecycleTarget, queued: QueuedPromotion): Promise<QueueResult> {
    const result = await this.collection.updateOne(
      {
        ...currentRollout(target),
        $or: [
          { automationQueue: { $exists: false } },
          { 'automationQueue.firstObservedAt': { $lt: queued.firstObservedAt } },
          { 'automationQueue.releaseId': queued.releaseId },
        ],
      },
      // Open again: the sweeper promotes it should the rollout have settled meanwhile.
      { $set: { automationQueue: queued, [`${LIFECYCLE}.open`]: true }, $inc: { [`${LIFECYCLE}.changes`]: 1 } }
    );
    if (result.matchedCount === 1) return 'queued';
    return (await this.collection.findOne(currentRollout(target), { projection: { _id: 1 } })) ? 'newer-waiting' : 'not-current';
  }

  async clearQueuedPromotion (id: string, releaseId: string): Promise<void> {
    await this.collection.updateOne({ _id: id, 'automationQueue.releaseId': releaseId }, { $unset: { automationQueue: '' } });
  }

  async waitForWindow (id: string, wait: WindowWait): Promise<boolean> {
    const result = await this.collection.updateOne(
      {
        _id: id,
        $or: [
          { windowWait: { $exists: false } },
          { 'windowWait.firstObservedAt': { $lt: wait.firstObservedAt } },
          { 'windowWait.releaseId': wait.releaseId },
        ],
      },
      { $set: { windowWait: wait } },
    );
    return result.matchedCount === 1;
  }

  async clearWindowWait (id: string, releaseId: string): Promise<void> {
    await this.collection.updateOne({ _id: id, 'windowWait.releaseId': releaseId }, { $unset: { windowWait: '' } });
  }

  async windowWaits (now: number, limit: number): Promise<Array<{ serviceId: string, wait: WindowWait }>> {
    // services_window_wait: sparse on the retry time, so only waiting services are in it.
    const docs = await this.collection.find({ 'windowWait.retryAt': { $lte: now } }, { projection: { windowWait: 1 } })
      .sort({ 'windowWait.retryAt': 1 }).limit(limit).toArray();
    return docs.flatMap((doc) => (doc.windowWait ? [{ serviceId: doc._id, wait: doc.windowWait }] : []));
  }
}
