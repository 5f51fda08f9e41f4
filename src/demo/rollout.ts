import { setTimeout as sleep } from 'node:timers/promises';
import type { IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../contracts/index.js';
import type { Agent } from './agent.js';
import { UnreachableError, type Api } from './api.js';
import type { Output } from './output.js';

/**
 * Following a rollout through `GET /v1/services/:id/rollout`: one line per change of its
 * status or counts, until it is terminal AND every agent has settled (all its replicas in
 * their final phase, reported) AND the server's counts have settled (every running replica
 * has run for the stability window), so that a status seen while replicas were still
 * starting, or not yet stable, is never taken for the outcome.
 */

/** What the demo reads of the rollout view (the server's schema is in src/http/rolloutRoutes.ts). */
export interface BlockingReason {
  kind: string;
  reason: string;
  nodeName?: string;
  deploymentId?: string;
  detail: string;
}

/** One replica as the server judged it (the view's `reporters[].replicas[]`). */
export interface ReplicaView {
  deploymentStatus: string;
  verification: string;
  counted: boolean;
  /** Running for the stability window: only then it counts as healthy. */
  runningStable?: boolean;
  /** Running verified for the stability window: only then it counts as verified. */
  stable?: boolean;
}

export interface RolloutView {
  serviceId: string;
  plan?: IImmutableImageDeploymentPlan;
  status?: IImageRolloutStatus;
  blocking: BlockingReason[];
  reporters?: Array<{ rolloutId?: string, replicas?: ReplicaView[] }>;
}

export type WatchEnd = 'terminal' | 'timeout' | 'superseded' | 'interrupted';

export interface WatchResult {
  end: WatchEnd;
  /** The last view read (undefined when none could be read). */
  view: RolloutView | undefined;
  /** The last read failed: the server went away. */
  unreachable: boolean;
  /** Who replaced the rollout, when superseded. */
  supersededBy?: string;
  /** The last status line printed (a later watch of the same rollout continues from it). */
  lastLine: string;
}

export interface WatchOptions {
  api: Api;
  serviceId: string;
  plan: IImmutableImageDeploymentPlan;
  agents: Agent[];
  pollMs: number;
  /** Undefined: until interrupted. */
  timeoutMs: number | undefined;
  /** End as soon as the rollout is terminal and every agent has settled (else only on timeout or interrupt). */
  untilTerminal: boolean;
  signal: AbortSignal;
  out: Output;
  /** The status line printed last, not to repeat it. */
  lastLine?: string;
}

const TERMINAL = new Set(['succeeded', 'failed', 'mismatched']);

export const isTerminal = (status: string | undefined): boolean => status !== undefined && TERMINAL.has(status);

export async function readRollout (api: Api, serviceId: string): Promise<RolloutView> {
  return await api.call<RolloutView>({ method: 'GET', path: `/v1/services/${encodeURIComponent(serviceId)}/rollout`, as: { role: 'admin' }, retries: 1 });
}

/** Counted running replicas of the rollout that have not run (verified) for the stability window yet: they do not count yet. */
export function notYetStable (view: RolloutView | undefined, rolloutId: string): number {
  const replicas = (view?.reporters ?? []).filter((r) => r.rolloutId === undefined || r.rolloutId === rolloutId).flatMap((r) => r.replicas ?? []);
  const waiting = (r: ReplicaView): boolean => r.runningStable !== true || (r.verification === 'verified' && r.stable !== true);
  return replicas.filter((r) => r.counted && r.deploymentStatus === 'running' && waiting(r)).length;
}

/** `rollout ro_… deploying: observed 4/12, healthy 2/12, verified 2/12, not yet stable 2` (+ failed, reason). */
export function describeStatus (status: IImageRolloutStatus, unstable = 0): string {
  const of = (n: number): string => `${n}/${status.requiredReplicaCount}`;
  const counts = [`observed ${of(status.observedReplicaCount)}`, `healthy ${of(status.healthyReplicaCount)}`, `verified ${of(status.verifiedReplicaCount)}`];
  if (unstable > 0) counts.push(`not yet stable ${unstable}`);
  if (status.failedReplicaCount > 0) counts.push(`failed ${status.failedReplicaCount}`);
  const reason = status.mismatchReason ? ` (${status.mismatchReason})` : '';
  return `rollout ${status.rolloutId} ${status.status}: ${counts.join(', ')}${reason}`;
}

export async function watchRollout (opts: WatchOptions): Promise<WatchResult> {
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let view: RolloutView | undefined;
  let lastLine = opts.lastLine ?? '';
  for (;;) {
    let unreachable = false;
    try {
      view = await readRollout(opts.api, opts.serviceId);
    } catch (err) {
      if (!(err instanceof UnreachableError)) throw err;
      unreachable = true;
    }
    const superseded = supersededBy(opts, view);
    if (superseded !== undefined) return { end: 'superseded', view, unreachable, supersededBy: superseded, lastLine };
    const status = view?.status?.rolloutId === opts.plan.rolloutId ? view.status : undefined;
    const unstable = notYetStable(view, opts.plan.rolloutId);
    const line = status && !unreachable ? describeStatus(status, unstable) : '';
    if (line !== '' && line !== lastLine) opts.out.line(line);
    lastLine = line || lastLine;
    if (opts.untilTerminal && isTerminal(status?.status) && opts.agents.every((a) => a.settled) && unstable === 0) {
      return { end: 'terminal', view, unreachable, lastLine };
    }
    if (Date.now() >= deadline) return { end: 'timeout', view, unreachable, lastLine };
    try {
      await sleep(Math.min(opts.pollMs, deadline - Date.now()), undefined, { signal: opts.signal });
    } catch {
      return { end: 'interrupted', view, unreachable, lastLine };
    }
  }
}

/** Another rollout replaced ours: the view's plan says so, or an agent's report was refused as stale. */
function supersededBy (opts: WatchOptions, view: RolloutView | undefined): string | undefined {
  const current = view?.plan?.rolloutId;
  if (current !== undefined && current !== opts.plan.rolloutId) return current;
  const refused = opts.agents.find((a) => a.superseded !== undefined);
  return refused ? 'a newer rollout' : undefined;
}
