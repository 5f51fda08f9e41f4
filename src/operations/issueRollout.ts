import { createHash, randomUUID } from 'node:crypto';
import type { IImageRelease, IService } from '../contracts/index.js';
import type { TGovernanceIntent } from '../contracts/promotionPolicy.js';
import { admit, freezeOf, governanceIntentOf, isSkip, rulesBeforeVerification, type AdmissionFacts, type TrustFact } from '../domain/admission.js';
import { approvalsFor, quorumReachable, requestExpiresAt } from '../domain/governance/approvals.js';
import { effectivePromotionPolicy, type EffectiveApprovals } from '../domain/governance/policy.js';
import type { Role } from '../domain/principal.js';
import { computeTargetScope } from '../domain/clusters.js';
import type { Clock, Log, Repositories, ServiceWithHold, StoredOutcome } from '../domain/ports/index.js';
import type { EndedRollout } from '../domain/rolloutApplication.js';
import { promotionRefusedEvent, promotionRequestedEvent, type DomainEvent } from '../domain/events.js';
import {
  buildPlan, currentGeneration, currentRolloutOf, idempotencyRecordId, operationOf, requestFingerprint, rolloutRefFor, serviceAfterRollout,
  type ApprovalUse, type AutomaticPromotionSkip, type BreakGlassUse, type Issuer, type RolloutEnd, type RolloutIntent, type RolloutRecord, type RolloutTrigger,
} from '../domain/rollouts.js';
import { lastVerifiedRelease } from '../domain/lifecycle.js';
import { errors, isAppError, rolloutRefusalOf, type AppError } from '../errors.js';
import type { FaultHook } from '../faults.js';
import { refusal, success, type Result } from '../domain/result.js';
import type { Telemetry } from '../domain/ports/telemetry.js';
import { governanceFactsOf } from './governance.js';
import { countDecided } from './milestoneCounts.js';
import { relayQuietly } from './statusEvents.js';
import type { TrustChecker } from './trustCheck.js';

/**
 * Promotion and rollback (manual or automatic) as a sequence of single-document writes that
 * is safe to crash anywhere and to run in any number of processes at once (docs/architecture.md):
 *
 *   1. claim the idempotency record            (unique _id: one owner per key)
 *   2. insert the rollout record, state pending (unique (serviceId, generation): THE commit point —
 *                                                exactly one writer wins a generation)
 *   3. write the plan onto the service          (CAS on the previous generation)
 *   4. update the release's counters            (idempotent $min/$max of derived values)
 *   5. mark the rollout applied, store the outcome on the idempotency record
 *
 * A crash after 2 leaves a pending rollout whose plan and response are fully recorded; whoever
 * touches the service next (the client's retry, any other promotion, rollback or report)
 * finishes steps 3–5 for it. A crash before 2 leaves no effect, and the retry takes over the
 * idempotency record once its lease runs out. No transactions are needed.
 *
 * Whether a rollout may be issued at all is admission (src/domain/admission.ts): one ordered list of
 * pure rules, the same for every kind of rollout; `planRollout` reads the facts and runs it.
 */

export interface IssueRolloutDeps {
  repos: Pick<Repositories,
    'automationQueue' | 'breakGlassGrants' | 'clusters' | 'events' | 'governance' | 'idempotency' | 'lifecycles' | 'plans' | 'promotionRequests' |
    'releases' | 'reports' | 'rollouts'>;
  now: Clock;
  leaseMs: number;
  fault: FaultHook;
  /** Milestones decided here and delivery metrics: a promotion rolled back or aborted is a failed change. */
  telemetry: Telemetry;
  log: Pick<Log, 'info' | 'warn'>;
  /** Verification before promotion (src/operations/trustCheck.ts); without it a service with a trust policy is refused (fail closed). */
  trust?: TrustChecker | undefined;
  /**
   * The attestations the service owes (src/operations/attestations.ts): issued before the report records
   * they are made from are removed, and `owes` keeps the records of a rollout whose attestation is still due.
   */
  attestations?: { issue(serviceId: string): Promise<number>, owes(serviceId: string, rolloutId: string): Promise<boolean> };
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
  /** Why the server issues it by itself (abort, automatic rollback, a push that waited): kept in the history. */
  trigger?: RolloutTrigger;
  /** A refusal is not told as a `promotion.refused` event (a waiting push tried again: it was told when it first met the refusal). */
  quietRefusal?: true;
  /** The promotion request whose approvals this issuing completes (src/operations/approvals.ts): no new request is made; the rollout records it. */
  approvedRequest?: ApprovalUse;
}

/** A rollout was issued (or had been, for a replay), or an automatic promotion did not apply. */
export type IssueOutcome =
  | { issued: true, service: IService, rolloutId: string }
  | { issued: false, skip: AutomaticPromotionSkip, detail: string };

/** Idempotency records outlive the 24 h the IETF draft asks for. */
const RETENTION_MS = 48 * 60 * 60 * 1000;

/** What planning reads: the service (with its hold) and the release. */
interface PlanInputs {
  found: ServiceWithHold | null;
  release: IImageRelease | null;
}

/** The stored body of an automatic promotion that did not apply. */
interface SkippedBody { skipped: AutomaticPromotionSkip, detail: string }

/** Stored success bodies: `{ service }` of an issued rollout, or `{ skipped }`. */
type StoredBody = { service: IService } | SkippedBody;

const outcomeOfRefusal = (error: AppError): StoredOutcome => ({ kind: 'error', code: error.code, message: error.message, details: { ...error.details } });

function fromStored (outcome: StoredOutcome, replayed: boolean): Result<IssueOutcome> {
  if (outcome.kind === 'error') return refusal(errors.replayed(outcome), replayed);
  const body = outcome.body as StoredBody;
  if ('skipped' in body) return success({ issued: false, skip: body.skipped, detail: body.detail }, replayed);
  return success({ issued: true, service: body.service, rolloutId: body.service.data.imageDeployment?.rolloutId ?? '' }, replayed);
}

/**
 * A promotion rolled back or aborted is a failed change (src/domain/deliveryMetrics.ts) — counted
 * here, once (by the writer of its end), unless its failure before success was counted already.
 */
function countEndedChange (deps: IssueRolloutDeps, record: RolloutRecord, end: RolloutEnd, previous: EndedRollout | undefined): void {
  if (!previous || previous.mode === 'rollback' || end.by === 'superseded') return;
  const failure = previous.milestones.failure;
  const succeededAt = previous.milestones.succeededAt;
  const countedAlready = failure !== undefined && (succeededAt === undefined || failure.at < succeededAt);
  if (!countedAlready) deps.telemetry.changeFailure(record.serviceId);
}

/** How the previous rollout ended: this rollout replaced it. */
const endOf = (record: RolloutRecord): RolloutEnd => ({
  at: record.createdAt,
  by: record.trigger?.kind === 'abort' ? 'aborted' : record.mode === 'rollback' ? 'rolled-back' : 'superseded',
  rolloutId: record.rolloutId,
});

/** Steps 3–5 for one recorded rollout. Safe to run twice and in several processes at once. */
async function finishRollout (deps: IssueRolloutDeps, record: RolloutRecord): Promise<void> {
  const { repos, fault } = deps;
  const applied = await repos.plans.applyRollout(record, deps.now());
  if (applied.kind === 'service-missing') throw new Error(`service '${record.serviceId}' of rollout '${record.rolloutId}' is gone`);
  const written = applied.kind === 'applied' ? applied.application.ended : applied.ended;
  const previous = written?.rolloutId === record.previous?.rolloutId ? written : undefined;
  const { endedPlan, decided } = applied.kind === 'applied' ? applied.application : { endedPlan: undefined, decided: {} };
  if (endedPlan) await countDecided(deps, endedPlan, record.serviceId, decided);
  fault('after-plan-write');
  // The history copies the milestones of the rollout this one ended (decided by its lifecycle, or by this write).
  if (previous) await repos.rollouts.recordMilestones(previous.rolloutId, previous.milestones);
  await relayQuietly(repos, record.serviceId);
  if (record.mode !== 'rollback') {
    const count = await repos.rollouts.countPromotions(record.releaseId);
    await repos.releases.recordPromotion(record.releaseId, record.createdAt, count);
  }
  // The signed verification summary the rollout relied on, kept with its release (a rollback to it relies on it later).
  if (record.verification) await repos.releases.recordVerification(record.releaseId, record.verification);
  fault('after-release-update');
  if (record.previous) {
    const end = endOf(record);
    if (await repos.rollouts.markEnded(record.previous.rolloutId, end)) countEndedChange(deps, record, end, previous);
  }
  if (record.mode === 'automatic') {
    await Promise.all([
      repos.automationQueue.clearQueuedPromotion(record.serviceId, record.releaseId),
      repos.automationQueue.clearWindowWait(record.serviceId, record.releaseId),
    ]);
  }
  await repos.rollouts.markApplied(record.rolloutId);
  await forgetReportsBefore(deps, record);
}

/**
 * The snapshot reports of the rollout two generations back are no evidence of anything current
 * (the previous rollout's stay, for whoever compares): remove them. Idempotent.
 */
async function forgetReportsBefore ({ repos, attestations, log }: IssueRolloutDeps, record: RolloutRecord): Promise<void> {
  if (record.generation < 3) return;
  const old = await repos.rollouts.findByGeneration(record.serviceId, record.generation - 2);
  if (!old) return;
  // Its records are the evidence of an attestation it may still owe (a success this promotion's
  // predecessor decided as it replaced it): issue that first; keep them while it is still owed.
  if (attestations && await attestations.owes(record.serviceId, old.rolloutId)) {
    await attestations.issue(record.serviceId).catch((err: unknown) => { log.warn({ serviceId: record.serviceId, err }, 'issuing an attestation failed'); });
    if (await attestations.owes(record.serviceId, old.rolloutId)) return;
  }
  await repos.reports.removeRollout(old.rolloutId);
}

/** Finishes rollouts in generation order (each safe to finish twice). */
async function finishAll (deps: IssueRolloutDeps, records: RolloutRecord[]): Promise<void> {
  for (const record of records) await finishRollout(deps, record);
}

async function readPlanInputs ({ repos }: IssueRolloutDeps, req: RolloutRequest): Promise<PlanInputs> {
  const [found, release] = await Promise.all([repos.plans.findWithHold(req.serviceId), repos.releases.findById(req.releaseId)]);
  return { found, release };
}

/** The record of the rollout a plan issues (not yet inserted). */
interface RecordInputs {
  req: RolloutRequest;
  rolloutRef: string;
  found: ServiceWithHold;
  release: IImageRelease;
  targetScope: RolloutRecord['plan']['targetScope'];
  trust: TrustFact | undefined;
}

/** What the signature rule admitted the rollout on, kept in its record (and history). */
const trustOf = (trust: TrustFact | undefined): Pick<RolloutRecord, 'trust' | 'verification'> =>
  trust?.kind === 'passed' ? { trust: trust.check, ...(trust.verification ? { verification: trust.verification } : {}) } : {};

function recordOf (deps: IssueRolloutDeps, { req, rolloutRef, found, release, targetScope, trust }: RecordInputs) {
  const { service, automationHold } = found;
  const now = deps.now();
  const built = buildPlan({ service, release, intent: req.intent, targetScope, rolloutId: `ro_${randomUUID()}`, now });
  if ('refusal' in built) return built;
  const { plan } = built;
  const current = service.data.imageDeployment;
  const record: RolloutRecord = {
    rolloutId: plan.rolloutId,
    serviceId: service.id,
    generation: plan.rolloutGeneration,
    mode: plan.mode,
    releaseId: release.id,
    plan,
    previous: current ? { rolloutId: current.rolloutId, releaseId: current.releaseId, requestedDigest: current.requestedDigest } : undefined,
    issuedBy: req.issuer,
    reason: req.reason,
    hold: req.intent.kind === 'rollback' ? 'set' : req.intent.mode === 'promotion' && automationHold ? 'cleared' : 'unchanged',
    idempotencyRecordId: rolloutRef,
    serviceAfter: serviceAfterRollout(service, plan),
    state: 'pending',
    createdAt: now,
    ...(req.trigger ? { trigger: req.trigger } : {}),
    ...(req.approvedRequest ? { approval: req.approvedRequest } : {}),
    ...trustOf(trust),
  };
  return { record };
}

/** Lost the compare-and-swap: the winner's values (after finishing its rollout if needed). */
async function generationTaken (deps: IssueRolloutDeps, req: RolloutRequest, generation: number, service: IService): Promise<AppError> {
  const { repos } = deps;
  const read = async (): Promise<IService | undefined> => (await repos.plans.findWithHold(req.serviceId))?.service;
  let winner = (await read()) ?? service;
  if (currentGeneration(winner) < generation) {
    // The winner's rollout is recorded, its plan perhaps not written yet: finish it if it is still
    // pending (it may have been finished meanwhile), then read the service it made.
    await finishAll(deps, await repos.rollouts.findPending(req.serviceId, currentGeneration(winner)));
    winner = (await read()) ?? winner;
  }
  return errors.rolloutGenerationConflict(`generation ${generation} was taken by a concurrent rollout`, currentRolloutOf(winner));
}

/**
 * What admission looks at: the service, the target release (for an abort the last verified release),
 * the release deployed now (automatic promotion only) and the placement's clusters.
 */
async function admissionFactsOf (
  deps: IssueRolloutDeps, req: RolloutRequest, found: ServiceWithHold, release: IImageRelease | null
): Promise<AdmissionFacts> {
  const { repos } = deps;
  const { service } = found;
  const current = service.data.imageDeployment;
  const automatic = req.intent.kind === 'promotion' && req.intent.mode === 'automatic';
  let target = { release, releaseId: req.releaseId };
  if (req.intent.kind === 'rollback' && req.intent.toLastVerified) {
    // Abort / automatic rollback: the target is the last verified release ('' when there is none).
    const verified = lastVerifiedRelease(found.verifiedReleases, current);
    target = verified ? { release: await repos.releases.findById(verified.releaseId), releaseId: verified.releaseId } : { release: null, releaseId: '' };
  }
  const [currentRelease, clusters, governance] = await Promise.all([
    automatic && current ? repos.releases.findById(current.releaseId) : Promise.resolve(null),
    repos.clusters.findClustersWithNodes(service.data.placement?.clusterIds ?? []),
    governanceFactsOf(deps, service, target.release, req.intent),
  ]);
  return {
    service,
    hold: found.automationHold,
    verifiedReleases: found.verifiedReleases ?? [],
    ...target,
    currentRelease,
    clusters,
    expectedRolloutGeneration: req.expectedRolloutGeneration ?? currentGeneration(service),
    ...(governance ? { governance } : {}),
  };
}

/**
 * A promotion that passed a closed window by a break-glass grant uses the grant up (compare-and-swap,
 * under this request's rollout reference so its retry finds it its own) and records it; a grant named
 * while the window is open is not used.
 */
async function useBreakGlass (
  deps: IssueRolloutDeps, intent: RolloutIntent, facts: AdmissionFacts, record: RolloutRecord, rolloutRef: string,
): Promise<BreakGlassUse | AppError | undefined> {
  const g = facts.governance;
  if (g === undefined || g.breakGlass === undefined || g.breakGlass === 'missing') return undefined;
  const decision = freezeOf(intent, g, facts);
  if (!decision.pass || decision.via !== 'break-glass') return undefined;
  const grant = g.breakGlass;
  if (!await deps.repos.breakGlassGrants.use(grant.grantId, { rolloutId: record.rolloutId, at: record.createdAt }, rolloutRef)) {
    return errors.breakGlassNotAvailable('used', grant.grantId);
  }
  record.breakGlass = {
    grantId: grant.grantId,
    reason: grant.reason,
    requestedBy: grant.requester.subject,
    approvedBy: grant.approval?.approver.subject ?? '',
    until: decision.until,
  };
  return record.breakGlass;
}

/**
 * A promotion the service's policies refused — its trust policy or its governance (the refusals an
 * automatic promotion skips on) — is an event of the service's log (`promotion.refused`, docs/webhooks.md):
 * receivers hear that a push or a request was held back, and why. Never fails the answer.
 */
async function recordRefusal (deps: IssueRolloutDeps, req: RolloutRequest, ref: string, error: AppError): Promise<void> {
  if (req.intent.kind !== 'promotion' || req.quietRefusal || error.code === 'approval-required' || rolloutRefusalOf(error.code).automatic !== 'skipped') return;
  const event = promotionRefusedEvent({
    ref, at: deps.now(), releaseId: req.releaseId, mode: operationOf(req.intent), code: error.code, detail: error.message, by: req.issuer, reason: req.reason,
  });
  await recordQuietly(deps, req.serviceId, event);
}

/**
 * Records an event of the service's log beside a change made in its own collection (a refusal, a promotion
 * request) and relays it. Never fails the answer: a failed write is logged (a retry of the request records it).
 */
export async function recordQuietly (
  deps: { repos: Pick<Repositories, 'events'>, log: Pick<Log, 'warn'> }, serviceId: string, event: DomainEvent,
): Promise<void> {
  try {
    await deps.repos.events.record(serviceId, event);
    await relayQuietly(deps.repos, serviceId);
  } catch (err) {
    deps.log.warn({ serviceId, err, event: event.type }, 'recording an event failed');
  }
}

/** Which kind of governed operation a rollout request is (approvals may cover each). */
const approvalIntentOf = (req: RolloutRequest): TGovernanceIntent =>
  req.trigger?.kind === 'automatic-rollback' ? 'automatic-rollback' : req.trigger?.kind === 'abort' ? 'abort' : governanceIntentOf(req.intent);

/**
 * The promotion request an admitted rollout becomes when the policy wants it approved: one per
 * Idempotency-Key lifetime (its id derives from the key's record, so a retry after a crash finds it),
 * answered `approval-required` — stored with the key and replayed like any answer.
 */
async function requestApprovals (
  deps: IssueRolloutDeps, req: RolloutRequest, rolloutRef: string, facts: AdmissionFacts & { release: IImageRelease }, approvals: EffectiveApprovals,
): Promise<AppError> {
  const requestId = `pr_${createHash('sha256').update(rolloutRef).digest('hex').slice(0, 24)}`;
  const requester = { subject: req.issuer.subject, role: req.issuer.role as Role, type: req.issuer.type };
  if (!quorumReachable(approvals, requester)) return errors.approvalNotAllowed('self-approval', requester.subject, requestId);
  const createdAt = deps.now();
  const stored = await deps.repos.promotionRequests.createIfAbsent({
    requestId,
    serviceId: facts.service.id,
    releaseId: facts.release.id,
    digest: facts.release.data.registryRootDigest,
    intent: approvalIntentOf(req),
    requester,
    expectedRolloutGeneration: facts.expectedRolloutGeneration,
    createdAt,
    expiresAt: requestExpiresAt(approvals, createdAt),
    rollout: { intent: req.intent, reason: req.reason, ...(req.trigger ? { trigger: req.trigger } : {}) },
    approvals: [],
  });
  await recordQuietly(deps, req.serviceId, promotionRequestedEvent({
    requestId: stored.requestId,
    releaseId: stored.releaseId,
    digest: facts.release.data.registryRootDigest,
    expectedRolloutGeneration: stored.expectedRolloutGeneration,
    intent: stored.intent,
    required: approvals.required,
    expiresAt: stored.expiresAt,
    at: stored.createdAt,
    by: req.issuer,
    reason: req.reason,
  }));
  return errors.approvalRequired({
    requestId: stored.requestId,
    serviceId: stored.serviceId,
    releaseId: stored.releaseId,
    expectedRolloutGeneration: stored.expectedRolloutGeneration,
    required: approvals.required,
    approvals: stored.approvals.length,
    expiresAt: stored.expiresAt,
  });
}

/**
 * Step 2: admit and record the rollout. `inputs` were read before the pending rollouts were
 * settled; when there were some (a crashed process left them), both are read again, since
 * finishing a rollout moves the service and marks its release accepted.
 */
async function planRollout (
  deps: IssueRolloutDeps, req: RolloutRequest, rolloutRef: string, inputs: PlanInputs, pending: RolloutRecord[]
): Promise<RolloutRecord | AppError | SkippedBody> {
  await finishAll(deps, pending);
  const { found, release } = pending.length === 0 ? inputs : await readPlanInputs(deps, req);
  if (!found) return errors.serviceNotFound(req.serviceId);
  const facts = await admissionFactsOf(deps, req, found, release);
  // The registry is asked only once every rule that reads the database alone has admitted the rollout.
  const early = admit(req.intent, facts, rulesBeforeVerification);
  const trust = early ? undefined : await deps.trust?.trustFactOf(req.intent, facts);
  const verdict = early ?? admit(req.intent, { ...facts, ...(trust ? { trust } : {}) });
  if (isSkip(verdict)) return { skipped: verdict.skip, detail: verdict.detail };
  if (verdict) return verdict;
  // Admitted: the release is the service's (the release rule holds).
  const admitted = facts.release as IImageRelease;
  // Last: a rollout the promotion policy wants approved becomes a promotion request instead (docs/governance.md).
  // Read with the governance facts for a promotion; a rollback or an abort reads only the service's own policy.
  const policy = facts.governance?.policy ?? effectivePromotionPolicy(found.service.data.promotionPolicy);
  const approvals = req.approvedRequest === undefined ? approvalsFor(policy, approvalIntentOf(req)) : undefined;
  if (approvals) return requestApprovals(deps, req, rolloutRef, { ...facts, release: admitted }, approvals);
  const targetScope = computeTargetScope(found.service.data.placement, facts.clusters);
  const built = recordOf(deps, { req, rolloutRef, found, release: admitted, targetScope, trust });
  if ('refusal' in built) return built.refusal;
  const glass = await useBreakGlass(deps, req.intent, facts, built.record, rolloutRef);
  if (glass instanceof Error) return glass;
  const inserted = await deps.repos.rollouts.insert(built.record);
  if (inserted.kind === 'exists-for-record') return inserted.record;
  if (inserted.kind === 'generation-taken') {
    // Lost the generation: nothing was issued, so the grant is given back.
    if (glass) await deps.repos.breakGlassGrants.release(glass.grantId, rolloutRef);
    return generationTaken(deps, req, built.record.generation, found.service);
  }
  deps.fault('after-rollout-record');
  return built.record;
}

/**
 * One round trip's worth of independent reads (the rollout an earlier attempt with this key
 * recorded, the service, the release), then the service's pending rollouts (by its generation),
 * then plan or finish.
 */
async function execute (deps: IssueRolloutDeps, req: RolloutRequest, rolloutRef: string): Promise<StoredOutcome> {
  const { repos } = deps;
  const [earlier, inputs] = await Promise.all([repos.rollouts.findByIdempotencyRecord(req.serviceId, rolloutRef), readPlanInputs(deps, req)]);
  const pending = earlier || !inputs.found ? [] : await repos.rollouts.findPending(req.serviceId, currentGeneration(inputs.found.service));
  const decided = earlier ?? await planRollout(deps, req, rolloutRef, inputs, pending);
  if (decided instanceof Error) {
    // Deterministic refusals are stored with the key and replayed (src/errors.ts `rollout.replay`); others are thrown.
    if (rolloutRefusalOf(decided.code).replay) return outcomeOfRefusal(decided);
    throw decided;
  }
  if ('skipped' in decided) return { kind: 'success', body: decided };
  await finishRollout(deps, decided);
  return { kind: 'success', body: { service: decided.serviceAfter } };
}

const fingerprintOf = (req: RolloutRequest): string => requestFingerprint([
  operationOf(req.intent), req.serviceId, req.releaseId, req.expectedRolloutGeneration ?? null,
  req.intent.kind === 'rollback' || req.intent.mode === 'promotion' ? req.intent.expectedCurrentRolloutId ?? null : null,
  // Only when named: the fingerprints of requests stored before break-glass existed stay the same.
  ...(req.intent.kind === 'promotion' && req.intent.breakGlassGrantId !== undefined ? [req.intent.breakGlassGrantId] : []),
  ...(req.fingerprintExtra ?? []),
]);

/** Promotion or rollback with Idempotency-Key semantics. */
export async function issueRollout (deps: IssueRolloutDeps, req: RolloutRequest): Promise<Result<IssueOutcome>> {
  const { repos } = deps;
  const recordId = idempotencyRecordId(req.serviceId, req.idempotencyKey);
  const owner = randomUUID();
  const claim = await repos.idempotency.claim({
    recordId,
    serviceId: req.serviceId,
    key: req.idempotencyKey,
    operation: operationOf(req.intent),
    fingerprint: fingerprintOf(req),
    owner,
    now: deps.now(),
    leaseMs: deps.leaseMs,
    retentionMs: RETENTION_MS,
  });
  if (claim.kind === 'replay') return fromStored(claim.outcome, true);
  if (claim.kind === 'in-progress') return refusal(errors.idempotencyRequestInProgress(claim.retryAfterMs));
  if (claim.kind === 'reused') return refusal(errors.idempotencyKeyReused(claim.operation));
  deps.fault('after-idempotency-record');
  // The rollout is bound to this lifetime of the key: once the record has expired (48 h), the
  // same key starts a new request instead of finding the rollout an old one issued.
  let outcome: StoredOutcome;
  const ref = rolloutRefFor(recordId, claim.createdAt);
  try {
    outcome = await execute(deps, req, ref);
  } catch (err) {
    // Transient failure (database away): store nothing, give the key back for the retry.
    await repos.idempotency.release(recordId, owner).catch(() => undefined);
    // Governance said not now (src/errors.ts `governanceRefused`): an answer, not stored — the retry is asked again.
    if (isAppError(err) && rolloutRefusalOf(err.code).automatic === 'skipped') {
      await recordRefusal(deps, req, ref, err);
      return refusal(err, false);
    }
    throw err;
  }
  await repos.idempotency.complete(recordId, outcome, deps.now());
  const result = fromStored(outcome, false);
  if (!result.ok) await recordRefusal(deps, req, ref, result.error);
  return result;
}

/**
 * Whether a request under this key has already taken effect: its outcome stored, or its rollout
 * committed by an attempt a crash interrupted (then `issueRollout` with the key completes it).
 */
export async function committedUnder ({ repos, now }: IssueRolloutDeps, serviceId: string, idempotencyKey: string): Promise<boolean> {
  const recordId = idempotencyRecordId(serviceId, idempotencyKey);
  const held = await repos.idempotency.find(recordId, now());
  if (!held) return false;
  if (held.state === 'completed') return true;
  return (await repos.rollouts.findByIdempotencyRecord(serviceId, rolloutRefFor(recordId, held.createdAt))) !== null;
}

/** The use cases bound to their dependencies, as the other use cases and the routes call them. */
export const rolloutIssuer = (deps: IssueRolloutDeps) => ({
  issueRollout: (req: RolloutRequest): Promise<Result<IssueOutcome>> => issueRollout(deps, req),
  committedUnder: (serviceId: string, idempotencyKey: string): Promise<boolean> => committedUnder(deps, serviceId, idempotencyKey),
});

export type RolloutIssuer = ReturnType<typeof rolloutIssuer>;
