import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import { startAgent, type Agent } from './agent.js';
import { UnreachableError, type Api } from './api.js';
import type { DemoOptions, ReleaseLabel } from './args.js';
import { DemoError, ExitCode } from './errors.js';
import { seconds } from './output.js';
import { watchRollout, type WatchOptions, type WatchResult } from './rollout.js';
import { ensureService, promote, pushReleases, registerClusters, type SetupContext } from './setup.js';
import { expectationOf, noSwitches, type Expectation, type Switches } from './switches.js';
import { judge, type Verdict } from './verdict.js';

/**
 * The demo from start to end: set up (idempotently, so a re-run reuses what exists), then
 * one rollout per release to promote — `--release`, then `--then` if given, the switches
 * applying to the last one — each followed by agents until its verdict, then linger or follow.
 */

export interface RunContext extends SetupContext {
  options: DemoOptions;
  switches: Switches;
  /** Aborted by SIGINT / SIGTERM. */
  signal: AbortSignal;
  /** DATA_DIR for the printed token hint, when not the default. */
  dataDir?: string;
}

export interface RolloutRun {
  release: ReleaseLabel;
  plan: IImmutableImageDeploymentPlan;
  expectation: Expectation;
  result: WatchResult;
  verdict: Verdict;
}

/** The finished demo: the JSON summary of `--json`, and the exit code. */
export interface DemoSummary extends Record<string, unknown> {
  ok: boolean;
  exitCode: ExitCode;
}

export async function runDemo (ctx: RunContext): Promise<DemoSummary> {
  await checkReachable(ctx.api);
  ctx.out.line(`demo ${ctx.spec.name} against ${ctx.api.baseUrl}`);
  await registerClusters(ctx);
  const serviceId = await ensureService(ctx);
  await pushReleases(ctx, serviceId);
  const labels = [ctx.options.release, ...(ctx.options.then ? [ctx.options.then] : [])];
  const runs: RolloutRun[] = [];
  for (const [i, release] of labels.entries()) {
    const last = i === labels.length - 1;
    const run = await runRollout(ctx, { serviceId, release, switches: last ? ctx.switches : noSwitches, first: i === 0, last });
    runs.push(run);
    if (run.verdict.exitCode !== ExitCode.ok || run.result.end === 'interrupted') break;
  }
  return summaryOf(ctx, serviceId, runs);
}

async function checkReachable (api: Api): Promise<void> {
  try {
    await api.call({ method: 'GET', path: '/healthz', as: { role: 'admin' }, retries: 1 });
  } catch (err) {
    if (err instanceof UnreachableError) throw new DemoError(ExitCode.unreachable, `${err.message}: start the server with \`npm start\` (or set CLOUDLY_URL)`);
    throw err;
  }
}

interface RolloutStep {
  serviceId: string;
  release: ReleaseLabel;
  switches: Switches;
  first: boolean;
  last: boolean;
}

async function runRollout (ctx: RunContext, step: RolloutStep): Promise<RolloutRun> {
  // Ctrl-C during the set-up: stop before issuing a rollout nobody will report.
  if (ctx.signal.aborted) throw new DemoError(ExitCode.ok, `stopped before promoting ${step.release}`);
  const plan = await promote(ctx, step.serviceId, step.release);
  if (step.first) printWatchHints(ctx, step.serviceId);
  const agents = startAgents(ctx, plan, step.serviceId, step.switches);
  const expectation = expectationOf(step.switches);
  const watch: WatchOptions = {
    api: ctx.api,
    serviceId: step.serviceId,
    plan,
    agents,
    pollMs: pollIntervalOf(ctx.options),
    timeoutMs: ctx.options.timeoutMs,
    untilTerminal: true,
    signal: ctx.signal,
    out: ctx.out,
  };
  try {
    const result = await watchRollout(watch);
    const verdict = judge({ plan, result, switches: step.switches, expectation, timeoutMs: ctx.options.timeoutMs });
    ctx.out.line(verdict.message);
    if (step.last && keepsReporting(ctx.options, result)) await keepReporting(ctx, { ...watch, lastLine: result.lastLine });
    return { release: step.release, plan, expectation, result, verdict };
  } finally {
    await Promise.all(agents.map(async (a) => await a.stop()));
    ctx.out.line(`agents of rollout ${plan.rolloutId} stopped`);
  }
}

/** Linger (or follow until Ctrl-C) with the agents reporting and the status printed on change. */
async function keepReporting (ctx: RunContext, watch: WatchOptions): Promise<void> {
  const { follow, lingerMs } = ctx.options;
  ctx.out.line(follow ? 'agents keep reporting until Ctrl-C' : `agents keep reporting for ${seconds(lingerMs)} so that viewers see the final state`);
  const after = await watchRollout({ ...watch, timeoutMs: follow ? undefined : lingerMs, untilTerminal: false });
  if (after.end === 'superseded') ctx.out.line(`rollout ${watch.plan.rolloutId} was superseded by ${after.supersededBy ?? 'another rollout'}`);
}

/** After the verdict: --follow keeps going until Ctrl-C, otherwise --linger after a terminal status. */
function keepsReporting (options: DemoOptions, result: WatchResult): boolean {
  if (result.end === 'interrupted' || result.end === 'superseded') return false;
  return options.follow || (result.end === 'terminal' && options.lingerMs > 0);
}

/** Status reads: twice per report interval, within [100 ms, 1 s]. */
const pollIntervalOf = (options: DemoOptions): number => Math.min(1_000, Math.max(100, Math.round(options.intervalMs / 2)));

function startAgents (ctx: RunContext, plan: IImmutableImageDeploymentPlan, serviceId: string, switches: Switches): Agent[] {
  return ctx.spec.clusters.flatMap((cluster) => {
    const nodeNames = cluster.nodeNames.filter((n) => !switches.silent.has(n));
    const silent = cluster.nodeNames.filter((n) => switches.silent.has(n));
    const silence = silent.length > 0 ? ` (${silent.join(', ')} silent)` : '';
    if (nodeNames.length === 0) {
      ctx.out.line(`agent ${cluster.id}: every node is silent, no agent runs`);
      return [];
    }
    ctx.out.line(`agent ${cluster.id} reports ${nodeNames.join(', ')} every ${seconds(ctx.options.intervalMs)} and on change${silence}`);
    const { api, out, spec: { rogueDigest }, options: { intervalMs } } = ctx;
    return [startAgent({ api, plan, serviceId, clusterId: cluster.id, nodeNames, faults: switches.faults, rogueDigest, intervalMs, out })];
  });
}

function printWatchHints (ctx: RunContext, serviceId: string): void {
  const url = ctx.api.baseUrl;
  const token = `${ctx.dataDir ? `DATA_DIR=${ctx.dataDir} ` : ''}npm run -s token -- --role user`;
  ctx.out.line(`watch it in the console: ${url}/console`);
  ctx.out.line(`or in another terminal:  export CLOUDLY_URL=${url} CLOUDLY_TOKEN=$(${token})`);
  ctx.out.line(`                         npx cloudly-release wait --service ${serviceId}`);
}

function summaryOf (ctx: RunContext, serviceId: string, runs: RolloutRun[]): DemoSummary {
  const last = runs[runs.length - 1];
  const exitCode = runs.find((r) => r.verdict.exitCode !== ExitCode.ok)?.verdict.exitCode ?? ExitCode.ok;
  const view = last?.result.view;
  const statusOf = (run: RolloutRun) => (run.result.view?.status?.rolloutId === run.plan.rolloutId ? run.result.view.status : undefined);
  return {
    ok: exitCode === ExitCode.ok,
    exitCode,
    name: ctx.spec.name,
    serviceId,
    ...(last ? { release: last.release, releaseId: last.plan.releaseId, rolloutId: last.plan.rolloutId, generation: last.plan.rolloutGeneration } : {}),
    expected: last?.expectation,
    status: last ? statusOf(last)?.status : undefined,
    mismatchReason: last ? statusOf(last)?.mismatchReason : undefined,
    blocking: view?.blocking ?? [],
    message: last?.verdict.message,
    rollouts: runs.map((r) => ({
      release: r.release, rolloutId: r.plan.rolloutId, generation: r.plan.rolloutGeneration, status: statusOf(r)?.status, end: r.result.end,
    })),
  };
}
