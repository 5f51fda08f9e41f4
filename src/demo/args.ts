import { parseArgs, type ParseArgsConfig } from 'node:util';
import { usageError } from './errors.js';

export const releaseLabels = ['v1', 'v2'] as const;
export type ReleaseLabel = typeof releaseLabels[number];

export interface DemoOptions {
  /** Prefix of the service, cluster and node names, so that several demos can share a server. */
  name: string;
  /** The release the (first) rollout promotes. */
  release: ReleaseLabel;
  /** A release promoted after the first rollout succeeded; the switches then apply to this second rollout. */
  then?: ReleaseLabel;
  /** Node names as typed (`b2` or `demo-shop-b2`); resolved against the fleet later. */
  mismatch: string[];
  fail: string[];
  silent: string[];
  intervalMs: number;
  /** The service's rolloutPolicy.stabilityWindowSeconds: how long a replica must run (verified) before it counts. */
  stabilityWindowSeconds: number;
  lingerMs: number;
  timeoutMs: number;
  follow: boolean;
  json: boolean;
  help: boolean;
}

export const usageText = `usage: npm run demo -- [options]

Registers 2 clusters x 3 nodes, creates a service placed on both, pushes releases v1 and v2,
promotes one, and runs one simulated Coreflow agent per cluster that reports honest runtime
evidence until the rollout ends (docs/demo.md). Needs a running server (npm start).

  --name NAME        prefix of the service, cluster and node names (default demo-shop)
  --release v1|v2    the release to promote (default v1)
  --then v1|v2       after that rollout succeeded, promote this one too (switches apply to it)
  --mismatch NODE    that node's replica runs another digest  -> mismatched
  --fail NODE        a replica on that node fails             -> failed
  --silent NODE      that node never reports                  -> stays deploying
                     (NODE: a1..a3, b1..b3, or the full name such as demo-shop-b2; repeatable)
  --interval DUR     how often agents re-report without change (default 3s)
  --stability-window DUR
                     the service's stability window: a replica counts once it has run
                     verified this long (whole seconds, default 5s; the server's is 10s)
  --linger DUR       keep reporting this long after the rollout ended (default 10s)
  --timeout DUR      give up waiting for the rollout after this long (default 60s)
  --follow           keep the agents running until Ctrl-C
  --json             one JSON summary on stdout (progress lines go to stderr)

environment: CLOUDLY_URL (default http://127.0.0.1:3000); AUTH_JWT_SECRET, else the development
secret under DATA_DIR (default .data) that npm start creates.
exit codes: 0 as predicted, 1 otherwise, 3 usage or configuration, 4 server unreachable.`;

const DEMO_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const MAX_NAME_LENGTH = 40;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000 };
/** rolloutPolicy.stabilityWindowSeconds' range (src/contracts/rolloutPolicy.ts). */
const MAX_STABILITY_WINDOW_S = 24 * 3600;

/** `200ms`, `3s`, `1.5m`, or a bare number of seconds; undefined when unreadable. */
export function parseDuration (text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1_000));
}

function durationOption (name: string, value: string, minMs: number): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs) throw usageError(`--${name} must be a duration of at least ${minMs} ms such as 500ms, 3s or 1m, got '${value}'`);
  return ms;
}

/** Whole seconds from 0 to a day: the policy field is an integer number of seconds. */
function stabilityWindowOption (value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms % 1_000 !== 0 || ms > MAX_STABILITY_WINDOW_S * 1_000) {
    throw usageError(`--stability-window must be whole seconds from 0 to ${MAX_STABILITY_WINDOW_S} such as 0, 5s or 1m, got '${value}'`);
  }
  return ms / 1_000;
}

function releaseOption (name: string, value: string | undefined): ReleaseLabel | undefined {
  if (value === undefined) return undefined;
  const label = releaseLabels.find((l) => l === value);
  if (!label) throw usageError(`--${name} must be v1 or v2, got '${value}'`);
  return label;
}

const options = {
  name: { type: 'string', default: 'demo-shop' },
  release: { type: 'string', default: 'v1' },
  then: { type: 'string' },
  mismatch: { type: 'string', multiple: true, default: [] as string[] },
  fail: { type: 'string', multiple: true, default: [] as string[] },
  silent: { type: 'string', multiple: true, default: [] as string[] },
  interval: { type: 'string', default: '3s' },
  'stability-window': { type: 'string', default: '5s' },
  linger: { type: 'string', default: '10s' },
  timeout: { type: 'string', default: '60s' },
  follow: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

function readValues (argv: string[]) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw usageError((err as Error).message);
  }
}

/** The command line as options; throws a usage error (exit 3) naming the bad option. */
export function parseDemoArgs (argv: string[]): DemoOptions {
  const values = readValues(argv);
  if (!DEMO_NAME.test(values.name) || values.name.length > MAX_NAME_LENGTH) {
    throw usageError(`--name must be lower-case letters, digits and single dashes (at most ${MAX_NAME_LENGTH}), got '${values.name}'`);
  }
  const release = releaseOption('release', values.release) ?? 'v1';
  const then = releaseOption('then', values.then);
  if (then === release) throw usageError(`--then must name the other release than --release (${release})`);
  return {
    name: values.name,
    release,
    ...(then ? { then } : {}),
    mismatch: values.mismatch,
    fail: values.fail,
    silent: values.silent,
    intervalMs: durationOption('interval', values.interval, 50),
    stabilityWindowSeconds: stabilityWindowOption(values['stability-window']),
    lingerMs: durationOption('linger', values.linger, 0),
    timeoutMs: durationOption('timeout', values.timeout, 100),
    follow: values.follow,
    json: values.json,
    help: values.help,
  };
}
