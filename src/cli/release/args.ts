import { parseArgs } from 'node:util';
import { configError, usageError } from './errors.js';

export const commands = ['list', 'promote', 'rollback', 'status', 'wait'] as const;
export type Command = typeof commands[number];

const isCommand = (s: string): s is Command => (commands as readonly string[]).includes(s);

/** Every option of every command; `commandsOf` says which command takes which. */
const options = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  retries: { type: 'string' },
  'request-timeout': { type: 'string' },
  service: { type: 'string', short: 's' },
  release: { type: 'string', short: 'r' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  'expect-generation': { type: 'string' },
  'expect-rollout-id': { type: 'string' },
  'idempotency-key': { type: 'string' },
  reason: { type: 'string' },
  wait: { type: 'boolean' },
  'rollout-id': { type: 'string' },
  timeout: { type: 'string' },
  'poll-interval': { type: 'string' },
  'no-sse': { type: 'boolean' },
} as const;

type OptionName = keyof typeof options;

const common: OptionName[] = ['url', 'token', 'json', 'help', 'retries', 'request-timeout', 'service'];
const following: OptionName[] = ['timeout', 'poll-interval', 'no-sse'];
const issuing: OptionName[] = ['release', 'expect-generation', 'expect-rollout-id', 'idempotency-key', 'reason', 'wait', ...following];

const commandsOf: Record<Command, ReadonlySet<OptionName>> = {
  list: new Set([...common, 'limit', 'cursor']),
  promote: new Set([...common, ...issuing]),
  rollback: new Set([...common, ...issuing]),
  status: new Set(common),
  wait: new Set([...common, 'rollout-id', ...following]),
};

export interface Connection {
  /** Base URL without a trailing slash (may carry a path prefix). */
  baseUrl: string;
  token: string;
  retries: number;
  requestTimeoutMs: number;
}

export interface FollowSettings {
  timeoutMs: number;
  pollIntervalMs: number;
  sse: boolean;
}

export type Invocation =
  | { kind: 'help', text: string }
  | { kind: 'run', command: Command, json: boolean, connection: Connection, args: CommandArgs };

export type CommandArgs =
  | { command: 'list', serviceId: string, limit: number, cursor?: string }
  | { command: 'status', serviceId: string }
  | { command: 'wait', serviceId: string, rolloutId?: string, follow: FollowSettings }
  | {
    command: 'promote' | 'rollback',
    serviceId: string,
    releaseId: string,
    expectGeneration?: number,
    expectRolloutId?: string,
    idempotencyKey?: string,
    reason?: string,
    wait?: FollowSettings,
  };

export const defaults = {
  retries: 6,
  requestTimeoutMs: 30_000,
  timeoutMs: 10 * 60_000,
  pollIntervalMs: 2_000,
  listLimit: 20,
} as const;

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * A duration: `90s`, `10m`, `1h30m`, `500ms`; a bare number is seconds.
 * Returns milliseconds, or undefined when the text is not a duration.
 */
export function parseDuration (text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1_000);
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(t)) return undefined;
  let total = 0;
  for (const [, n, unit] of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(n) * (UNITS[unit ?? 's'] ?? 0);
  return Math.round(total);
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
/** The server keeps at most 1024 characters of reason. */
export const MAX_REASON_LENGTH = 1024;

export const usageText = `usage: cloudly-release <command> [options]

Promote, roll back and follow immutable-digest rollouts of the Cloudly control plane.

commands
  list      --service ID [--limit N] [--cursor C]   releases, newest observation first
  status    --service ID                           current plan, status, reporters, what blocks success
  promote   --service ID --release ID [--wait]     issue a promotion (compare-and-swap, idempotent, retried)
  rollback  --service ID --release ID [--wait]     roll back to a previously accepted release
  wait      --service ID [--rollout-id ID]         follow a rollout until it succeeds, fails or times out

promote / rollback
  --expect-generation N      compare-and-swap on this generation (default: read the current one)
  --expect-rollout-id ID     ... and on this current rollout (rollback default: read the current one)
  --idempotency-key KEY      default: derived from the CI job attempt (see docs), else random
  --reason TEXT              kept in the rollout history
  --wait                     then follow the rollout this command created (exit codes as for wait)

wait (and --wait)
  --rollout-id ID            the rollout to wait for (default: the current one when wait starts)
  --timeout DURATION         give up after this long, exit 2 (default 10m; e.g. 90s, 10m, 1h)
  --poll-interval DURATION   polling period when the event stream is unavailable (default 2s)
  --no-sse                   poll only, never open the event stream

every command
  --url URL                  control plane base URL (default: $CLOUDLY_URL)
  --token TOKEN              bearer token (default: $CLOUDLY_TOKEN)
  --json                     one JSON document on stdout; logs and progress go to stderr
  --retries N                retries on network errors, 5xx and in-progress answers (default ${defaults.retries})
  --request-timeout DURATION per-request timeout (default 30s)
  -h, --help                 this text

exit codes: 0 ok · 1 rollout failed/mismatched/superseded or request refused (4xx) · 2 timeout
            3 usage or configuration error · 4 unreachable after retries`;

/** The first sentence of a parseArgs error, so a usage error stays one line. */
const firstSentence = (message: string): string => (message.split(/\.\s/)[0] ?? message).replace(/\s+/g, ' ').trim();

function nonEmpty (value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw usageError(`--${name} must not be empty`);
  return value;
}

function intOption (value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw usageError(`--${name} must be an integer from ${min} to ${max}, got '${value}'`);
  }
  return Number(value);
}

function durationOption (value: string | undefined, name: string, minMs: number): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs) throw usageError(`--${name} must be a duration of at least ${minMs} ms such as 90s, 10m or 1h, got '${value}'`);
  return ms;
}

function idOption (value: string | undefined, name: string): string | undefined {
  const v = nonEmpty(value, name);
  if (v !== undefined && (v.length > 256 || /[\s/]/.test(v))) throw usageError(`--${name} must be an id without spaces or slashes, got '${v}'`);
  return v;
}

function baseUrlOf (value: string | undefined): string {
  if (value === undefined || value === '') throw configError('CLOUDLY_URL is not set: export CLOUDLY_URL=https://cloudly.example.com (or pass --url)');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw configError(`CLOUDLY_URL / --url is not a URL: '${value}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw configError(`CLOUDLY_URL / --url must be http or https, got '${url.protocol}'`);
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw configError('CLOUDLY_URL / --url must be a plain base URL (no query, fragment or credentials; the token goes in CLOUDLY_TOKEN)');
  }
  return url.href.replace(/\/+$/, '');
}

/** Parses argv (without node and the script) and the environment. Throws CliError (exit 3) on bad input. */
export function parseInvocation (argv: string[], env: NodeJS.ProcessEnv): Invocation {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw usageError(firstSentence((err as Error).message));
  }
  const { values, positionals } = parsed;
  const [first, ...rest] = positionals;

  if (first === 'help') {
    if (rest[0] !== undefined && !isCommand(rest[0])) throw usageError(`unknown command '${rest[0]}'`);
    return { kind: 'help', text: usageText };
  }
  if (first === undefined) {
    if (values.help) return { kind: 'help', text: usageText };
    throw usageError(`missing command: one of ${commands.join(', ')}`);
  }
  if (!isCommand(first)) throw usageError(`unknown command '${first}': one of ${commands.join(', ')}`);
  const command = first;
  if (values.help) return { kind: 'help', text: usageText };
  if (rest.length > 0) throw usageError(`unexpected argument '${rest[0]}' (ids are given with --service, --release, --rollout-id)`);
  for (const name of Object.keys(values) as OptionName[]) {
    if (!commandsOf[command].has(name)) throw usageError(`--${name} is not an option of '${command}'`);
  }

  const serviceId = idOption(values.service, 'service');
  if (serviceId === undefined) throw usageError(`'${command}' needs --service`);

  const connectionOf = (): Connection => {
    const token = values.token ?? env['CLOUDLY_TOKEN'];
    const connection: Connection = {
      baseUrl: baseUrlOf(values.url ?? env['CLOUDLY_URL']),
      token: token ?? '',
      retries: intOption(values.retries, 'retries', 0, 50) ?? defaults.retries,
      requestTimeoutMs: durationOption(values['request-timeout'], 'request-timeout', 100) ?? defaults.requestTimeoutMs,
    };
    if (token === undefined || token === '') throw configError('CLOUDLY_TOKEN is not set: export CLOUDLY_TOKEN=<a JWT with role api or admin> (or pass --token)');
    if (/[\s]/.test(token)) throw configError('CLOUDLY_TOKEN / --token contains whitespace: give the bare JWT, without "Bearer "');
    return connection;
  };
  const followOf = (): FollowSettings => ({
    timeoutMs: durationOption(values.timeout, 'timeout', 1) ?? defaults.timeoutMs,
    pollIntervalMs: durationOption(values['poll-interval'], 'poll-interval', 100) ?? defaults.pollIntervalMs,
    sse: values['no-sse'] !== true,
  });

  let args: CommandArgs;
  switch (command) {
    case 'list': {
      const cursor = nonEmpty(values.cursor, 'cursor');
      args = { command, serviceId, limit: intOption(values.limit, 'limit', 1, 500) ?? defaults.listLimit, ...(cursor ? { cursor } : {}) };
      break;
    }
    case 'status':
      args = { command, serviceId };
      break;
    case 'wait': {
      const rolloutId = idOption(values['rollout-id'], 'rollout-id');
      args = { command, serviceId, ...(rolloutId ? { rolloutId } : {}), follow: followOf() };
      break;
    }
    case 'promote':
    case 'rollback': {
      const releaseId = idOption(values.release, 'release');
      if (releaseId === undefined) throw usageError(`'${command}' needs --release`);
      if (values.wait !== true && (values.timeout !== undefined || values['poll-interval'] !== undefined || values['no-sse'] !== undefined)) {
        throw usageError('--timeout, --poll-interval and --no-sse go with --wait');
      }
      const key = values['idempotency-key'];
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) throw usageError('--idempotency-key must be 1-255 visible ASCII characters (no spaces)');
      const reason = nonEmpty(values.reason, 'reason');
      if (reason !== undefined && reason.length > MAX_REASON_LENGTH) throw usageError(`--reason must be at most ${MAX_REASON_LENGTH} characters`);
      const expectGeneration = intOption(values['expect-generation'], 'expect-generation', 0, Number.MAX_SAFE_INTEGER);
      const expectRolloutId = idOption(values['expect-rollout-id'], 'expect-rollout-id');
      args = {
        command,
        serviceId,
        releaseId,
        ...(expectGeneration !== undefined ? { expectGeneration } : {}),
        ...(expectRolloutId ? { expectRolloutId } : {}),
        ...(key ? { idempotencyKey: key } : {}),
        ...(reason ? { reason } : {}),
        ...(values.wait ? { wait: followOf() } : {}),
      };
      break;
    }
  }
  return { kind: 'run', command, json: values.json === true, connection: connectionOf(), args };
}
