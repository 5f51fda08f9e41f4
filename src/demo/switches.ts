import type { DemoOptions } from './args.js';
import { usageError } from './errors.js';
import { allNodeNames, resolveNodeName, type FleetSpec } from './fleet.js';
import type { Fault } from './replicas.js';

/** The failure switches, by full node name. */
export interface Switches {
  faults: ReadonlyMap<string, Fault>;
  silent: ReadonlySet<string>;
}

/** What the rollout should end as: `deploying` means "still in progress at --timeout" (a silent node). */
export type Expectation = 'succeeded' | 'mismatched' | 'failed' | 'deploying';

export const noSwitches: Switches = { faults: new Map(), silent: new Set() };

/** The switched nodes as full names; a usage error for an unknown node or a node switched twice. */
export function resolveSwitches (spec: FleetSpec, options: Pick<DemoOptions, 'mismatch' | 'fail' | 'silent'>): Switches {
  const faults = new Map<string, Fault>();
  const silent = new Set<string>();
  const seen = new Map<string, string>();
  const take = (flag: string, input: string): string => {
    const node = resolveNodeName(spec, input);
    if (!node) {
      const short = allNodeNames(spec).map((n) => n.slice(spec.name.length + 1));
      throw usageError(`--${flag}: no node '${input}' in this demo (nodes: ${short.join(', ')}, or ${spec.name}-${short[0] ?? ''} …)`);
    }
    const earlier = seen.get(node);
    if (earlier) throw usageError(`node ${node} is switched twice (--${earlier} and --${flag}): one switch per node`);
    seen.set(node, flag);
    return node;
  };
  for (const input of options.mismatch) faults.set(take('mismatch', input), 'mismatch');
  for (const input of options.fail) faults.set(take('fail', input), 'fail');
  for (const input of options.silent) silent.add(take('silent', input));
  return { faults, silent };
}

/** The server's precedence: a mismatch beats a failure, which beats "still deploying". */
export function expectationOf (switches: Switches): Expectation {
  const faults = [...switches.faults.values()];
  if (faults.includes('mismatch')) return 'mismatched';
  if (faults.includes('fail')) return 'failed';
  return switches.silent.size > 0 ? 'deploying' : 'succeeded';
}
