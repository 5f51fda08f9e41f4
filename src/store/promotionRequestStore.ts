import type { Collection } from 'mongodb';
import type { Approval } from '../domain/governance/approvals.js';
import type { PromotionRequests, StoredPromotionRequest } from '../domain/ports/index.js';
import { isDuplicateKeyError } from './driverErrors.js';
import { collections } from './indexPlan.js';
import type { Database } from './mongo.js';

interface RequestDocument extends Omit<StoredPromotionRequest, 'requestId'> {
  _id: string;
}

const toRequest = ({ _id, ...rest }: RequestDocument): StoredPromotionRequest => ({ requestId: _id, ...rest });

/**
 * Promotion requests waiting for approvals. One approval per subject: the `$push` is guarded by the
 * subject not being among the approvals yet and the request not being issued — a single-document
 * compare-and-swap, however many approve at once in however many processes.
 */
export class PromotionRequestStore implements PromotionRequests {
  constructor (database: Database, readonly collection: Collection<RequestDocument> = database.db.collection(collections.promotionRequests)) {}

  async createIfAbsent (request: StoredPromotionRequest): Promise<StoredPromotionRequest> {
    const { requestId, ...rest } = request;
    try {
      await this.collection.insertOne({ _id: requestId, ...rest });
      return request;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    const stored = await this.collection.findOne({ _id: requestId });
    if (!stored) throw new Error(`promotion request '${requestId}' vanished`);
    return toRequest(stored);
  }

  async find (serviceId: string, requestId: string): Promise<StoredPromotionRequest | null> {
    const doc = await this.collection.findOne({ _id: requestId });
    return doc && doc.serviceId === serviceId ? toRequest(doc) : null;
  }

  async addApproval (requestId: string, approval: Approval): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: requestId, 'approvals.approver.subject': { $ne: approval.approver.subject }, issued: { $exists: false } },
      { $push: { approvals: approval } },
    );
    return result.modifiedCount === 1;
  }

  async markIssued (requestId: string, issued: { rolloutId: string, at: number }): Promise<void> {
    await this.collection.updateOne({ _id: requestId, issued: { $exists: false } }, { $set: { issued } });
  }

  async list (serviceId: string, limit: number): Promise<StoredPromotionRequest[]> {
    const docs = await this.collection.find({ serviceId }).sort({ createdAt: -1 }).limit(limit).toArray();
    return docs.map(toRequest);
  }
}
