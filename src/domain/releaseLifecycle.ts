import { randomUUID } from 'node:crypto';
import type { IImageRelease, IImmutableImageTargetScope, IService, IServicePlacement } from '../contracts/index.js';
import { AppError, isAppError, serviceNotFound, type ErrorCode } from '../errors.js';
import type { FaultHook } from '../faults.js';
import type { ClaimInput, ClaimResult, StoredOutcome } from '../store/idempotencyStore.js';
import type { InsertRolloutResult } from '../store/rolloutStore.js';
import type { ApplyRolloutResult } from '../store/serviceStore.js';
import {
  buildPlan, checkPreconditions, conflict, currentGeneration, idempotencyRecordId, isSameImage, requestFingerprint, rolloutRefFor, serviceAfterRollout,
  type AutomationHold, type Issuer, type RolloutIntent, type RolloutRecord,
} from './rollouts.js';

/**
 * Promotion and rollback as a sequence of single-document writes that is safe
 * to crash anywhere and to run in any number of processes at once (DESIGN §5):
 *
 *   1. claim the idempotency record            (unique _id: one owner per key)
 *   2. insert the rollout record, state pending (unique (serviceId, generation): THE commit point —
 *                                                exactly one writer wins a generation)
 *   3. write the plan onto the service          (CAS on the previous generation)
 *   4. update the release's counters            (idempotent $min/$max of derived values)
 *   5. mark the rollout applied, store the outcome on the idempotency record
 *
 * A crash after 2 leaves a pending rollout whose plan and response are fully
 * recorded; whoever touches the service next (the client's retry, any other
 * promotion, rollback or report) finishes steps 3–5 for it. A crash before 2
 * leaves no effect, and the retry takes over the idempotency record once its
 * lease runs out. No transactions are needed.
 */

export interface LifecycleRepositories {
  services: {
    findWithHold(id: string): Promise<{ service: IService, automationHold?: AutomationHold } | null>;
    applyRollout(record: RolloutRecord, now: number): Promise<ApplyRolloutResult>;
  };
  releases: {
    findById(releaseId: string): Promise<IImageRelease | null>;
    /** acceptedAt = min(acceptedAt, at); lastPromotedAt = max(…, at); promotionCount = max(…, count). */
    recordPromotion(releaseId: string, at: number, promotionCount: number): Promise<void>;
  };
  rollouts: {
    insert(record: RolloutRecord): Promise<InsertRolloutResult>;
    findByIdempotencyRecord(idempotencyRecordId: string): Promise<RolloutRecord | null>;
    findPending(serviceId: string): Promise<RolloutRecord[]>;
    markApplied(rolloutId: string): Promise<void>;
    countPromotions(releaseId: string): Promise<number>;
  };
  idempotency: {
    claim(input: ClaimInput): Promise<ClaimResult>;
    complete(recordId: string, outcome: StoredOutcome, now: number): Promise<void>;
    release(recordId: string, owner: string): Promise<void>;
  };
  clusters: {
    findClustersWithNodes(clusterIds: string[]): Promise<Array<{ id: string, nodeNames: string[] }>>;
  };
}

export interface LifecycleDeps {
  repos: LifecycleRepositories;
  computeTargetScope(placement: IServicePlacement | undefined, clusters: Array<{ id: string, nodeNames: string[] }>): IImmutableImageTargetScope;
  now(): number;
  leaseMs: number;
  fault: FaultHook;
}

export interface RolloutRequest {
  serviceId: string;
  releaseId: string;
  idempotencyKey: string;
  /** undefined: automatic promotion, which takes whatever generation is current when it plans. */
  expectedRolloutGeneration?: number;
  intent: RolloutIntent;
  issuer: Issuer;
  reason: string;
  /** Extra request members that make a request different for Idempotency-Key reuse detection. */
  fingerprintExtra?: unknown[];
}

export interface RolloutResult {
  service: IService;
  replayed: boolean;
  rolloutId?: string;
}

/** Idempotency records outlive the 24 h the IETF draft asks for. */
const RETENTION_MS = 48 * 60 * 60 * 1000;

/** Errors that follow from the request and the state it met: stored and replayed for the same key. */
const deterministic = new Set<ErrorCode>([
  'service-not-found', 'release-not-found', 'rollout-generation-conflict', 'current-rollout-mismatch',
  'no-current-rollout', 'rollback-target-not-accepted', 'rollback-target-is-current', 'invalid-deployment-plan',
  'automatic-promotion-skipped',
]);

const REPLAYED_HEADER = 'idempotent-replayed';

/** An error answered from a stored outcome (the same Idempotency-Key saw it before). */
export const isReplayedError = (err: unknown): boolean => isAppError(err) && err.headers[REPLAYED_HEADER] === 'true';

export function releaseLifecycle (deps: LifecycleDeps) {
  const { repos, fault } = deps;

  /** Steps 3–5 for one recorded rollout. Safe to run twice and in several processes at once. */
  async function finish (record: RolloutRecord): Promise<void> {
    const applied = await repos.services.applyRollout(record, deps.now());
    if (applied === 'service-missing') throw new AppError('service-not-found', `service '${record.serviceId}' does not exist`);
    fault('after-plan-write');
    if (record.mode !== 'rollback') {
      const count = await repos.rollouts.countPromotions(record.releaseId);
      await repos.releases.recordPromotion(record.releaseId, record.createdAt, count);
    }
    fault('after-release-update');
    await repos.rollouts.markApplied(record.rolloutId);
  }

  /** Finishes rollouts in generation order (each safe to finish twice). */
  async function finishAll (records: RolloutRecord[]): Promise<void> {
    for (const record of records) await finish(record);
  }

  /** Finishes rollouts a crashed process left pending, so that the service shows every committed plan. */
  async function settle (serviceId: string): Promise<void> {
    await finishAll(await repos.rollouts.findPending(serviceId));
  }

  /** What planning reads: the service (with its hold) and the release, in one parallel round trip. */
  const readPlanInputs = async (req: RolloutRequest) => {
    const [found, release] = await Promise.all([repos.services.findWithHold(req.serviceId), repos.releases.findById(req.releaseId)]);
    return { found, release };
  };
  type PlanInputs = Awaited<ReturnType<typeof readPlanInputs>>;

  /**
   * Step 2: decide and record the rollout. Throws coded errors for refused requests.
   * `inputs` were read before the pending rollouts were settled; when there were some (a crashed
   * process left them), both are read again, since finishing a rollout moves the service and
   * marks its release accepted.
   */
  async function plan (req: RolloutRequest, rolloutRef: string, inputs: PlanInputs, pending: RolloutRecord[]): Promise<RolloutRecord> {
    await finishAll(pending);
    const { found, release } = pending.length === 0 ? inputs : await readPlanInputs(req);
    if (!found) throw serviceNotFound(req.serviceId);
    const { service, automationHold } = found;

    if (req.intent.kind === 'promotion' && req.intent.mode === 'automatic') {
      const skip = (reason: string, detail: string): never => {
        throw new AppError('automatic-promotion-skipped', detail, { details: { reason, ...conflict(service) } });
      };
      if (!service.data.deployOnPush || !service.data.immutableImageRequired) skip('not-enabled', 'automatic promotion needs deployOnPush and a first explicit promotion');
      if (automationHold) skip('on-hold', `automatic promotion is on hold since the rollback in rollout '${automationHold.rolloutId}'`);
      const current = service.data.imageDeployment;
      if (current && release && isSameImage(current, release)) {
        skip('already-current', 'the pushed digest is already deployed');
      }
    }

    const expected = req.expectedRolloutGeneration ?? currentGeneration(service);
    const checked = checkPreconditions({ service, release, releaseId: req.releaseId, expectedRolloutGeneration: expected, intent: req.intent });
    const placement = service.data.placement;
    const clusters = await repos.clusters.findClustersWithNodes(placement?.clusterIds ?? []);
    const now = deps.now();
    const nextPlan = buildPlan({
      service,
      release: checked,
      releaseId: req.releaseId,
      expectedRolloutGeneration: expected,
      intent: req.intent,
      targetScope: deps.computeTargetScope(placement, clusters),
      rolloutId: `ro_${randomUUID()}`,
      now,
    }, checked);
    const current = service.data.imageDeployment;
    const record: RolloutRecord = {
      rolloutId: nextPlan.rolloutId,
      serviceId: service.id,
      generation: nextPlan.rolloutGeneration,
      mode: nextPlan.mode,
      releaseId: checked.id,
      plan: nextPlan,
      ...(current ? { previous: { rolloutId: current.rolloutId, releaseId: current.releaseId, requestedDigest: current.requestedDigest } } : {}),
      issuedBy: req.issuer,
      reason: req.reason,
      hold: req.intent.kind === 'rollback' ? 'set' : req.intent.mode === 'promotion' && automationHold ? 'cleared' : 'unchanged',
      idempotencyRecordId: rolloutRef,
      serviceAfter: serviceAfterRollout(service, nextPlan),
      state: 'pending',
      createdAt: now,
    };
    const inserted = await repos.rollouts.insert(record);
    if (inserted.kind === 'exists-for-record') return inserted.record;
    if (inserted.kind === 'generation-taken') {
      // Lost the compare-and-swap: report the winner's values (after finishing its rollout if needed).
      await settle(req.serviceId);
      const now2 = await repos.services.findWithHold(req.serviceId);
      const winner = now2?.service ?? service;
      throw new AppError('rollout-generation-conflict',
        `generation ${record.generation} was taken by a concurrent rollout`, { details: conflict(winner) });
    }
    fault('after-rollout-record');
    return record;
  }

  /**
   * One round trip's worth of independent reads (the rollout an earlier attempt with this key
   * recorded, the service's pending rollouts, the service, the release), then plan or finish.
   */
  async function execute (req: RolloutRequest, rolloutRef: string): Promise<{ outcome: StoredOutcome, rolloutId?: string }> {
    const [earlier, pending, inputs] = await Promise.all([
      repos.rollouts.findByIdempotencyRecord(rolloutRef),
      repos.rollouts.findPending(req.serviceId),
      readPlanInputs(req),
    ]);
    let record = earlier;
    if (!record) {
      try {
        record = await plan(req, rolloutRef, inputs, pending);
      } catch (err) {
        if (isAppError(err) && deterministic.has(err.code)) {
          return { outcome: { kind: 'error', code: err.code, message: err.message, details: err.details } };
        }
        throw err;
      }
    }
    await finish(record);
    return { outcome: { kind: 'success', body: { service: record.serviceAfter } }, rolloutId: record.rolloutId };
  }

  function fromOutcome (outcome: StoredOutcome, replayed: boolean, rolloutId?: string): RolloutResult {
    const headers: Record<string, string> = replayed ? { [REPLAYED_HEADER]: 'true' } : {};
    if (outcome.kind === 'error') {
      throw new AppError(outcome.code as ErrorCode, outcome.message, { details: outcome.details, headers });
    }
    const body = outcome.body as { service: IService };
    return { service: body.service, replayed, ...(rolloutId ? { rolloutId } : {}) };
  }

  /** Promotion or rollback with Idempotency-Key semantics. */
  async function issueRollout (req: RolloutRequest): Promise<RolloutResult> {
    const operation = req.intent.kind === 'rollback' ? 'rollback' : req.intent.mode;
    const recordId = idempotencyRecordId(req.serviceId, req.idempotencyKey);
    const fingerprint = requestFingerprint([
      operation, req.serviceId, req.releaseId, req.expectedRolloutGeneration ?? null,
      req.intent.kind === 'rollback' || req.intent.mode === 'promotion' ? req.intent.expectedCurrentRolloutId ?? null : null,
      ...(req.fingerprintExtra ?? []),
    ]);
    const owner = randomUUID();
    const claim = await repos.idempotency.claim({
      recordId,
      serviceId: req.serviceId,
      key: req.idempotencyKey,
      operation,
      fingerprint,
      owner,
      now: deps.now(),
      leaseMs: deps.leaseMs,
      retentionMs: RETENTION_MS,
    });
    switch (claim.kind) {
      case 'replay':
        return fromOutcome(claim.outcome, true);
      case 'in-progress':
        throw new AppError('idempotency-request-in-progress', 'a request with this Idempotency-Key is still being processed; retry shortly', {
          details: { retryAfterMs: claim.retryAfterMs },
          headers: { 'retry-after': String(Math.max(1, Math.ceil(claim.retryAfterMs / 1000))) },
        });
      case 'reused':
        throw new AppError('idempotency-key-reused', `this Idempotency-Key was used for a different ${claim.operation} request of this service`);
      case 'claimed':
      case 'taken-over':
        break;
    }
    fault('after-idempotency-record');
    // The rollout is bound to this lifetime of the key: once the record has expired (48 h), the
    // same key starts a new request instead of finding the rollout an old one issued.
    const rolloutRef = rolloutRefFor(recordId, claim.createdAt);
    let result: { outcome: StoredOutcome, rolloutId?: string };
    try {
      result = await execute(req, rolloutRef);
    } catch (err) {
      // Transient failure (database away): store nothing, give the key back for the retry.
      await repos.idempotency.release(recordId, owner).catch(() => undefined);
      throw err;
    }
    await repos.idempotency.complete(recordId, result.outcome, deps.now());
    return fromOutcome(result.outcome, false, result.rolloutId);
  }

  return { issueRollout, settle };
}

export type ReleaseLifecycle = ReturnType<typeof releaseLifecycle>;
