import type { IImmutableImageDeploymentPlan } from '../contracts/index.js';
import { ExitCode } from './errors.js';
import { seconds } from './output.js';
import { isTerminal, type BlockingReason, type WatchResult } from './rollout.js';
import type { Expectation, Switches } from './switches.js';

/**
 * Did the rollout end as the switches predict? Besides the status, every switched node must
 * be named in the rollout view's blocking reasons the way its switch implies — a mismatched
 * replica as unverified, a failed one as replica-failed, a silent node as node-not-reported —
 * so exit 0 means the server saw each failure where it was injected.
 */

export interface Verdict {
  exitCode: ExitCode;
  message: string;
}

export interface JudgeOptions {
  plan: IImmutableImageDeploymentPlan;
  result: WatchResult;
  switches: Switches;
  expectation: Expectation;
  timeoutMs: number;
}

/** The blocking entry a switched node must show, by switch. */
function expectedBlock (switches: Switches, node: string): (b: BlockingReason) => boolean {
  if (switches.silent.has(node)) return (b) => b.kind === 'node-not-reported';
  if (switches.faults.get(node) === 'fail') return (b) => b.kind === 'replica-unhealthy' && b.reason === 'replica-failed';
  return (b) => b.kind === 'replica-unverified' && b.reason !== 'runtime-attestation-missing';
}

function switchedNodes (switches: Switches): string[] {
  return [...switches.faults.keys(), ...switches.silent].sort();
}

/** The switched nodes the blocking reasons do not name as predicted. */
function unexplained (opts: JudgeOptions): string[] {
  const blocking = opts.result.view?.blocking ?? [];
  return switchedNodes(opts.switches).filter((node) => !blocking.some((b) => b.nodeName === node && expectedBlock(opts.switches, node)(b)));
}

/** The blocking details worth a line: those of switched nodes, else the first few. */
function blockingDetail (opts: JudgeOptions): string {
  const blocking = opts.result.view?.blocking ?? [];
  const nodes = new Set(switchedNodes(opts.switches));
  const mine = blocking.filter((b) => b.nodeName !== undefined && nodes.has(b.nodeName) && expectedBlock(opts.switches, b.nodeName)(b));
  const shown = (mine.length > 0 ? mine : blocking).slice(0, 3).map((b) => b.detail);
  return shown.length > 0 ? `: ${shown.join('; ')}` : '';
}

export function judge (opts: JudgeOptions): Verdict {
  const { result, plan } = opts;
  const id = plan.rolloutId;
  const status = result.view?.status?.rolloutId === id ? result.view.status : undefined;
  if (result.end === 'superseded') {
    const by = result.supersededBy ?? 'another rollout';
    return { exitCode: ExitCode.unexpected, message: `rollout ${id} was superseded by ${by}: someone else promoted or rolled back` };
  }
  if (result.end === 'interrupted') return { exitCode: ExitCode.ok, message: `stopped before rollout ${id} finished (${status?.status ?? 'no status yet'})` };
  if (result.end === 'timeout' && result.unreachable) {
    const seen = status?.status ?? 'without a status';
    return { exitCode: ExitCode.unreachable, message: `the control plane stopped answering; rollout ${id} was last seen ${seen}` };
  }
  const now = status?.status ?? 'without status';
  const asPredicted = unexplained(opts).length === 0 && (
    result.end === 'timeout'
      ? opts.expectation === 'deploying' && !isTerminal(now)
      : now === opts.expectation || (opts.expectation === 'deploying' && now === 'failed' && status?.mismatchReason === 'required-replica-missing')
  );
  const detail = blockingDetail(opts);
  if (!asPredicted) {
    const when = result.end === 'timeout' ? `still ${now} after ${seconds(opts.timeoutMs)}` : `ended ${now}`;
    return { exitCode: ExitCode.unexpected, message: `rollout ${id} ${when}, expected ${opts.expectation}${detail}` };
  }
  if (result.end === 'timeout') {
    const later = ' (the server fails it after its progress deadline)';
    return { exitCode: ExitCode.ok, message: `rollout ${id} still ${now} after ${seconds(opts.timeoutMs)}, as predicted${detail}${later}` };
  }
  return { exitCode: ExitCode.ok, message: `rollout ${id} ${now}, as predicted${detail}` };
}
