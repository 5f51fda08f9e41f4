import { commandSummaries, commands, defaults, options, optionsOf, type Command, type OptionName } from './options.js';

const commandLines = commands
  .map((c) => `  ${c.padEnd(12)}${commandSummaries[c].synopsis.padEnd(44)}${commandSummaries[c].description}`)
  .join('\n');

/** `cloudly-release --help`. test/unit/cli/args.test.ts checks that it names every command and option. */
export const usageText = `usage: cloudly-release <command> [options]

Promote, roll back and follow immutable-digest rollouts of the Cloudly control plane.
Reference: docs/cli.md of the cloudly-release-control-plane package.

commands
${commandLines}

list / history / services
  --limit N                  page size, 1-500 (services 1-200; default ${defaults.pageLimit}); the output names the next page's --cursor
  --cursor C                 the page after C
  --name NAME                services: only services with this name

get services|releases|rollouts (the listings of services, list and history, kubectl style)
  -s, --service ID           releases, rollouts: the service (its id or name)
  --name NAME                services: only services with this name
  --limit N / --cursor C     as for list

describe service ID|NAME     the service, its current rollout, what blocks it, its newest rollouts

status
  -w, --watch                keep following the rollout and redraw it until it ends (live view on a terminal);
                             with --timeout, --poll-interval, --no-sse as for wait (no timeout by default)

promote / rollback / abort
  --expect-generation N      compare-and-swap on this generation (default: read the current one)
  --expect-rollout-id ID     ... and on this current rollout (rollback/abort default: read the current one)
  --idempotency-key KEY      default: derived from the CI job attempt (see docs), else random
  --reason TEXT              kept in the rollout history
  --wait                     then follow the rollout this command created (exit codes as for wait)
  --break-glass-grant ID     promote only: an approved break-glass grant lets this release through a closed window
  a promotion that needs approvals makes a promotion request instead (202): printed with the approve command, exit 5

requests / approve (docs/governance.md "Approvals")
  requests --service ID      the promotion requests: approvals n/N and by whom, state, expiry (-o wide|name too)
  approve --request ID       approve one (never the requester); the approval completing the quorum issues the rollout

break-glass request|approve|show (one promotion of a release through a closed window; never stop-the-line)
  --release ID --reason TEXT request: the release and why (required)
  --grant ID                 approve (another principal), show

governance [stop-the-line on|off]
  --reason TEXT              stop-the-line on: why (required); shows stop-the-line and the global windows without a subcommand

pipeline --service ID        each upstream stage's verdict for a digest and whether a promotion passes now
  --digest sha256:HEX        the digest to judge (default: the service's newest release)

wait (and --wait)
  --rollout-id ID            the rollout to wait for (default: the current one when wait starts)
  --timeout DURATION         give up after this long, exit 2 (default 10m; e.g. 90s, 10m, 1h)
  --poll-interval DURATION   polling period when the event stream is unavailable (default 2s)
  --no-sse                   poll only, never open the event stream

attestation verify (no server needed with --file and --key)
  -f, --file FILE            the attestation: an AttestationView JSON (as the API lists it) or a bare DSSE envelope
  --service ID --rollout ID  instead: fetch the rollout's attestations (GET /v1/services/ID/attestations?rolloutId=ID)
  --key PEM                  a trusted public key file (repeatable; a PEM bundle may hold several, e.g. retired keys)
  --server-keys              also trust the keys the server lists (GET /v1/attestation-keys): weaker than your own copy
  --digest sha256:HEX        the image digest the attestation must be about
  --chain FILE               an earlier attestation of the service, oldest first (repeatable): the chain must lead to it
  --after SHA256             the digest of the attestation the chain (or the attestation) must directly follow
  exit 0 accepted · 1 refused, the reason on stderr · 3 usage · 4 server unreachable (fetching)

every command
  --url URL                  control plane base URL (default: $CLOUDLY_URL)
  --token TOKEN              bearer token, a JWT (default: $CLOUDLY_TOKEN)
  -o, --output FORMAT        table (default), json or yaml: one document on stdout; logs and progress go to stderr;
                             listings (get, list, history, services) also: wide (more columns), name (one id a line)
  --json                     the same as -o json
  --no-color                 no colours in the live view (NO_COLOR=1 does the same)
  --retries N                retries on network errors, 5xx and in-progress answers (default ${defaults.retries})
  --request-timeout DURATION per-attempt timeout of each request (default 30s)
  -h, --help                 this text
  --version                  print the version and exit

exit codes: 0 ok · 1 rollout failed/mismatched/superseded or request refused (4xx) · 2 timeout
            3 usage or configuration error · 4 unreachable after retries
            5 nothing issued yet: a promotion request awaits approvals (promote, rollback, abort)`;

/** One option's help line: `-s, --service ID   the service`. */
const optionLine = (name: OptionName): string => {
  const spec: { short?: string, value?: string, description: string } = options[name];
  const words = `${spec.short ? `-${spec.short}, ` : '    '}--${name}${spec.value ? ` ${spec.value}` : ''}`;
  return `  ${words.padEnd(30)} ${spec.description}`;
};

/** `cloudly-release <command> --help`: the command's synopsis, what it does, and only its own options. */
export function commandUsageText (command: Command): string {
  const { synopsis, description } = commandSummaries[command];
  const own = optionsOf[command];
  const common: OptionName[] = ['url', 'token', 'output', 'json', 'no-color', 'retries', 'request-timeout', 'help', 'version'];
  const specific = own.filter((o) => !common.includes(o));
  const shared = own.filter((o) => common.includes(o));
  return [
    `usage: cloudly-release ${command} ${synopsis}`,
    '',
    description,
    ...(specific.length > 0 ? ['', 'options', ...specific.map(optionLine)] : []),
    ...(shared.length > 0 ? ['', 'every command', ...shared.map(optionLine)] : []),
    '',
    'cloudly-release --help lists every command; docs/cli.md is the reference.',
  ].join('\n');
}
