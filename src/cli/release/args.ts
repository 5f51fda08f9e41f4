import { parseArgs } from 'node:util';
import { configError, usageError } from './errors.js';
import {
  commands, defaults, getResources, isCommand, options, optionsOf, outputFormats, shells,
  type Command, type GetResource, type OptionName, type OutputFormat, type Shell,
} from './options.js';
import { commandUsageText, usageText } from './usage.js';

export { defaults };
export type { Command };

export interface Connection {
  /** Base URL without a trailing slash (may carry a path prefix). */
  baseUrl: string;
  token: string;
  retries: number;
  requestTimeoutMs: number;
}

export interface FollowSettings {
  /** Undefined: no limit (status --watch without --timeout). */
  timeoutMs?: number;
  pollIntervalMs: number;
  sse: boolean;
}

export interface OutputSettings {
  format: OutputFormat;
  /** False with --no-color or NO_COLOR; colours are only ever used on a terminal anyway. */
  color: boolean;
}

interface Page { limit: number, cursor?: string }

interface Expectations {
  expectGeneration?: number;
  expectRolloutId?: string;
  idempotencyKey?: string;
  reason?: string;
  wait?: FollowSettings;
  /** promote only: the `Break-Glass-Grant` header. */
  breakGlassGrant?: string;
}

export type CommandArgs =
  | { command: 'list', serviceId: string } & Page
  | { command: 'history', serviceId: string } & Page
  | { command: 'services', name?: string } & Page
  | { command: 'status', serviceId: string, watch?: FollowSettings }
  | { command: 'wait', serviceId: string, rolloutId?: string, follow: FollowSettings }
  | { command: 'promote' | 'rollback', serviceId: string, releaseId: string } & Expectations
  | { command: 'abort', serviceId: string } & Expectations
  | { command: 'describe', serviceId: string }
  | { command: 'requests', serviceId: string }
  | { command: 'approve', serviceId: string, requestId: string }
  | { command: 'break-glass', action: 'request', serviceId: string, releaseId: string, reason: string }
  | { command: 'break-glass', action: 'approve' | 'show', serviceId: string, grantId: string }
  | { command: 'governance', action: 'show' }
  | { command: 'governance', action: 'stop-the-line', active: boolean, reason?: string }
  | { command: 'pipeline', serviceId: string, digest?: string }
  | { command: 'version' };

export type IssueArgs = Extract<CommandArgs, { command: 'promote' | 'rollback' | 'abort' }>;

/** `attestation verify`: what to verify (a file, or a rollout's attestations from the server), against which keys. */
export interface AttestationVerifyArgs {
  source: { kind: 'file', path: string } | { kind: 'server', serviceId: string, rolloutId: string };
  keyFiles: string[];
  serverKeys: boolean;
  /** `sha256:<hex>` */
  digest?: string;
  chainFiles: string[];
  /** Bare lower-case hex. */
  after?: string;
}

export type Invocation =
  | { kind: 'help', text: string }
  | { kind: 'version' }
  | { kind: 'completion', shell: Shell }
  | { kind: 'attestation', output: OutputSettings, connection?: Connection, args: AttestationVerifyArgs }
  | { kind: 'run', command: Exclude<Command, 'completion' | 'attestation'>, output: OutputSettings, connection: Connection, args: CommandArgs };

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

const SHA256_HEX = /^(?:sha256:)?([a-f0-9]{64})$/;

/** A sha256 digest or attestation digest given as an option: the bare lower-case hex, or undefined when not given. */
function digestOption (value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const hex = SHA256_HEX.exec(value.toLowerCase())?.[1];
  if (hex === undefined) throw usageError(`--${name} must be sha256:<64 hex digits>, got '${value}'`);
  return hex;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
/** The server keeps at most 1024 characters of reason. */
export const MAX_REASON_LENGTH = 1024;
/** The largest page the server serves: releases and the history 500, services 200 (its servicePageLimits). */
const MAX_PAGE = 500;
const MAX_SERVICES_PAGE = 200;

/** The first sentence of a parseArgs error, so a usage error stays one line. */
const firstSentence = (message: string): string => (message.split(/\.\s/)[0] ?? message).replace(/\s+/g, ' ').trim();

function nonEmpty (value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw usageError(`--${name} must not be empty`);
  return value;
}

function intOption (value: string | undefined, name: string, range: { min: number, max: number }): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < range.min || Number(value) > range.max) {
    throw usageError(`--${name} must be an integer from ${range.min} to ${range.max}, got '${value}'`);
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

const isJsonObject = (segment: string): boolean => {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
};

/**
 * Why `token` cannot be a JWT (undefined when it has the shape): three base64url segments, the
 * first two JSON objects. Only the shape is checked here — the signature and expiry are the
 * server's to judge (401, exit 1).
 */
export function jwtShapeProblem (token: string): string | undefined {
  if (/\s/.test(token)) return 'contains whitespace: give the bare JWT, without "Bearer "';
  const segments = token.split('.');
  if (segments.length !== 3 || !segments.every((s) => /^[A-Za-z0-9_-]*$/.test(s)) || segments[0] === '' || segments[1] === '') {
    return 'is not a JWT (three base64url segments separated by dots)';
  }
  if (!isJsonObject(segments[0] ?? '') || !isJsonObject(segments[1] ?? '')) return 'is not a JWT (its header and payload are not JSON)';
  return undefined;
}

function connectionOf (values: ParsedValues, env: NodeJS.ProcessEnv): Connection {
  const baseUrl = baseUrlOf(values.url ?? env['CLOUDLY_URL']);
  const retries = intOption(values.retries, 'retries', { min: 0, max: 50 }) ?? defaults.retries;
  const requestTimeoutMs = durationOption(values['request-timeout'], 'request-timeout', 100) ?? defaults.requestTimeoutMs;
  const token = values.token ?? env['CLOUDLY_TOKEN'];
  if (token === undefined || token === '') throw configError('CLOUDLY_TOKEN is not set: export CLOUDLY_TOKEN=<a JWT with role api or admin> (or pass --token)');
  const problem = jwtShapeProblem(token);
  if (problem !== undefined) throw configError(`CLOUDLY_TOKEN / --token ${problem}`);
  return { baseUrl, token, retries, requestTimeoutMs };
}

/** `-o` / `--output`, with `--json` as its alias. */
function outputOf (values: ParsedValues, env: NodeJS.ProcessEnv): OutputSettings {
  const given = values.output;
  if (given !== undefined && !(outputFormats as readonly string[]).includes(given)) {
    throw usageError(`-o / --output must be one of ${outputFormats.join(', ')}, got '${given}'`);
  }
  if (values.json === true && given !== undefined && given !== 'json') throw usageError(`--json is -o json: it cannot go with -o ${given}`);
  const format = values.json === true ? 'json' : (given as OutputFormat | undefined) ?? 'table';
  const noColor = env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '';
  return { format, color: values['no-color'] !== true && !noColor };
}

/** The follow settings of wait, --wait and status --watch. */
function followOf (values: ParsedValues, defaultTimeoutMs: number | undefined): FollowSettings {
  const timeoutMs = durationOption(values.timeout, 'timeout', 1) ?? defaultTimeoutMs;
  return {
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    pollIntervalMs: durationOption(values['poll-interval'], 'poll-interval', 100) ?? defaults.pollIntervalMs,
    sse: values['no-sse'] !== true,
  };
}

function pageOf (values: ParsedValues, max = MAX_PAGE): Page {
  const cursor = nonEmpty(values.cursor, 'cursor');
  return { limit: intOption(values.limit, 'limit', { min: 1, max }) ?? defaults.pageLimit, ...(cursor ? { cursor } : {}) };
}

/** The follow options go with --wait (promote, rollback, abort) and --watch (status). */
function requireFollowSwitch (values: ParsedValues, switchName: 'wait' | 'watch'): void {
  if (values[switchName] !== true && (values.timeout !== undefined || values['poll-interval'] !== undefined || values['no-sse'] !== undefined)) {
    throw usageError(`--timeout, --poll-interval and --no-sse go with --${switchName}`);
  }
}

function expectationsOf (values: ParsedValues): Expectations {
  requireFollowSwitch(values, 'wait');
  const key = values['idempotency-key'];
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) throw usageError('--idempotency-key must be 1-255 visible ASCII characters (no spaces)');
  const reason = nonEmpty(values.reason, 'reason');
  if (reason !== undefined && reason.length > MAX_REASON_LENGTH) throw usageError(`--reason must be at most ${MAX_REASON_LENGTH} characters`);
  const expectGeneration = intOption(values['expect-generation'], 'expect-generation', { min: 0, max: Number.MAX_SAFE_INTEGER });
  const expectRolloutId = idOption(values['expect-rollout-id'], 'expect-rollout-id');
  const breakGlassGrant = idOption(values['break-glass-grant'], 'break-glass-grant');
  return {
    ...(breakGlassGrant ? { breakGlassGrant } : {}),
    ...(expectGeneration !== undefined ? { expectGeneration } : {}),
    ...(expectRolloutId ? { expectRolloutId } : {}),
    ...(key ? { idempotencyKey: key } : {}),
    ...(reason ? { reason } : {}),
    ...(values.wait ? { wait: followOf(values, defaults.timeoutMs) } : {}),
  };
}

const requireService = (values: ParsedValues, command: string): string => {
  const serviceId = idOption(values.service, 'service');
  if (serviceId === undefined) throw usageError(`'${command}' needs --service`);
  return serviceId;
};

/** The arguments of one command, from its options (already checked to belong to it) and its words (get, describe). */
function commandArgsOf (command: Exclude<Command, 'completion' | 'attestation'>, values: ParsedValues, rest: string[]): CommandArgs {
  if (command === 'get') return getArgsOf(rest, values);
  if (command === 'describe') return describeArgsOf(rest);
  if (command === 'break-glass') return breakGlassArgsOf(rest, values);
  if (command === 'governance') return governanceArgsOf(rest, values);
  if (rest.length > 0) throw usageError(`unexpected argument '${rest[0]}' (ids are given with --service, --release, --rollout-id)`);
  switch (command) {
    case 'version':
      return { command };
    case 'list':
    case 'history':
      return { command, serviceId: requireService(values, command), ...pageOf(values) };
    case 'services': {
      const name = nonEmpty(values.name, 'name');
      return { command, ...(name ? { name } : {}), ...pageOf(values, MAX_SERVICES_PAGE) };
    }
    case 'status': {
      const serviceId = requireService(values, command);
      requireFollowSwitch(values, 'watch');
      return { command, serviceId, ...(values.watch ? { watch: followOf(values, undefined) } : {}) };
    }
    case 'wait': {
      const serviceId = requireService(values, command);
      const rolloutId = idOption(values['rollout-id'], 'rollout-id');
      return { command, serviceId, ...(rolloutId ? { rolloutId } : {}), follow: followOf(values, defaults.timeoutMs) };
    }
    case 'promote':
    case 'rollback': {
      const serviceId = requireService(values, command);
      const releaseId = idOption(values.release, 'release');
      if (releaseId === undefined) throw usageError(`'${command}' needs --release`);
      return { command, serviceId, releaseId, ...expectationsOf(values) };
    }
    case 'abort':
      return { command, serviceId: requireService(values, command), ...expectationsOf(values) };
    case 'requests':
      return { command, serviceId: requireService(values, command) };
    case 'approve': {
      const serviceId = requireService(values, command);
      const requestId = idOption(values.request, 'request');
      if (requestId === undefined) throw usageError("'approve' needs --request (the id a promote that needs approvals printed; see 'requests')");
      return { command, serviceId, requestId };
    }
    case 'pipeline': {
      const serviceId = requireService(values, command);
      const digest = digestOption(values.digest, 'digest');
      return { command, serviceId, ...(digest === undefined ? {} : { digest: `sha256:${digest}` }) };
    }
  }
}

/** A reason for governance writes: required, at most MAX_REASON_LENGTH characters. */
function reasonOf (values: ParsedValues, what: string): string {
  const reason = nonEmpty(values.reason, 'reason');
  if (reason === undefined) throw usageError(`${what} needs --reason TEXT (why: it is kept and shown)`);
  if (reason.length > MAX_REASON_LENGTH) throw usageError(`--reason must be at most ${MAX_REASON_LENGTH} characters`);
  return reason;
}

/** `break-glass request --release R --reason TEXT` | `break-glass approve|show --grant ID`, all with --service. */
function breakGlassArgsOf (rest: string[], values: ParsedValues): CommandArgs {
  const [action, extra] = rest;
  if (action !== 'request' && action !== 'approve' && action !== 'show') {
    throw usageError(action === undefined
      ? "'break-glass' needs a subcommand: request, approve or show"
      : `break-glass: unknown subcommand '${action}': request, approve or show`);
  }
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}'`);
  const serviceId = requireService(values, `break-glass ${action}`);
  if (action === 'request') {
    if (values.grant !== undefined) throw usageError("--grant goes with 'break-glass approve|show'");
    const releaseId = idOption(values.release, 'release');
    if (releaseId === undefined) throw usageError("'break-glass request' needs --release (the release the grant lets through)");
    return { command: 'break-glass', action, serviceId, releaseId, reason: reasonOf(values, "'break-glass request'") };
  }
  if (values.release !== undefined || values.reason !== undefined) throw usageError("--release and --reason go with 'break-glass request'");
  const grantId = idOption(values.grant, 'grant');
  if (grantId === undefined) throw usageError(`'break-glass ${action}' needs --grant (the id 'break-glass request' printed)`);
  return { command: 'break-glass', action, serviceId, grantId };
}

/** `governance` (read) | `governance stop-the-line on --reason TEXT` | `governance stop-the-line off [--reason TEXT]`. */
function governanceArgsOf (rest: string[], values: ParsedValues): CommandArgs {
  const [sub, state, extra] = rest;
  if (sub === undefined) {
    if (values.reason !== undefined) throw usageError("--reason goes with 'governance stop-the-line on|off'");
    return { command: 'governance', action: 'show' };
  }
  if (sub !== 'stop-the-line') throw usageError(`governance: unknown subcommand '${sub}': stop-the-line`);
  if (state !== 'on' && state !== 'off') {
    throw usageError(state === undefined ? "'governance stop-the-line' needs on or off" : `governance stop-the-line: '${state}' is not on or off`);
  }
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}'`);
  if (state === 'on') return { command: 'governance', action: 'stop-the-line', active: true, reason: reasonOf(values, "'governance stop-the-line on'") };
  const reason = values.reason === undefined ? undefined : reasonOf(values, "'governance stop-the-line off'");
  return { command: 'governance', action: 'stop-the-line', active: false, ...(reason === undefined ? {} : { reason }) };
}

const resourceOf = (word: string | undefined): GetResource | undefined =>
  (Object.keys(getResources) as GetResource[]).find((r) => (getResources[r] as readonly string[]).includes(word ?? ''));

/**
 * `get services|releases|rollouts`: kubectl's word for the three listings; the same reads as
 * `services`, `list` and `history`, with the same options (--service where the listing is a service's).
 */
function getArgsOf (rest: string[], values: ParsedValues): CommandArgs {
  const [word, extra] = rest;
  const resource = resourceOf(word);
  if (resource === undefined) {
    throw usageError(word === undefined
      ? "'get' needs what to list: services, releases or rollouts"
      : `get: unknown resource '${word}': services, releases or rollouts`);
  }
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}' (a service is given with --service, a name with --name)`);
  if (resource === 'services') {
    if (values.service !== undefined) throw usageError("'get services' takes --name, not --service");
    return commandArgsOf('services', values, []);
  }
  if (values.name !== undefined) throw usageError(`--name goes with 'get services'; 'get ${resource}' takes --service`);
  const command = resource === 'releases' ? 'list' : 'history';
  return { command, serviceId: requireService(values, `get ${resource}`), ...pageOf(values) };
}

/** `describe service ID|NAME`. */
function describeArgsOf (rest: string[]): CommandArgs {
  const [kind, id, extra] = rest;
  if (kind !== 'service') {
    throw usageError(kind === undefined ? "'describe' needs what to describe: service ID|NAME" : `describe: unknown resource '${kind}': service`);
  }
  if (id === undefined) throw usageError("'describe service' needs the service's id or name");
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}'`);
  return { command: 'describe', serviceId: idOption(id, 'service') ?? id };
}

/** -o wide and -o name are for listings: one line per item is what they change. */
const listingCommands: ReadonlyArray<CommandArgs['command']> = ['list', 'history', 'services', 'requests'];

function parse (argv: string[]) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw usageError(firstSentence((err as Error).message));
  }
}

type ParsedValues = ReturnType<typeof parse>['values'];

function completionOf (rest: string[]): Invocation {
  const [shell, extra] = rest;
  if (shell === undefined) throw usageError(`'completion' needs a shell: ${shells.join(' or ')}`);
  if (!(shells as readonly string[]).includes(shell)) throw usageError(`completion: unknown shell '${shell}': one of ${shells.join(', ')}`);
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}'`);
  return { kind: 'completion', shell: shell as Shell };
}

/**
 * `attestation verify`: a file, or a service's rollout to fetch; keys from files and/or the
 * server. The server (CLOUDLY_URL, CLOUDLY_TOKEN) is needed only to fetch; a file checked against
 * key files needs none.
 */
function attestationOf (rest: string[], values: ParsedValues, env: NodeJS.ProcessEnv): Invocation {
  const [sub, extra] = rest;
  if (sub !== 'verify') throw usageError(sub === undefined ? "'attestation' needs a subcommand: verify" : `attestation: unknown subcommand '${sub}': verify`);
  if (extra !== undefined) throw usageError(`unexpected argument '${extra}'`);
  const path = nonEmpty(values.file, 'file');
  const serviceId = idOption(values.service, 'service');
  if (values.rollout !== undefined && values['rollout-id'] !== undefined) throw usageError('--rollout and --rollout-id are the same option: give one');
  const rolloutId = idOption(values.rollout ?? values['rollout-id'], values.rollout === undefined ? 'rollout-id' : 'rollout');
  if ((path === undefined) === (serviceId === undefined)) throw usageError("'attestation verify' needs --file FILE, or --service ID --rollout ID");
  if ((serviceId === undefined) !== (rolloutId === undefined)) {
    throw usageError(serviceId === undefined ? '--rollout goes with --service' : '--service needs --rollout');
  }
  const keyFiles = values.key ?? [];
  const serverKeys = values['server-keys'] === true;
  if (keyFiles.length === 0 && !serverKeys) throw usageError("'attestation verify' needs --key PEM (repeatable), or --server-keys");
  const digest = digestOption(values.digest, 'digest');
  const after = values.after === undefined ? undefined : SHA256_HEX.exec(values.after.toLowerCase())?.[1];
  if (values.after !== undefined && after === undefined) throw usageError(`--after must be an attestation digest (64 hex digits), got '${values.after}'`);
  const args: AttestationVerifyArgs = {
    source: path !== undefined ? { kind: 'file', path } : { kind: 'server', serviceId: serviceId ?? '', rolloutId: rolloutId ?? '' },
    keyFiles,
    serverKeys,
    ...(digest === undefined ? {} : { digest: `sha256:${digest}` }),
    chainFiles: values.chain ?? [],
    ...(after === undefined ? {} : { after }),
  };
  const needsServer = args.source.kind === 'server' || serverKeys;
  return { kind: 'attestation', output: outputOf(values, env), ...(needsServer ? { connection: connectionOf(values, env) } : {}), args };
}

/** Parses argv (without node and the script) and the environment. Throws CliError (exit 3) on bad input. */
export function parseInvocation (argv: string[], env: NodeJS.ProcessEnv): Invocation {
  const { values, positionals } = parse(argv);
  const [first, ...rest] = positionals;

  if (values.version) return { kind: 'version' };
  if (first === 'help') {
    if (rest[0] !== undefined && !isCommand(rest[0])) throw usageError(`unknown command '${rest[0]}'`);
    return { kind: 'help', text: rest[0] === undefined ? usageText : commandUsageText(rest[0]) };
  }
  if (first === undefined) {
    if (values.help) return { kind: 'help', text: usageText };
    throw usageError(`missing command: one of ${commands.join(', ')}`);
  }
  if (!isCommand(first)) throw usageError(`unknown command '${first}': one of ${commands.join(', ')}`);
  const command = first;
  if (values.help) return { kind: 'help', text: commandUsageText(command) };
  for (const name of Object.keys(values) as OptionName[]) {
    if (!optionsOf[command].includes(name)) throw usageError(`--${name} is not an option of '${command}'`);
  }
  if (command === 'completion') return completionOf(rest);
  if (command === 'attestation') return attestationOf(rest, values, env);
  const args = commandArgsOf(command, values, rest);
  const output = outputOf(values, env);
  if ((output.format === 'wide' || output.format === 'name') && !listingCommands.includes(args.command)) {
    throw usageError(`-o ${output.format} goes with the listings (get, list, history, services, requests); '${command}' prints table, json or yaml`);
  }
  return { kind: 'run', command, output, connection: connectionOf(values, env), args };
}

/**
 * The output format asked for, read leniently from a command line that did not parse, so that
 * even a usage error comes out as the JSON (or YAML) document a script expects.
 */
export function requestedFormat (argv: string[]): OutputFormat {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--json') return 'json';
    const value = arg === '-o' || arg === '--output' ? argv[i + 1] : /^(?:-o|--output)=?(.+)$/.exec(arg)?.[1];
    if (value === 'json' || value === 'yaml') return value;
  }
  return 'table';
}
