import { Type, type Static } from '@sinclair/typebox';
import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import { literalUnion } from '../contracts/literals.js';
import type { DeadlineDecision, FailureMilestone, RolloutLifecycle } from './lifecycle.js';
import type { Issuer, RolloutRecord } from './rollouts.js';
import type { RolloutAggregate } from './rolloutStatus.js';

/**
 * Domain events: what a use case that changed state says happened, recorded in the SAME write as the
 * change (the service document's outbox, appended by the compare-and-swap that makes the change), then
 * relayed, in order, into the durable per-service log (`events`: one document per event, `seq` contiguous
 * per service from 1). Every consumer — webhooks, attestations, the console — reads that one log.
 * docs/architecture.md "Domain events" says how long the log keeps events and what a consumer that
 * falls behind gets.
 */

export const domainEventTypes = [
  'rollout.issued',
  'rollout.status-changed',
  'rollout.succeeded',
  'rollout.failed',
  'rollout.deadline-exceeded',
  'automation.held',
  'automation.released',
  'promotion.refused',
  'promotion.requested',
  'promotion.approved',
  'attestation.issued',
  'attestation.revoked',
] as const;
export const DomainEventType = literalUnion(domainEventTypes);
export type DomainEventType = Static<typeof DomainEventType>;

/**
 * An event as the use case records it (an outbox entry): `key` is its identity within the service
 * (`issued:<rolloutId>`, `status:<revision>`, …), `data` says what happened without a second request.
 * `seq` is set once the relay has claimed the event's place in the log.
 */
export interface DomainEvent {
  key: string;
  type: DomainEventType;
  time: number;
  data: Record<string, unknown>;
  seq?: number;
}

/** An event in the durable log: its service, its place (`seq`) and its id (`<serviceId>:<seq>`). */
export const LoggedEvent = Type.Object({
  id: Type.String({ description: '`<serviceId>:<seq>`: stable, the CloudEvents id and webhook-id of the event' }),
  serviceId: Type.String(),
  seq: Type.Integer({ minimum: 1, description: 'the event\'s place in the service\'s log: contiguous from 1' }),
  key: Type.String(),
  type: DomainEventType,
  time: Type.Integer({ description: 'when it happened (ms since the epoch, the server\'s clock)' }),
  data: Type.Record(Type.String(), Type.Unknown()),
});
export type LoggedEvent = Static<typeof LoggedEvent>;

/** The log id of a service's event number `seq`. */
export const eventId = (serviceId: string, seq: number): string => `${serviceId}:${seq}`;

/**
 * A promotion the service's policies refused (trust, governance): nothing was issued. `key` ties it to the
 * request's Idempotency-Key lifetime (`ref`), so the relay of a retried request's event is the same event.
 */
export const promotionRefusedEvent = (
  input: { ref: string, at: number, releaseId: string, mode: string, code: string, detail: string, by: unknown, reason: string },
): DomainEvent => ({
  key: `refused:${input.ref}:${input.code}`,
  type: 'promotion.refused',
  time: input.at,
  data: { releaseId: input.releaseId, mode: input.mode, code: input.code, reason: input.detail.slice(0, 512), by: input.by, requestReason: input.reason },
});

/** What the promotion request events name: the request, its release and digest, the generation it was made against. */
export interface PromotionRequestFacts {
  requestId: string;
  releaseId: string;
  digest: string;
  expectedRolloutGeneration: number;
  intent: string;
  required: number;
  expiresAt: number;
}

/** The members every promotion request event has (`generation`: the one the request was made against). */
const requestFacts = (input: PromotionRequestFacts) => ({
  requestId: input.requestId,
  releaseId: input.releaseId,
  digest: input.digest,
  generation: input.expectedRolloutGeneration,
  intent: input.intent,
  required: input.required,
  expiresAt: input.expiresAt,
});

/**
 * A promotion the policy wants approved became a promotion request: approvers hear it. `key` is the request's
 * id (one request per Idempotency-Key lifetime): a retry of the request records the same event.
 */
export const promotionRequestedEvent = (
  input: PromotionRequestFacts & { at: number, by: unknown, reason: string },
): DomainEvent => ({
  key: `requested:${input.requestId}`,
  type: 'promotion.requested',
  time: input.at,
  data: { ...requestFacts(input), by: input.by, reason: input.reason.slice(0, 1024) },
});

/** One approval was added to a promotion request (the one that completes the quorum is followed by `rollout.issued`). */
export const promotionApprovedEvent = (
  input: PromotionRequestFacts & { at: number, approver: { subject: string, role: string, type?: string }, approvals: number },
): DomainEvent => ({
  key: `approved:${input.requestId}:${input.approver.subject}`,
  type: 'promotion.approved',
  time: input.at,
  data: { ...requestFacts(input), approvals: input.approvals, by: input.approver },
});

/** What every rollout event names: the rollout, its generation and mode, and the release and digest it deploys. */
const rolloutFacts = (plan: Pick<IImmutableImageDeploymentPlan, 'rolloutId' | 'rolloutGeneration' | 'mode' | 'releaseId' | 'requestedDigest'>) => ({
  rolloutId: plan.rolloutId,
  generation: plan.rolloutGeneration,
  mode: plan.mode,
  releaseId: plan.releaseId,
  digest: plan.requestedDigest,
});

export const rolloutIssuedEvent = (record: RolloutRecord): DomainEvent => ({
  key: `issued:${record.rolloutId}`,
  type: 'rollout.issued',
  time: record.createdAt,
  data: {
    ...rolloutFacts(record.plan),
    digestPinnedImageReference: record.plan.digestPinnedImageReference,
    trigger: record.trigger?.kind ?? (record.mode === 'automatic' ? 'push' : 'request'),
    ...(record.trigger?.kind === 'automatic-rollback' ? { cause: record.trigger.cause } : {}),
    previousRolloutId: record.previous?.rolloutId ?? null,
    requiredReplicaCount: record.plan.targetScope.requiredReplicaCount,
    by: record.issuedBy,
    reason: record.reason,
    ...(record.approval ? { approval: record.approval } : {}),
    ...(record.breakGlass ? { breakGlass: record.breakGlass } : {}),
  },
});

/** The automation hold a rollout sets (a rollback) or lifts (an explicit promotion), if it does. */
export function holdEvent (record: RolloutRecord): DomainEvent | undefined {
  if (record.hold === 'unchanged') return undefined;
  const held = record.hold === 'set';
  return {
    key: `${held ? 'held' : 'released'}:${record.rolloutId}`,
    type: held ? 'automation.held' : 'automation.released',
    time: record.createdAt,
    data: { rolloutId: record.rolloutId, generation: record.generation, by: record.issuedBy, reason: record.reason },
  };
}

export const statusChangedEvent = (
  plan: IImmutableImageDeploymentPlan, from: RolloutAggregate['status'] | null, to: RolloutAggregate, revision: number, time: number
): DomainEvent => ({
  key: `status:${revision}`,
  type: 'rollout.status-changed',
  time,
  data: {
    ...rolloutFacts(plan),
    from,
    status: to.status,
    reason: to.mismatchReason ?? null,
    requiredReplicaCount: to.requiredReplicaCount,
    observedReplicaCount: to.observedReplicaCount,
    healthyReplicaCount: to.healthyReplicaCount,
    verifiedReplicaCount: to.verifiedReplicaCount,
    failedReplicaCount: to.failedReplicaCount,
    statusRevision: revision,
  },
});

export const succeededEvent = (plan: IImmutableImageDeploymentPlan, succeededAt: number): DomainEvent => ({
  key: `succeeded:${plan.rolloutId}`,
  type: 'rollout.succeeded',
  time: succeededAt,
  data: { ...rolloutFacts(plan), status: plan.mode === 'rollback' ? 'rolled-back' : 'succeeded', succeededAt },
});

export const failedEvent = (plan: IImmutableImageDeploymentPlan, failure: FailureMilestone): DomainEvent => ({
  key: `failed:${plan.rolloutId}`,
  type: 'rollout.failed',
  time: failure.at,
  data: { ...rolloutFacts(plan), status: failure.status, reason: failure.reason, by: failure.by },
});

export const deadlineEvent = (plan: IImmutableImageDeploymentPlan, decision: DeadlineDecision): DomainEvent => ({
  key: `deadline:${plan.rolloutId}`,
  type: 'rollout.deadline-exceeded',
  time: decision.at,
  data: {
    ...rolloutFacts(plan), status: 'failed', reason: decision.reason, lastProgressAt: decision.lastProgressAt, deadlineSeconds: decision.deadlineSeconds,
  },
});

/** The milestone events of a rollout's lifecycle (what a replacement records for the rollout it ends). */
export function milestoneEvents (plan: IImmutableImageDeploymentPlan, milestones: Pick<RolloutLifecycle, 'succeededAt' | 'failure'>): DomainEvent[] {
  const events: DomainEvent[] = [];
  if (milestones.failure) events.push(failedEvent(plan, milestones.failure));
  if (milestones.succeededAt !== undefined) events.push(succeededEvent(plan, milestones.succeededAt));
  return events;
}

/** Who did it, as events name them. */
export type EventActor = Issuer;
