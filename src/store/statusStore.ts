import { type Collection } from 'mongodb';
import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type {
  EntryWrite, EntryWriteResult, ReportTarget, StatusEvents, StatusSummaries, ServiceRolloutState, StatusPublication, StatusSnapshot, StatusState,
} from '../domain/ports/index.js';
import type { SummaryEntry } from '../domain/rolloutStatus.js';
import { coalesced } from './coalesce.js';
import type { Database } from './mongo.js';
import {
  ServiceViews, asError, atStatusRevision, outboxOf, publishedBefore, pushEvent, rolloutState, stateOf, statusHead, type ServiceDocument,
} from './serviceDocument.js';
import { collections } from './indexPlan.js';

/** Plans kept per process for the report path (the rollouts reported on most recently). */
const PLANS_KEPT = 256;

/** The current rollout's status summary (what reports change and reads compose) and the status stream. */
export class StatusStore implements StatusSummaries, StatusEvents {
  readonly collection: Collection<ServiceDocument>;
  private readonly views: ServiceViews;

  constructor (database: Database) {
    this.collection = database.db.collection(collections.services);
    this.views = new ServiceViews(database);
  }

  /**
   * The service with its composed status and each reporter's evidence (the rollout view). The reads
   * asked for in one turn of the event loop share one read per service (src/store/coalesce.ts): a
   * console many operators watch reads a large rollout once per turn, not once per viewer.
   */
  async findRolloutState (id: string): Promise<ServiceRolloutState | null> {
    return this.#rolloutStates(id);
  }

  readonly #rolloutStates = coalesced<string, ServiceRolloutState | null>(async (ids) => {
    const unique = [...new Set(ids)];
    // One service's failure is its readers' alone.
    const states = await Promise.all(unique.map(async (id) => [id, await this.#readRolloutState(id).catch((err: unknown) => asError(err))] as const));
    const byId = new Map(states);
    return ids.map((id) => byId.get(id) ?? null);
  });

  async #readRolloutState (id: string): Promise<ServiceRolloutState | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: rolloutState });
    if (!doc) return null;
    const plan = doc.data.imageDeployment;
    const lifecycle = plan && doc.rolloutStatus?.rolloutId === plan.rolloutId ? doc.rolloutStatus.lifecycle : undefined;
    const { service, evidence } = await this.views.composed(doc, true);
    return {
      service,
      evidence,
      statusRevision: doc.statusRevision ?? 0,
      automationHold: doc.automationHold,
      lifecycle,
      automationQueue: doc.automationQueue,
    };
  }

  /**
   * The plan of a rollout, as read for its reports. A plan never changes once written: a new plan
   * is a new rollout id (`applyRollout`), and the plan is a server-managed field. So a report
   * reads only the current rollout's id with the service and takes the plan (up to 4,096 target
   * nodes) from here, read once per process and rollout.
   */
  private readonly plans = new Map<string, IImmutableImageDeploymentPlan>();

  private async planOf (serviceId: string, rolloutId: string): Promise<IImmutableImageDeploymentPlan | undefined> {
    const cached = this.plans.get(rolloutId);
    if (cached) return cached;
    const doc = await this.collection.findOne({ _id: serviceId }, { projection: { 'data.imageDeployment': 1 } });
    const plan = doc?.data?.imageDeployment;
    if (plan?.rolloutId !== rolloutId) return plan;
    if (this.plans.size >= PLANS_KEPT) this.plans.delete(this.plans.keys().next().value ?? '');
    this.plans.set(rolloutId, plan);
    return plan;
  }

  /**
   * What a report needs of its service: the immutable flag, the current rollout's plan (read once
   * per process and rollout), its policy, and the summary head with the reporter's contribution.
   * The reports that ask in the same turn of the event loop share one read by `_id` `$in`
   * (src/store/coalesce.ts), each reporter's contribution projected.
   */
  async findReportTarget (id: string, reporterKey?: string): Promise<ReportTarget | null> {
    const doc = await this.#reportTargetDocs({ id, reporterKey });
    if (!doc) return null;
    const data = doc.data;
    const rolloutId = data?.imageDeployment?.rolloutId;
    const plan = rolloutId === undefined ? undefined : await this.planOf(id, rolloutId);
    const target = { serviceId: doc._id, immutableImageRequired: data?.immutableImageRequired === true, plan, policy: data?.rolloutPolicy };
    // (The plan read on a miss may be a newer rollout's already: the summary read with the id is then not its.)
    const state = reporterKey !== undefined && plan && doc.rolloutStatus?.rolloutId === plan.rolloutId ? stateOf(doc) : null;
    if (!state || reporterKey === undefined) return target;
    return { ...target, held: { state, entry: doc.rolloutStatus?.entries?.[reporterKey] } };
  }

  readonly #reportTargetDocs = coalesced<{ id: string, reporterKey?: string | undefined }, ServiceDocument | null>(async (calls) => {
    const keys = [...new Set(calls.flatMap((c) => (c.reporterKey === undefined ? [] : [c.reporterKey])))];
    const projection = {
      'data.immutableImageRequired': 1,
      'data.imageDeployment.rolloutId': 1,
      'data.rolloutPolicy': 1,
      ...(keys.length === 0 ? {} : statusHead),
      ...Object.fromEntries(keys.map((key) => [`rolloutStatus.entries.${key}`, 1])),
    };
    const ids = [...new Set(calls.map((c) => c.id))];
    const docs = await this.collection.find({ _id: { $in: ids } }, { projection }).toArray();
    const byId = new Map(docs.map((doc) => [doc._id, doc]));
    return calls.map((c) => byId.get(c.id) ?? null);
  });

  /**
   * One reporter's entry and the sums, in one update guarded by the rollout and by the entry's
   * version: reporters of one rollout never conflict with each other, only with their own
   * concurrent reports.
   */
  async applyStatusEntry (write: EntryWrite): Promise<EntryWriteResult> {
    const path = `rolloutStatus.entries.${write.key}`;
    const inc: Record<string, number> = { 'rolloutStatus.seq': 1 };
    for (const [name, value] of Object.entries(write.delta.totals)) if (value !== 0) inc[`rolloutStatus.totals.${name}`] = value;
    for (const [reason, value] of Object.entries(write.delta.mismatched)) if (value) inc[`rolloutStatus.mismatched.${reason}`] = value;
    const expected = write.expectedVersion === undefined ? { [path]: { $exists: false } } : { [`${path}.v`]: write.expectedVersion };
    const doc = await this.collection.findOneAndUpdate(
      { _id: write.serviceId, 'rolloutStatus.rolloutId': write.rolloutId, ...expected },
      // `$max`: reports of different reporters never conflict, and the one whose clock read came first may land last.
      { $set: { [path]: write.entry }, $max: { 'rolloutStatus.updatedAt': write.now }, $inc: inc },
      { returnDocument: 'after', projection: statusHead }
    );
    const state = doc ? stateOf(doc) : null;
    if (state) return { kind: 'applied', state };
    const now = await this.readStatusEntry(write.serviceId, write.rolloutId, write.key);
    return now.current ? { kind: 'version-moved', stored: now.stored } : { kind: 'not-current' };
  }

  async readStatusState (id: string, rolloutId: string): Promise<StatusState | null> {
    const doc = await this.collection.findOne({ _id: id, 'rolloutStatus.rolloutId': rolloutId }, { projection: statusHead });
    return doc ? stateOf(doc) : null;
  }

  async readStatusEntry (id: string, rolloutId: string, key: string): Promise<{ current: boolean, stored?: SummaryEntry }> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { 'rolloutStatus.rolloutId': 1, [`rolloutStatus.entries.${key}`]: 1 } });
    const summary = doc?.rolloutStatus;
    return summary?.rolloutId === rolloutId ? { current: true, stored: summary.entries?.[key] } : { current: false };
  }

  /** A new event at the next revision, if the status is still at that revision and the summary still at the state's seq. */
  async publishStatus (p: StatusPublication): Promise<boolean> {
    const result = await this.collection.updateOne(
      {
        _id: p.serviceId,
        'rolloutStatus.rolloutId': p.rolloutId,
        'rolloutStatus.seq': p.seq,
        ...atStatusRevision(p.revision),
        ...publishedBefore(p.rolloutId, p.seq),
      },
      {
        $set: { statusRevision: p.revision + 1, statusPublished: { rolloutId: p.rolloutId, seq: p.seq, key: p.key } },
        $push: { ...pushEvent(p.event).$push, ...outboxOf([p.domainEvent]) },
      }
    );
    return result.matchedCount === 1;
  }

  /** The status events after `revision`, oldest first (SSE). */
  async statusEventsAfter (id: string, revision: number): Promise<StatusSnapshot | null> {
    const doc = await this.collection.findOne({ _id: id }, { projection: { statusRevision: 1, statusEvents: 1 } });
    if (!doc) return null;
    return { revision: doc.statusRevision ?? 0, events: (doc.statusEvents ?? []).filter((e) => e.revision > revision) };
  }
}
