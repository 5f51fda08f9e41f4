import { Type, type Static } from '@sinclair/typebox';
import {
  IImageRolloutReporterStatus, TImmutableImageMismatchReason, TImmutableImageRolloutStatus,
  immutableImageMismatchReasons, validateImageRolloutStatus,
  type IImageRolloutStatus, type IImmutableImageDeploymentPlan,
} from '../contracts/index.js';
import { initialLifecycle, type DeadlineDecision, type RolloutLifecycle } from './lifecycle.js';
import { pick } from './objects.js';

/**
 * Rollout status as a pure function of the plan and each reporter's latest accepted report
 * (docs/api.md "Snapshot reports and rollout status"), and the read models that describe it. The README's
 * transition table is `statusOf`'s case analysis:
 *
 *   the progress deadline passed (decided once, sticky)  → failed, with the reason it names
 *   any reporter whose evidence does not match the plan  → mismatched
 *   else any replica failed                              → failed
 *   else every required replica observed, healthy, verified,
 *        and validateImageRolloutStatus agrees            → succeeded   (rollback: rolled-back)
 *   else every required replica observed and healthy     → verifying   (rollback: rolling-back)
 *   else some replica observed                           → deploying   (rollback: rolling-back)
 *   else                                                 → pending     (rollback: rolling-back)
 *
 * Replicas on target nodes that no reporter covers count as missing: they are in
 * requiredReplicaCount and never in observedReplicaCount.
 *
 * The status is kept as a summary — the sum of the reporters' counts and how many reporters name
 * each mismatch reason — over each reporter's contribution to them (its counts and reason, with the
 * version of its record: a few dozen bytes), that one report changes by its own delta
 * (`entryDelta`): a report's cost does not depend on the rest of the fleet, and the aggregate is
 * always the exact sum of the contributions. The contributions are spread over STATUS_BUCKETS
 * buckets (`bucketOf`), each with its sums (`BucketSums`); the summary holds the buckets' sums, not
 * the contributions, so the bytes a report rewrites do not grow with the number of reporters. The reporters' entries themselves (the
 * upstream `IImageRolloutReporterStatus`) live in their report records; a full read composes the
 * status from the summary and those records (`composeStatus`).
 */

/** How many status changes the service document keeps for the SSE stream. */
export const STATUS_EVENTS_KEPT = 100;

/** The replica counts (and mismatch reason) of a reporter, a status, an event: the upstream fields. */
export const replicaCountKeys = [
  'requiredReplicaCount', 'observedReplicaCount', 'healthyReplicaCount', 'verifiedReplicaCount', 'failedReplicaCount', 'mismatchReason',
] as const;
export const ReplicaCountFields = Type.Pick(IImageRolloutReporterStatus, replicaCountKeys);
export type ReporterCounts = Static<typeof ReplicaCountFields>;

/** One status change, as the SSE stream sends it (`data` of an `event: status` frame). */
export const StatusEvent = Type.Composite([
  Type.Object({ revision: Type.Integer(), rolloutId: Type.String(), rolloutGeneration: Type.Integer(), status: TImmutableImageRolloutStatus }),
  ReplicaCountFields,
  Type.Object({ at: Type.Integer() }),
]);
export type StatusEvent = Static<typeof StatusEvent>;

export const ReplicaHealth = Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy'), Type.Literal('failed')]);
export type ReplicaHealth = Static<typeof ReplicaHealth>;

export const ReplicaVerification = Type.Union([
  Type.Literal('verified'), Type.Literal('pending'), Type.Literal('mismatched'), Type.Literal('missing'), Type.Literal('other-rollout'),
], { description: 'recomputed by the server from the raw evidence (the reporter\'s own claim is ignored); pending: not running yet, nothing to inspect' });
export type ReplicaVerification = Static<typeof ReplicaVerification>;

/** One reported replica as the server judged it. */
export const ReplicaDetail = Type.Object({
  nodeName: Type.String(),
  deploymentId: Type.String(),
  deploymentStatus: Type.String({ description: 'the deployment status Coreflow reported (running, starting, failed, …)' }),
  health: ReplicaHealth,
  verification: ReplicaVerification,
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
  runningDigest: Type.Optional(Type.String({
    pattern: '^sha256:[a-f0-9]{64}$',
    description: 'a mismatched replica: the digest its evidence says it runs (resolvedDigest), when that is a well-formed digest',
  })),
  counted: Type.Boolean({ description: 'counts toward the rollout (false: beyond replicasPerNode on its node, or of another rollout)' }),
  runningSince: Type.Optional(Type.Integer({ description: 'since when (ms, server\'s clock) the replica has been seen running, without a break' })),
  verifiedSince: Type.Optional(Type.Integer({
    description: 'since when (ms, server\'s clock) the replica has been seen running with verified evidence, without a break',
  })),
  runningStable: Type.Optional(Type.Boolean({ description: 'running for the whole stability window: only then it counts as healthy' })),
  stable: Type.Optional(Type.Boolean({ description: 'running with verified evidence for the whole stability window: only then it counts as verified' })),
});
export type ReplicaDetail = Static<typeof ReplicaDetail>;

/** The counts the aggregate sums over its reporters. */
export interface StatusTotals {
  observed: number;
  healthy: number;
  verified: number;
  failed: number;
}

/** Reporters per mismatch reason (never `replica-failed`, which the failed count carries). */
export type MismatchCounts = Partial<Record<Static<typeof TImmutableImageMismatchReason>, number>>;

/**
 * One reporter's contribution to the summary: the version of its record that wrote it (`v`), its
 * observed, healthy, verified and failed counts (`c`, in that order) and the mismatch reason the
 * summary counts for it (`m`; never `replica-failed`). Short field names: the summary holds one per
 * reporter, in the service document every report updates.
 */
export interface SummaryEntry {
  v: number;
  c: [observed: number, healthy: number, verified: number, failed: number];
  m?: Static<typeof TImmutableImageMismatchReason>;
}

/**
 * How many buckets a rollout's contributions are spread over (by `bucketOf` their reporter key).
 * The service document holds one bucket's sums per bucket in use (≤ ~40 bytes each: at most
 * ~5 KiB, whatever the number of reporters), a bucket document the contributions of its
 * reporters (~32 at 4,096 reporters, ~1.5 KiB): the bytes a report rewrites stay bounded.
 */
export const STATUS_BUCKETS = 128;

/** The bucket of a reporter key: FNV-1a of the key, modulo STATUS_BUCKETS (the same in every process). */
export function bucketOf (key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % STATUS_BUCKETS;
}

/** The `_id` of a rollout's bucket document. */
export const bucketId = (rolloutId: string, bucket: number | string): string => `${rolloutId}:${bucket}`;

/**
 * One bucket's sums over the contributions it holds, at the bucket's version (`v`: +1 on every
 * contribution written to it). The bucket document holds them with the contributions; the service
 * document holds the copy its totals include — a copy at a lower version is behind (a report's
 * second write still in flight, or a crash between the two).
 */
export interface BucketSums {
  v: number;
  /** The observed, healthy, verified and failed counts, in that order (short: the service holds one per bucket). */
  c: [observed: number, healthy: number, verified: number, failed: number];
  /** Reporters per mismatch reason, the reasons some reporter names only. */
  m?: MismatchCounts;
}

/** What replacing a bucket's sums (`before`: none yet) by later ones changes in the totals. */
export function bucketDelta (before: BucketSums | undefined, after: BucketSums): EntryDelta {
  const was = before?.c ?? [0, 0, 0, 0];
  const now = after.c;
  const totals: StatusTotals = { observed: now[0] - was[0], healthy: now[1] - was[1], verified: now[2] - was[2], failed: now[3] - was[3] };
  const mismatched: MismatchCounts = {};
  for (const reason of immutableImageMismatchReasons) {
    const change = (after.m?.[reason] ?? 0) - (before?.m?.[reason] ?? 0);
    if (change !== 0) mismatched[reason] = change;
  }
  return { totals, mismatched };
}

/** The stored rollout status: sums, mismatch counts and the sums of each bucket of contributions. */
export interface StatusSummary {
  rolloutId: string;
  rolloutGeneration: number;
  totals: StatusTotals;
  mismatched: MismatchCounts;
  /**
   * Bucket → its sums as the totals include them (`bucketOf`); the contributions themselves are in
   * the rollout's bucket documents (`statusBuckets`, `_id` `bucketId`).
   */
  buckets: Record<string, BucketSums>;
  /**
   * reporter key → its contribution, as summaries held them before buckets (keys are field-name
   * safe: see `reporterKeyOf`). Start-up migration 7 moves them into buckets; never written now.
   */
  entries?: Record<string, SummaryEntry>;
  /** +1 on every entry change: orders the states for the status events. */
  seq: number;
  updatedAt: number;
  /** Progress, milestones and follow-ups (every stored summary has them since the start-up migrations: src/store/migrations.ts). */
  lifecycle?: RolloutLifecycle;
}

/** A field-name-safe key for a reporter id (ids may hold `.` or start with `$`). */
export const reporterKeyOf = (reporterId: string): string => `r${Buffer.from(reporterId, 'utf8').toString('base64url')}`;

/** The reporter id a key of `reporterKeyOf` stands for. */
export const reporterIdOfKey = (key: string): string => Buffer.from(key.slice(1), 'base64url').toString('utf8');

export const zeroTotals = (): StatusTotals => ({ observed: 0, healthy: 0, verified: 0, failed: 0 });

export const emptySummary = (plan: IImmutableImageDeploymentPlan, now: number): StatusSummary => ({
  rolloutId: plan.rolloutId,
  rolloutGeneration: plan.rolloutGeneration,
  totals: zeroTotals(),
  mismatched: {},
  buckets: {},
  seq: 0,
  updatedAt: now,
  lifecycle: initialLifecycle(now),
});

/** A reporter's mismatch as the summary counts it (replica-failed is a failure, counted by the failed total). */
const mismatchOf = (entry: IImageRolloutReporterStatus) =>
  entry.mismatchReason !== undefined && entry.mismatchReason !== 'replica-failed' ? entry.mismatchReason : undefined;

/** What the summary holds for a reporter's entry, written by version `version` of its record. */
export function contributionOf (entry: IImageRolloutReporterStatus, version: number): SummaryEntry {
  const m = mismatchOf(entry);
  const c: SummaryEntry['c'] = [entry.observedReplicaCount, entry.healthyReplicaCount, entry.verifiedReplicaCount, entry.failedReplicaCount];
  return m === undefined ? { v: version, c } : { v: version, c, m };
}

/** Same counts and the same reason: replacing one contribution by the other changes nothing in the summary. */
export const sameContribution = (a: SummaryEntry, b: SummaryEntry): boolean => a.m === b.m && a.c.every((n, i) => n === b.c[i]);

export interface EntryDelta { totals: StatusTotals, mismatched: MismatchCounts }

/** What replacing a reporter's contribution changes in the summary: the totals and the mismatch counts. */
export function entryDelta (previous: SummaryEntry | undefined, next: SummaryEntry): EntryDelta {
  const before = previous?.c ?? [0, 0, 0, 0];
  const after = next.c;
  const mismatched: MismatchCounts = {};
  const was = previous?.m;
  const is = next.m;
  if (was !== is) {
    if (was) mismatched[was] = -1;
    if (is) mismatched[is] = 1;
  }
  return {
    totals: { observed: after[0] - before[0], healthy: after[1] - before[1], verified: after[2] - before[2], failed: after[3] - before[3] },
    mismatched,
  };
}

/** The first mismatch reason that some reporter names, in the upstream order (deterministic whatever the reporters). */
const firstMismatch = (mismatched: MismatchCounts) => immutableImageMismatchReasons.find((reason) => (mismatched[reason] ?? 0) > 0);

/** The state table above, from the summary's sums. */
type StatusAndReason = Pick<IImageRolloutStatus, 'status' | 'mismatchReason'>;

export function statusOf (
  plan: IImmutableImageDeploymentPlan,
  totals: StatusTotals,
  mismatched: MismatchCounts,
  deadline?: Pick<DeadlineDecision, 'reason'>
): StatusAndReason {
  if (deadline) return { status: 'failed', mismatchReason: deadline.reason };
  const mismatch = firstMismatch(mismatched);
  if (mismatch) return { status: 'mismatched', mismatchReason: mismatch };
  if (totals.failed > 0) return { status: 'failed', mismatchReason: 'replica-failed' };
  const required = plan.targetScope.requiredReplicaCount;
  const rollback = plan.mode === 'rollback';
  const { observed, healthy, verified } = totals;
  if (required >= 1 && observed === required && healthy === required && verified === required) return { status: rollback ? 'rolled-back' : 'succeeded' };
  if (rollback) return { status: 'rolling-back' };
  if (required >= 1 && observed === required && healthy === required) return { status: 'verifying' };
  return { status: observed > 0 ? 'deploying' : 'pending' };
}

/** What an SSE listener is told about: the aggregate, not each reporter's bookkeeping. */
export const aggregateKey = (s: Pick<IImageRolloutStatus, 'status' | 'mismatchReason' | typeof replicaCountKeys[number]>): string => JSON.stringify([
  s.status, s.requiredReplicaCount, s.observedReplicaCount, s.healthyReplicaCount, s.verifiedReplicaCount, s.failedReplicaCount, s.mismatchReason ?? null,
]);

/** The aggregate without the reporters list: the status, its counts and its reason (events, report answers). */
export type RolloutAggregate = Omit<IImageRolloutStatus, 'reporters'>;

export function aggregateOf (
  plan: IImmutableImageDeploymentPlan,
  summary: Pick<StatusSummary, 'totals' | 'mismatched' | 'updatedAt' | 'lifecycle'>
): RolloutAggregate {
  const { totals } = summary;
  return {
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    ...statusOf(plan, totals, summary.mismatched, summary.lifecycle?.deadline),
    requiredReplicaCount: plan.targetScope.requiredReplicaCount,
    observedReplicaCount: totals.observed,
    healthyReplicaCount: totals.healthy,
    verifiedReplicaCount: totals.verified,
    failedReplicaCount: totals.failed,
    updatedAt: summary.updatedAt,
  };
}

/**
 * The upstream status of the current rollout: the reporters' entries (from their report records,
 * sorted by reporter id) and the aggregate they make — the counts and the reason summed over
 * exactly those entries, the deadline and the time of the last change from the summary. The
 * counts always add up to the reporters listed, also while a record is ahead of the summary (its
 * report still settling, or left so by a crash until the agent's retry; the summary — events,
 * listings, lifecycle — then catches up with that retry). Never a status the upstream validator
 * rejects: success must be proven, so a status whose evidence does not add up stays short of it.
 */
export function composeStatus (
  plan: IImmutableImageDeploymentPlan,
  summary: Pick<StatusSummary, 'updatedAt' | 'lifecycle'>,
  entries: readonly IImageRolloutReporterStatus[]
): IImageRolloutStatus {
  const reporters = [...entries].sort((a, b) => a.reporterId.localeCompare(b.reporterId));
  const totals = zeroTotals();
  const mismatched: MismatchCounts = {};
  for (const { c: [observed, healthy, verified, failed], m } of reporters.map((entry) => contributionOf(entry, 0))) {
    totals.observed += observed;
    totals.healthy += healthy;
    totals.verified += verified;
    totals.failed += failed;
    if (m) mismatched[m] = (mismatched[m] ?? 0) + 1;
  }
  const aggregate = aggregateOf(plan, { totals, mismatched, updatedAt: summary.updatedAt, lifecycle: summary.lifecycle });
  let status: IImageRolloutStatus = { ...aggregate, reporters };
  let problems = validateImageRolloutStatus(status);
  if ((status.status === 'succeeded' || status.status === 'rolled-back') && problems.length > 0) {
    // Every replica looks verified, yet the evidence does not add up: success must be proven, so stay short of it.
    status = { ...status, status: plan.mode === 'rollback' ? 'rolling-back' : 'verifying' };
    problems = validateImageRolloutStatus(status);
  }
  if (problems.length > 0) throw new Error(`refusing to answer an invalid rollout status: ${problems.join('; ')}`);
  return status;
}

export const statusEventOf = (status: Omit<IImageRolloutStatus, 'reporters'>, revision: number, at: number): StatusEvent =>
  ({ revision, ...pick(status, ['rolloutId', 'rolloutGeneration', 'status', ...replicaCountKeys]), at });

/** The rank that decides which replicas of a node count: stable first, then verified before unverified, healthy before not. */
const rank = (r: ReplicaDetail): number => (r.stable === true ? 0 : 1) + (r.verification === 'verified' ? 0 : 4) + (r.health === 'healthy' ? 0 : 2);

/** A counted replica is healthy in the counts once it ran for the stability window, verified once it ran verified for it. */
const countsHealthy = (r: ReplicaDetail): boolean => r.health === 'healthy' && r.runningStable === true;
const countsVerified = (r: ReplicaDetail): boolean => r.verification === 'verified' && r.stable === true;

/**
 * Counts one reporter's replicas. A replica counts as healthy once it has run for the service's
 * stability window (`runningStable`), as verified once it has run with verified evidence for it
 * (`stable`; src/domain/lifecycle.ts `replicaStability`). At most replicasPerNode replicas count per node (the best ones);
 * replicas of other rollouts never count. A RUNNING replica of this rollout whose evidence does
 * not verify (a failed check, or no evidence at all) blocks success even when it is beyond the
 * node's count (another replica on the same node verifying proves nothing about it): it sets the
 * reporter's mismatch.
 */
export function countReporterReplicas (
  plan: IImmutableImageDeploymentPlan,
  nodeNames: readonly string[],
  replicas: ReplicaDetail[]
): { counts: ReporterCounts, replicas: ReplicaDetail[] } {
  const perNode = new Map<string, number>();
  const counted: ReplicaDetail[] = [];
  const ordered = [...replicas].sort((a, b) => a.nodeName.localeCompare(b.nodeName) || rank(a) - rank(b) || a.deploymentId.localeCompare(b.deploymentId));
  for (const replica of ordered) {
    const used = perNode.get(replica.nodeName) ?? 0;
    const counts = replica.verification !== 'other-rollout' && used < plan.targetScope.replicasPerNode;
    if (counts) perNode.set(replica.nodeName, used + 1);
    counted.push({ ...replica, counted: counts });
  }
  const mine = counted.filter((r) => r.counted);
  // An extra running task of this rollout that does not verify — its evidence fails a check, or it
  // has none at all — is never dropped: nothing proves what that container runs.
  const extraRunningUnproven = counted.find((r) => !r.counted && r.deploymentStatus === 'running' &&
    r.verification !== 'verified' && r.verification !== 'other-rollout');
  const mismatch = mine.find((r) => r.verification === 'mismatched') ?? extraRunningUnproven;
  const failed = mine.filter((r) => r.health === 'failed').length;
  return {
    counts: {
      requiredReplicaCount: nodeNames.length * plan.targetScope.replicasPerNode,
      observedReplicaCount: mine.length,
      healthyReplicaCount: mine.filter(countsHealthy).length,
      verifiedReplicaCount: mine.filter(countsVerified).length,
      failedReplicaCount: failed,
      mismatchReason: mismatch?.mismatchReason ?? (failed > 0 ? 'replica-failed' : undefined),
    },
    replicas: counted,
  };
}
