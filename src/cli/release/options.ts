/**
 * The command line's vocabulary in one place: every command, every option, which command takes
 * which. The parser (args.ts), the help text (usage.ts) and the completion scripts
 * (completion.ts) are all built from it, so they cannot disagree.
 */

export const commands = [
  'list', 'status', 'history', 'services', 'get', 'describe', 'promote', 'rollback', 'abort', 'wait',
  'requests', 'approve', 'break-glass', 'governance', 'pipeline', 'attestation', 'version', 'completion',
] as const;
export type Command = typeof commands[number];

export const isCommand = (s: string): s is Command => (commands as readonly string[]).includes(s);

export const defaults = {
  retries: 6,
  requestTimeoutMs: 30_000,
  timeoutMs: 10 * 60_000,
  pollIntervalMs: 2_000,
  pageLimit: 20,
} as const;

export const outputFormats = ['table', 'wide', 'name', 'json', 'yaml'] as const;
export type OutputFormat = typeof outputFormats[number];

/** The formats that print one document (json, yaml) rather than text for people (table, wide) or scripts (name). */
export const isDocumentFormat = (format: OutputFormat): format is 'json' | 'yaml' => format === 'json' || format === 'yaml';

/** What `get` lists, and the words it takes for each (kubectl's singular forms too). */
export const getResources = { services: ['services', 'service'], releases: ['releases', 'release'], rollouts: ['rollouts', 'rollout'] } as const;
export type GetResource = keyof typeof getResources;

export const shells = ['bash', 'zsh'] as const;
export type Shell = typeof shells[number];

/** The words that follow a command that has subcommands (or arguments from a fixed set). */
export const subcommands: Partial<Record<Command, readonly string[]>> = {
  completion: shells,
  attestation: ['verify'],
  get: ['services', 'releases', 'rollouts'],
  describe: ['service'],
  'break-glass': ['request', 'approve', 'show'],
  governance: ['stop-the-line'],
};

/** The words that follow a subcommand (`governance stop-the-line on|off`). */
export const subcommandWords: Readonly<Record<string, readonly string[]>> = { 'stop-the-line': ['on', 'off'] };

interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** May be given more than once (the values are collected in order). */
  multiple?: boolean;
  /** For help and completion: what the value is (string options). */
  value?: string;
  /** The values a completion can offer. */
  choices?: readonly string[];
  description: string;
}

/** Every option of every command; `optionsOf` says which command takes which. */
export const options = {
  url: { type: 'string', value: 'URL', description: 'control plane base URL (default: $CLOUDLY_URL)' },
  token: { type: 'string', value: 'TOKEN', description: 'bearer token, a JWT (default: $CLOUDLY_TOKEN)' },
  output: { type: 'string', short: 'o', value: 'FORMAT', choices: outputFormats, description: 'table (default), wide, name, json or yaml' },
  json: { type: 'boolean', description: 'the same as -o json' },
  'no-color': { type: 'boolean', description: 'no colours in the live view (also: NO_COLOR set)' },
  help: { type: 'boolean', short: 'h', description: 'this text' },
  version: { type: 'boolean', description: 'print the version and exit' },
  retries: { type: 'string', value: 'N', description: 'retries on network errors, 5xx and in-progress answers (default 6)' },
  'request-timeout': { type: 'string', value: 'DURATION', description: 'per-attempt timeout of each request (default 30s)' },
  service: { type: 'string', short: 's', value: 'ID', description: 'the service: its id, or its name' },
  release: { type: 'string', short: 'r', value: 'ID', description: 'the release' },
  name: { type: 'string', value: 'NAME', description: 'only services with this name' },
  limit: { type: 'string', value: 'N', description: 'page size, 1-500 (services 1-200; default 20)' },
  cursor: { type: 'string', value: 'CURSOR', description: 'the page after this cursor (printed by the previous page)' },
  'expect-generation': { type: 'string', value: 'N', description: 'compare-and-swap on this generation (default: read the current one)' },
  'expect-rollout-id': { type: 'string', value: 'ID', description: 'compare-and-swap on this current rollout' },
  'idempotency-key': { type: 'string', value: 'KEY', description: 'default: derived from the CI job attempt, else random' },
  reason: { type: 'string', value: 'TEXT', description: 'kept in the rollout history (break-glass, stop-the-line: why, required)' },
  request: { type: 'string', value: 'ID', description: 'the promotion request (printed by a promote that needs approvals)' },
  grant: { type: 'string', value: 'ID', description: 'the break-glass grant (printed by break-glass request)' },
  'break-glass-grant': { type: 'string', value: 'ID', description: 'an approved break-glass grant: the promotion passes a closed window' },
  wait: { type: 'boolean', description: 'then follow the rollout this command created' },
  watch: { type: 'boolean', short: 'w', description: 'keep following the rollout and redraw it' },
  'rollout-id': { type: 'string', value: 'ID', description: 'the rollout to wait for (default: the current one)' },
  timeout: { type: 'string', value: 'DURATION', description: 'give up after this long, exit 2' },
  'poll-interval': { type: 'string', value: 'DURATION', description: 'polling period without the event stream (default 2s)' },
  'no-sse': { type: 'boolean', description: 'poll only, never open the event stream' },
  file: { type: 'string', short: 'f', value: 'FILE', description: 'an attestation: an AttestationView JSON or a bare DSSE envelope' },
  rollout: { type: 'string', value: 'ID', description: 'the rollout whose attestations to fetch (with --service)' },
  key: { type: 'string', multiple: true, value: 'PEM', description: 'a trusted public key file (PEM; repeatable; a bundle may hold several)' },
  'server-keys': { type: 'boolean', description: 'also trust the keys GET /v1/attestation-keys lists' },
  digest: { type: 'string', value: 'DIGEST', description: 'an image digest (sha256:…): the subject must name it; pipeline: the digest to judge' },
  chain: { type: 'string', multiple: true, value: 'FILE', description: 'the attestations before it, oldest first (repeatable)' },
  after: { type: 'string', value: 'SHA256', description: 'the digest of the attestation the chain must follow' },
} as const satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof options;

const connection: OptionName[] = ['url', 'token', 'output', 'json', 'no-color', 'help', 'version', 'retries', 'request-timeout'];
const following: OptionName[] = ['timeout', 'poll-interval', 'no-sse'];
const issuing: OptionName[] = ['service', 'expect-generation', 'expect-rollout-id', 'idempotency-key', 'reason', 'wait', ...following];
const page: OptionName[] = ['limit', 'cursor'];

export const optionsOf: Record<Command, readonly OptionName[]> = {
  list: [...connection, 'service', ...page],
  status: [...connection, 'service', 'watch', ...following],
  history: [...connection, 'service', ...page],
  services: [...connection, 'name', ...page],
  get: [...connection, 'service', 'name', ...page],
  describe: [...connection],
  promote: [...connection, 'release', 'break-glass-grant', ...issuing],
  rollback: [...connection, 'release', ...issuing],
  abort: [...connection, ...issuing],
  wait: [...connection, 'service', 'rollout-id', ...following],
  requests: [...connection, 'service'],
  approve: [...connection, 'service', 'request'],
  'break-glass': [...connection, 'service', 'release', 'reason', 'grant'],
  governance: [...connection, 'reason'],
  pipeline: [...connection, 'service', 'digest'],
  attestation: [...connection, 'file', 'service', 'rollout', 'rollout-id', 'key', 'server-keys', 'digest', 'chain', 'after'],
  version: [...connection],
  completion: ['help', 'version'],
};

/** One line per command for help and completion. */
export const commandSummaries: Record<Command, { synopsis: string, description: string }> = {
  list: { synopsis: '--service ID [--limit N] [--cursor C]', description: 'releases, newest observation first' },
  status: { synopsis: '--service ID [--watch]', description: 'current plan, status, reporters, what blocks success' },
  history: { synopsis: '--service ID [--limit N] [--cursor C]', description: 'every rollout issued, newest first' },
  services: { synopsis: '[--name NAME] [--limit N] [--cursor C]', description: 'services and their rollout state' },
  get: {
    synopsis: 'services|releases|rollouts [--service ID]',
    description: 'list services, a service\'s releases or its rollouts (-o table|wide|name|json|yaml)',
  },
  describe: { synopsis: 'service ID|NAME', description: 'one service in sections: service, current rollout, blocking, recent history' },
  promote: {
    synopsis: '--service ID --release ID [--wait]',
    description: 'issue a promotion (compare-and-swap, idempotent, retried); exit 5 when it needs approvals',
  },
  rollback: { synopsis: '--service ID --release ID [--wait]', description: 'roll back to a previously accepted release' },
  abort: { synopsis: '--service ID [--wait]', description: 'abort the current rollout: roll back to the last verified release' },
  wait: { synopsis: '--service ID [--rollout-id ID]', description: 'follow a rollout until it succeeds, fails or times out' },
  requests: { synopsis: '--service ID', description: 'the service\'s promotion requests: approvals n/N and by whom, state, expiry' },
  approve: { synopsis: '--service ID --request ID', description: 'approve a promotion request; the approval completing the quorum issues the rollout' },
  'break-glass': {
    synopsis: 'request|approve|show --service ID [--release ID --reason TEXT | --grant ID]',
    description: 'a grant for one promotion through a closed window: ask, approve (another principal), read',
  },
  governance: {
    synopsis: '[stop-the-line on --reason TEXT | stop-the-line off]',
    description: 'stop-the-line and the global windows; switch stop-the-line (admin)',
  },
  pipeline: { synopsis: '--service ID [--digest sha256:HEX]', description: 'each upstream stage\'s verdict for a digest (default: the newest release)' },
  attestation: {
    synopsis: 'verify --file F | --service ID --rollout ID',
    description: 'verify an attestation offline: signature, subject, predicate, chain',
  },
  version: { synopsis: '', description: 'this CLI\'s version and the server\'s (GET /v1/version)' },
  completion: { synopsis: 'bash|zsh', description: 'print a shell completion script' },
};

/** `--name VALUE` or `--flag`, with the short form, for help and completion. */
export function optionWords (name: OptionName): string[] {
  const spec: OptionSpec = options[name];
  return [`--${name}`, ...(spec.short ? [`-${spec.short}`] : [])];
}

export const takesValue = (name: OptionName): boolean => options[name].type === 'string';
