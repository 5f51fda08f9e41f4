import type { IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { ReportDeploymentSnapshotsInput } from '../contracts/reports.js';
import type { Clock, Repositories, ReportTarget, StatusState } from '../domain/ports/index.js';
import {
  claimRefusal, deploymentProblems, envelopeRefusal, foreignNodeRefusal, mergedDeployments, missingCapabilityRefusal, positionVerdict,
  accountedVersion, inheritedVerdict, keptNodes, nodeSourcesAfter, RETIRED_SESSIONS_KEPT, reportNodeScope, reportedNodes,
  reporterEntryOf, reporterIdOf, rolloutRecordId, serviceRecordId, staleReport,
  type ReportHead, type ReportRecord,
} from '../domain/reports.js';
import { aggregateOf, contributionOf, entryDelta, reporterKeyOf, sameContribution, type RolloutAggregate, type SummaryEntry } from '../domain/rolloutStatus.js';
import { effectiveRolloutPolicy, type EffectivePolicy } from '../domain/lifecycle.js';
import { errors, type AppError } from '../errors.js';
import type { FaultHook } from '../faults.js';
import { invalid, refusal, success, type Actor, type Result } from '../domain/result.js';
import { statusPublisher } from './statusEvents.js';
import type { Telemetry } from '../domain/ports/telemetry.js';

/**
 * Report a Coreflow deployment snapshot (docs/api.md "Snapshot reports and rollout status", "How reports are stored"):
 * authorize the reporter's nodes; for a service that requires immutable images check the report
 * envelope and re-verify every replica's evidence; then ONE fenced write of the reporter's own
 * record (compare-and-swap on its version: a refused or superseded report writes nothing, two in
 * flight never interleave), and its delta into the rollout status summary (guarded by the entry's
 * version: reporters of one rollout never retry against each other) — unless the report changes
 * nothing in the summary (the same counts and reason as the contribution the summary holds for
 * the previous record): then the record alone is written (`coveredBy`). Nodes and sessions of a
 * rollout are claimed by the first reporter that names them. The reporter's record is not read
 * when this process wrote it last: the CAS of the write proves it unchanged.
 *
 * Crash safety: a crash after the claims leaves only claims (the retry finds them its own); after
 * the record, the status lags it — the retry of the same report is a replay, which applies the
 * record to the status first; a later report applies its delta from whatever the status holds.
 */

export type ReportOutcome =
  | { kind: 'recorded' }
  | { kind: 'applied', status: Omit<IImageRolloutStatus, 'reporters'> }
  | { kind: 'replayed', status: Omit<IImageRolloutStatus, 'reporters'> };

export interface ReportSnapshotDeps {
  repos: Pick<Repositories, 'clusters' | 'events' | 'reports' | 'rollouts' | 'statusEvents' | 'statusSummaries'>;
  telemetry: Telemetry;
  now: Clock;
  fault: FaultHook;
  /** Lifecycle control after the status changed (src/operations/lifecycle.ts): progress, milestones, follow-ups. */
  afterStatusChange: (serviceId: string, plan: IImmutableImageDeploymentPlan, state: StatusState) => Promise<void>;
}

/** Rollouts whose predecessor a process remembers (the reporter's first report of a rollout reads it). */
const PREVIOUS_KEPT = 4096;

/** Rounds of read → decide → write a report may take against its own reporter's concurrent reports. */
const MAX_ROUNDS = 16;

/**
 * Rounds a report of a service without the immutable policy may take against the concurrent reports
 * of its cluster (one record per cluster: each round one of them wins), before it is answered
 * `database-unavailable` (retry).
 */
const CLUSTER_RECORD_ROUNDS = 128;

type ImmutableInput = ReportDeploymentSnapshotsInput & { immutableReport: NonNullable<ReportDeploymentSnapshotsInput['immutableReport']> };

interface Reporter { reporterId: string, clusterId: string }

/**
 * A report on an immutable rollout: the plan it is for, the service's settings, the input, who
 * reports, and the summary head with the reporter's contribution as read with the plan.
 */
interface RolloutReport {
  plan: IImmutableImageDeploymentPlan,
  policy: EffectivePolicy,
  input: ImmutableInput,
  reporter: Reporter,
  held: ReportTarget['held'],
}

/** The nodes of a reporter's earlier reports a node-scoped report leaves as they were, and their deployments. */
interface Kept { nodeNames: string[], deployments: ReportRecord['deployments'] }

/** What an admitted report is about. */
interface Admitted { target: ReportTarget, reporter: Reporter, scope: string[] | undefined }

/**
 * What the steps of a report share: the dependencies, the status publisher built on them, and
 * each rollout's predecessor as read (a rollout's `previous` never changes; at most PREVIOUS_KEPT
 * remembered) — one per bound `reportSnapshot`, as the process's memory of what it read.
 */
export interface ReportContext extends ReportSnapshotDeps {
  publish: (serviceId: string, plan: IImmutableImageDeploymentPlan, state: StatusState) => Promise<void>;
  previousOf: Map<string, string | undefined>;
}

/** The context of a report: built once per bound `reportSnapshot`, as the closure held it. */
export function reportContext (deps: ReportSnapshotDeps): ReportContext {
  return { ...deps, publish: statusPublisher(deps), previousOf: new Map<string, string | undefined>() };
}

/**
 * The record's entry into the status summary: its delta from what the summary holds for the
 * reporter (usually the record's previous version; after a crash, an older one), once.
 */
async function applyToStatus (
  ctx: ReportContext, plan: IImmutableImageDeploymentPlan, record: ReportHead, assumed: SummaryEntry | undefined
): Promise<StatusState | AppError> {
  if (!record.entry) throw new Error(`report ${record.id} has no status entry`);
  const entry = contributionOf(record.entry, record.version);
  const key = reporterKeyOf(record.reporterId);
  let previous = assumed;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const write = { serviceId: record.serviceId, rolloutId: plan.rolloutId, key, entry };
    const delta = entryDelta(previous, entry);
    const afterBucket = () => ctx.fault('after-report-bucket');
    const result = await ctx.repos.statusSummaries.applyStatusEntry({ ...write, expectedVersion: previous?.v, delta, now: ctx.now(), afterBucket });
    if (result.kind === 'applied') return result.state;
    if (result.kind === 'not-current') {
      const target = await ctx.repos.statusSummaries.findReportTarget(record.serviceId);
      // Every plan is written with its summary (plans of earlier versions got theirs from start-up migration 3).
      return staleReport(`rollout '${plan.rolloutId}' was superseded while being reported on`, target?.plan);
    }
    // The summary holds another version of the reporter's contribution than assumed: a summary write that lost, retried.
    ctx.telemetry.statusConflict();
    if (result.stored && result.stored.v >= record.version) {
      // This record (or a later one of the reporter) is in the summary already.
      return (await ctx.repos.statusSummaries.readStatusState(record.serviceId, plan.rolloutId)) ??
        staleReport(`rollout '${plan.rolloutId}' was superseded`, plan);
    }
    previous = result.stored;
  }
  throw new Error(`the status entry of ${record.id} kept moving`);
}

/** The aggregate after the record is in the status, its event published. */
async function settle (
  ctx: ReportContext, plan: IImmutableImageDeploymentPlan, record: ReportHead, assumed: SummaryEntry | undefined
): Promise<Result<RolloutAggregate>> {
  const state = await applyToStatus(ctx, plan, record, assumed);
  if (state instanceof Error) return refusal(state);
  ctx.fault('after-report-status');
  await ctx.publish(record.serviceId, plan, state);
  await ctx.afterStatusChange(record.serviceId, plan, state);
  return success(aggregateOf(plan, state.summary));
}

/** A replay: the record is usually in the status already; a crash may have left it behind, or its event unpublished. */
async function settleReplay (ctx: ReportContext, plan: IImmutableImageDeploymentPlan, record: ReportHead): Promise<Result<RolloutAggregate>> {
  const held = await ctx.repos.statusSummaries.readStatusEntry(record.serviceId, plan.rolloutId, reporterKeyOf(record.reporterId), ctx.now());
  if (held.current && held.stored && held.stored.v >= accountedVersion(record)) {
    const state = await ctx.repos.statusSummaries.readStatusState(record.serviceId, plan.rolloutId);
    if (state) {
      await ctx.publish(record.serviceId, plan, state);
      return success(aggregateOf(plan, state.summary));
    }
  }
  return settle(ctx, plan, record, held.stored);
}

/** The reporter's record (head) of the rollout the plan's replaced (generations are contiguous: the one before), if any. */
async function inheritedHead (ctx: ReportContext, serviceId: string, plan: IImmutableImageDeploymentPlan, reporterId: string): Promise<ReportHead | null> {
  let previous = ctx.previousOf.get(plan.rolloutId);
  if (!ctx.previousOf.has(plan.rolloutId)) {
    previous = (await ctx.repos.rollouts.findByGeneration(serviceId, plan.rolloutGeneration - 1))?.rolloutId;
    if (ctx.previousOf.size >= PREVIOUS_KEPT) ctx.previousOf.clear();
    ctx.previousOf.set(plan.rolloutId, previous);
  }
  return previous === undefined ? null : await ctx.repos.reports.findHead(rolloutRecordId(previous, reporterId));
}

/** The nodes and the session this report names that the reporter does not hold yet (from its record). */
async function claimNew (ctx: ReportContext, { plan, reporter, input }: RolloutReport, record: ReportHead | null): Promise<AppError | undefined> {
  const held = new Set(record?.nodeNames ?? []);
  const sessions = new Set([record?.position.sessionId, ...(record?.retiredSessions ?? [])]);
  const claims = [
    ...[...new Set(input.immutableReport.reporterNodeNames)].filter((n) => !held.has(n)).map((name) => ({ kind: 'node' as const, name })),
    ...(sessions.has(input.immutableReport.reporterSessionId) ? [] : [{ kind: 'session' as const, name: input.immutableReport.reporterSessionId }]),
  ];
  const [refused] = await ctx.repos.reports.claim(plan.rolloutId, reporter.reporterId, claims, ctx.now());
  return refused ? claimRefusal(plan, refused) : undefined;
}

/**
 * The summary version that already accounts for the next record, if any: the summary holds the
 * reporter's contribution of exactly the previous record (nothing of the reporter is pending
 * in it), and the next record's contribution is the same. A report that changes nothing in the
 * summary — the steady state of an agent reporting on a settled rollout — then writes only its
 * record (marked `coveredBy`), not the service document.
 */
function coveringVersion (held: RolloutReport['held'], previous: ReportHead | null, next: ReportRecord): number | undefined {
  const stored = held?.entry;
  if (!stored || !previous?.entry || !next.entry || stored.v !== accountedVersion(previous)) return undefined;
  return sameContribution(stored, contributionOf(next.entry, next.version)) ? stored.v : undefined;
}

/** A report that changed nothing in the summary: the state read with the plan; its event and lifecycle pass, should an earlier report have left them. */
async function settleCovered (
  ctx: ReportContext, plan: IImmutableImageDeploymentPlan, record: ReportRecord, state: StatusState
): Promise<Result<RolloutAggregate>> {
  ctx.fault('after-report-status');
  await ctx.publish(record.serviceId, plan, state);
  await ctx.afterStatusChange(record.serviceId, plan, state);
  return success(aggregateOf(plan, state.summary));
}

/**
 * The record this report writes: the envelope's position, the entry, the verdicts and the
 * deployments — with a node scope, merged with the reporter's earlier ones on its other nodes
 * (`kept`: their deployments as the record `previous` holds them).
 */
function nextRecord (
  ctx: ReportContext, { plan, policy, input, reporter }: RolloutReport, previous: ReportHead | null, retire: string | undefined,
  kept: Kept, inherited: ReportHead | null
): ReportRecord {
  const envelope = input.immutableReport;
  const receivedAt = ctx.now();
  // Every node the reporter has reported in the rollout: its latest report's, and those it left out since.
  const seen = [...new Set([...(previous?.nodeNames ?? []), ...(previous?.earlierNodes ?? [])])];
  const stability = { previous: previous?.replicas ?? [], previousNodes: seen, receivedAt, policy };
  const { entry, replicas } = reporterEntryOf(plan, input, reporter, stability, kept.nodeNames);
  const current = new Set(entry.reporterNodeNames);
  const earlierNodes = seen.filter((n) => !current.has(n)).sort();
  const before = previous?.retiredSessions ?? inherited?.retiredSessions ?? [];
  const retired = retire === undefined ? before : [...before, retire].slice(-RETIRED_SESSIONS_KEPT);
  return {
    id: rolloutRecordId(plan.rolloutId, reporter.reporterId),
    serviceId: input.serviceId,
    rolloutId: plan.rolloutId,
    reporterId: reporter.reporterId,
    clusterId: reporter.clusterId,
    version: (previous?.version ?? 0) + 1,
    position: { sessionId: envelope.reporterSessionId, sequence: envelope.reportSequence, reportedAt: input.reportedAt, receivedAt },
    retiredSessions: retired,
    nodeNames: entry.reporterNodeNames,
    ...(earlierNodes.length > 0 ? { earlierNodes } : {}),
    entry,
    replicas,
    deployments: kept.nodeNames.length === 0 ? input.deployments : mergedDeployments(kept.deployments, input.deployments, envelope.reporterNodeNames),
  };
}

/**
 * The nodes a node-scoped report leaves as they were, with their deployments as the record at
 * `previous`'s version holds them (read only then); undefined when the record moved meanwhile.
 */
async function keptOf (ctx: ReportContext, input: ImmutableInput, previous: ReportHead | null): Promise<Kept | undefined> {
  const nodeNames = keptNodes(input, previous);
  if (nodeNames.length === 0 || !previous) return { nodeNames: [], deployments: [] };
  const stored = await ctx.repos.reports.findRecord(previous.id);
  if (stored?.version !== previous.version) return undefined;
  const keep = new Set(nodeNames);
  return { nodeNames, deployments: stored.deployments.filter((d) => d.nodeName !== undefined && keep.has(d.nodeName)) };
}

/** An immutable rollout's report: decide against the reporter's record, claim, write the record (CAS), then the status. */
async function reportOnRollout (ctx: ReportContext, report: RolloutReport): Promise<Result<ReportOutcome>> {
  const { plan, input, reporter } = report;
  const envelope = input.immutableReport;
  const recordId = rolloutRecordId(plan.rolloutId, reporter.reporterId);
  // The record as this process last wrote it, when it knows it: the record's CAS proves it still
  // is (an agent usually reports to the same process); a refusal or a replay is decided on the
  // stored record only.
  let guess = ctx.repos.reports.knownHead(recordId);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const guessed = guess !== undefined;
    const record = guess ?? await ctx.repos.reports.findHead(recordId);
    guess = undefined;
    const position = { sessionId: envelope.reporterSessionId, sequence: envelope.reportSequence, reportedAt: input.reportedAt, receivedAt: ctx.now() };
    // The reporter's first report of the rollout: its sessions retired in the rollout before stay retired.
    const inherited = record ? null : await inheritedHead(ctx, input.serviceId, plan, reporter.reporterId);
    const verdict = record
      ? positionVerdict(plan, record, position, report.policy.clockToleranceSeconds * 1000)
      : inheritedVerdict(plan, inherited, envelope.reporterSessionId);
    if (guessed && verdict.kind !== 'apply') continue;
    if (verdict.kind === 'refuse') return refusal(verdict.error);
    if (verdict.kind === 'replay' && record) {
      const replayed = await settleReplay(ctx, plan, record);
      return replayed.ok ? success({ kind: 'replayed', status: replayed.value }, true) : replayed;
    }
    const kept = await keptOf(ctx, input, record);
    if (!kept) continue;
    const built = nextRecord(ctx, report, record, verdict.kind === 'apply' ? verdict.retire : undefined, kept, inherited);
    // Before anything is claimed or written: a refused report changes nothing.
    const limit = ctx.repos.reports.oversized(built);
    if (limit !== undefined) {
      const what = 'this reporter\'s record of the rollout (its deployments and the server\'s verdicts, on all its nodes together)';
      return refusal(errors.payloadTooLarge(limit, what));
    }
    const taken = await claimNew(ctx, report, record);
    if (taken) return refusal(taken);
    ctx.fault('after-report-claims');
    const coveredBy = coveringVersion(report.held, record, built);
    const next: ReportRecord = coveredBy === undefined ? built : { ...built, coveredBy };
    if (!(await ctx.repos.reports.writeRecord(next, record?.version ?? 0))) continue;
    ctx.fault('after-report-record');
    const settled = coveredBy !== undefined && report.held
      ? await settleCovered(ctx, plan, next, report.held.state)
      : await settle(ctx, plan, next, record?.entry ? contributionOf(record.entry, accountedVersion(record)) : undefined);
    return settled.ok ? success({ kind: 'applied', status: settled.value }) : settled;
  }
  throw new Error(`the report of ${reporter.reporterId} kept being overtaken by its own concurrent reports`);
}

/**
 * A service without the immutable policy: the reporting cluster's stored deployments, replaced
 * (or, with a node scope, merged), whichever of the cluster's tokens reported them before.
 */
async function recordDeployments (
  ctx: ReportContext, input: ReportDeploymentSnapshotsInput, reporter: Reporter, scope: string[] | undefined
): Promise<Result<ReportOutcome>> {
  const id = serviceRecordId(input.serviceId, reporter.clusterId);
  for (let round = 0; round < CLUSTER_RECORD_ROUNDS; round++) {
    // Every agent of a cluster writes this one record: after a few lost rounds, step aside a little.
    if (round >= 3) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 * round)));
    const previous = await ctx.repos.reports.findRecord(id);
    const position = { reportedAt: input.reportedAt, receivedAt: ctx.now() };
    // A scoped report leaves the rest of the record as it was: its reporter and position with it.
    const base = scope !== undefined && previous
      ? { reporterId: previous.reporterId, position: previous.position }
      : { reporterId: reporter.reporterId, position };
    const nodeSources = nodeSourcesAfter(previous?.nodeSources ?? [], scope, { reporterId: reporter.reporterId, ...position });
    const record: ReportRecord = {
      id,
      serviceId: input.serviceId,
      ...base,
      clusterId: reporter.clusterId,
      version: (previous?.version ?? 0) + 1,
      retiredSessions: [],
      nodeNames: [],
      replicas: [],
      deployments: mergedDeployments(previous?.deployments ?? [], input.deployments, scope),
      ...(nodeSources ? { nodeSources } : {}),
    };
    // The cluster's node groups together must fit one document (as on a rollout).
    const limit = ctx.repos.reports.oversized(record);
    if (limit !== undefined) return refusal(errors.payloadTooLarge(limit, 'the deployments this cluster states for the service, on all its nodes together,'));
    if (await ctx.repos.reports.writeRecord(record, previous?.version ?? 0)) return success({ kind: 'recorded' });
  }
  // Still contended after that many rounds: retryable, like a write conflict.
  return refusal(errors.databaseUnavailable(new Error(`the deployments of cluster ${reporter.clusterId} kept being overtaken by its concurrent reports`)));
}

/** Checks that need no rollout: the reporter is a cluster, the service exists, the nodes are the cluster's. */
async function admit (ctx: ReportContext, input: ReportDeploymentSnapshotsInput, actor: Actor): Promise<Result<Admitted>> {
  const { principal } = actor;
  if (principal.clusterId === undefined) return refusal(errors.forbidden('only cluster tokens may report deployments'));
  const scoped = reportNodeScope(input);
  const nodes = 'scope' in scoped ? reportedNodes(input, scoped.scope) : [];
  const reporterId = reporterIdOf(principal);
  const [target, owners] = await Promise.all([
    ctx.repos.statusSummaries.findReportTarget(input.serviceId, reporterKeyOf(reporterId)),
    ctx.repos.clusters.findRegisteredNodeOwners(nodes),
  ]);
  if (!target) return refusal(errors.serviceNotFound(input.serviceId));
  if ('problems' in scoped) return invalid(scoped.problems);
  const problems = deploymentProblems(input, scoped.scope);
  if (problems.length > 0) return invalid(problems);
  const foreign = foreignNodeRefusal(principal, nodes, owners);
  if (foreign) return refusal(foreign);
  return success({ target, reporter: { reporterId, clusterId: principal.clusterId }, scope: scoped.scope });
}

/**
 * The use case: admit the report, then record a cluster's deployments (a service without the
 * immutable policy) or report on the service's immutable rollout.
 */
export async function reportDeploymentSnapshot (ctx: ReportContext, input: ReportDeploymentSnapshotsInput, actor: Actor): Promise<Result<ReportOutcome>> {
  const admitted = await admit(ctx, input, actor);
  if (!admitted.ok) return admitted;
  const { target, reporter, scope } = admitted.value;
  if (!target.immutableImageRequired) return recordDeployments(ctx, input, reporter, scope);
  // Immutable deployment: the envelope is mandatory and everything in it is checked. (The reporter
  // capability was checked before schema validation, by `precheck`.)
  const unacceptable = envelopeRefusal(target, input, reporter.clusterId);
  if (unacceptable || !target.plan) return refusal(unacceptable ?? errors.immutablePlanMissing(target.serviceId));
  const policy = effectiveRolloutPolicy(target.policy);
  return reportOnRollout(ctx, { plan: target.plan, policy, input: input as ImmutableInput, reporter, held: target.held });
}

/** Telemetry around the use case, and its log line on success. */
export async function reportSnapshotCounted (ctx: ReportContext, input: ReportDeploymentSnapshotsInput, actor: Actor): Promise<Result<ReportOutcome>> {
  const result = await ctx.telemetry.report(reportDeploymentSnapshot(ctx, input, actor));
  if (result.ok) {
    const status = 'status' in result.value ? result.value.status.status : undefined;
    actor.log.info({ serviceId: input.serviceId, outcome: result.value.kind, status }, 'snapshot report');
  }
  return result;
}

/** Before schema validation: a reporter without the capability gets its own code (and is counted), not a schema error. */
export function precheckReport (telemetry: Telemetry, raw: unknown): AppError | undefined {
  const refused = missingCapabilityRefusal(raw);
  if (refused) telemetry.reportRefused(refused);
  return refused;
}

/** The report use case bound to its dependencies, as the HTTP layer calls it (with `precheck` before schema validation). */
export function reportSnapshot (deps: ReportSnapshotDeps) {
  const ctx = reportContext(deps);
  const reportSnapshotOf = (input: ReportDeploymentSnapshotsInput, actor: Actor): Promise<Result<ReportOutcome>> => reportSnapshotCounted(ctx, input, actor);
  const precheck = (raw: unknown): AppError | undefined => precheckReport(deps.telemetry, raw);
  return Object.assign(reportSnapshotOf, { precheck });
}
