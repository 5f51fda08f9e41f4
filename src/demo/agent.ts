import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IDeployment, IImmutableImageDeploymentPlan, ReportDeploymentSnapshotsRequest, TSha256Digest } from '../contracts/index.js';
import { ProblemError, type Api } from './api.js';
import type { Output } from './output.js';
import { deploymentOf, isSettled, nodeIdOf, phaseAt, scriptReplicas, type Fault, type Phase, type ReplicaScript } from './replicas.js';

/**
 * A simulated Coreflow agent for one cluster: it reports a deployment snapshot of its
 * nodes with a cluster token whenever a replica changes, and every `intervalMs` even
 * without change — the server counts a replica only after it stayed running and verified
 * for its stability window (measured on receipt times), so an agent must keep reporting.
 * One session per agent run; the report sequence grows with every report.
 */

export interface AgentOptions {
  api: Api;
  plan: IImmutableImageDeploymentPlan;
  serviceId: string;
  clusterId: string;
  /** The nodes this agent reports (a silent node is left out: no reporter covers it). */
  nodeNames: string[];
  faults: ReadonlyMap<string, Fault>;
  rogueDigest: TSha256Digest;
  intervalMs: number;
  out: Output;
}

export interface Agent {
  readonly clusterId: string;
  /** Every replica has reached its final phase and a report saying so was accepted. */
  readonly settled: boolean;
  /** The server's answer when a newer rollout replaced this one (stale-rollout-report). */
  readonly superseded: string | undefined;
  stop(): Promise<void>;
}

type ReportBody = Omit<ReportDeploymentSnapshotsRequest, 'identity'>;

interface AgentState {
  readonly opts: AgentOptions;
  readonly session: string;
  readonly replicas: ReplicaScript[];
  /** The origin of the replicas' script: when the agent's first report (nothing scheduled yet) was answered. */
  startedAt: number;
  readonly signal: AbortSignal;
  sequence: number;
  lastReportAt: number;
  /** The phases of the last accepted report, to report (and print) on change. */
  lastPhases: string;
  lastSettledCount: number;
  lastError: string;
  settled: boolean;
  superseded: string | undefined;
}

export function startAgent (opts: AgentOptions): Agent {
  const controller = new AbortController();
  const state: AgentState = {
    opts,
    session: `demo-${opts.clusterId}-${randomUUID()}`,
    replicas: scriptReplicas({
      nodeNames: opts.nodeNames, replicasPerNode: opts.plan.targetScope.replicasPerNode, faults: opts.faults, intervalMs: opts.intervalMs,
    }),
    startedAt: Date.now(),
    signal: controller.signal,
    sequence: 0,
    lastReportAt: 0,
    lastPhases: '',
    lastSettledCount: 0,
    lastError: '',
    settled: false,
    superseded: undefined,
  };
  const loop = runAgent(state);
  return {
    clusterId: opts.clusterId,
    get settled () { return state.settled; },
    get superseded () { return state.superseded; },
    stop: async () => {
      controller.abort();
      await loop;
    },
  };
}

async function runAgent (state: AgentState): Promise<void> {
  // First an empty snapshot (nothing scheduled yet); the script's delays count from its answer, so that
  // a slow first request (a cold server, a busy machine) does not skip the replicas' progression.
  await report(state, state.replicas.map(() => 'absent'));
  state.startedAt = Date.now();
  while (!state.signal.aborted && state.superseded === undefined) {
    const phases = state.replicas.map((r) => phaseAt(r, Date.now() - state.startedAt));
    if (phases.join() !== state.lastPhases || Date.now() - state.lastReportAt >= state.opts.intervalMs) await report(state, phases);
    try {
      await sleep(msUntilNextReport(state), undefined, { signal: state.signal });
    } catch {
      return; // stopped
    }
  }
}

/** Until the next replica transition or the next periodic report, whichever comes first. */
function msUntilNextReport (state: AgentState): number {
  const elapsed = Date.now() - state.startedAt;
  const transitions = state.replicas.flatMap((r) => [r.startsAt, r.settlesAt]).filter((t) => t > elapsed);
  const periodic = state.lastReportAt + state.opts.intervalMs - Date.now();
  return Math.max(10, Math.min(periodic, ...transitions.map((t) => t - elapsed)));
}

async function report (state: AgentState, phases: Phase[]): Promise<void> {
  const { opts } = state;
  state.sequence += 1;
  state.lastReportAt = Date.now();
  try {
    await opts.api.call({
      method: 'POST', path: '/v1/deployment-snapshots', as: { role: 'cluster', clusterId: opts.clusterId }, body: reportBody(state, phases), retries: 0,
    });
  } catch (err) {
    noteFailure(state, err);
    return;
  }
  // A line when a replica settles (or on the first report); the rollout line shows the rest.
  const settled = phases.filter(isSettled).length;
  if (state.lastPhases === '' || settled !== state.lastSettledCount) {
    opts.out.line(`agent ${opts.clusterId}: ${describePhases(phases)} (report #${state.sequence})`);
  }
  state.lastPhases = phases.join();
  state.lastSettledCount = settled;
  state.lastError = '';
  state.settled = phases.every(isSettled);
}

function noteFailure (state: AgentState, err: unknown): void {
  if (err instanceof ProblemError && err.code === 'stale-rollout-report') {
    state.superseded = err.message;
    return;
  }
  const message = (err as Error).message;
  // A failing server is printed once, not on every retry.
  if (message !== state.lastError) state.opts.out.line(`agent ${state.opts.clusterId}: report #${state.sequence} failed, retrying: ${message}`);
  state.lastError = message;
}

function reportBody (state: AgentState, phases: Phase[]): ReportBody {
  const { opts } = state;
  const deployments: IDeployment[] = [];
  state.replicas.forEach((script, i) => {
    const phase = phases[i];
    if (phase !== undefined && phase !== 'absent') {
      deployments.push(deploymentOf({ plan: opts.plan, serviceId: opts.serviceId, script, phase, rogueDigest: opts.rogueDigest, startedAt: state.startedAt }));
    }
  });
  return {
    serviceId: opts.serviceId,
    deployments,
    reporterNodeNames: opts.nodeNames,
    immutableReport: {
      rolloutId: opts.plan.rolloutId,
      rolloutGeneration: opts.plan.rolloutGeneration,
      reporterSessionId: state.session,
      reportSequence: state.sequence,
      reporterCapabilities: { immutableImageDeploymentVersion: 1 },
      reporterNodeIds: opts.nodeNames.map(nodeIdOf),
      reporterNodeNames: opts.nodeNames,
    },
    reportedAt: Date.now(),
  };
}

function describePhases (phases: Phase[]): string {
  const count = (p: Phase): number => phases.filter((x) => x === p).length;
  const parts = [`${count('running')} running`, `${count('starting')} starting`];
  if (count('failed') > 0) parts.push(`${count('failed')} failed`);
  if (count('absent') > 0) parts.push(`${count('absent')} not scheduled yet`);
  return parts.join(', ');
}
