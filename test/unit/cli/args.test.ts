import { describe, expect, it } from 'vitest';
import { jwtShapeProblem, parseInvocation, requestedFormat, type Invocation } from '../../../src/cli/release/args.js';
import { CliError, ExitCode } from '../../../src/cli/release/errors.js';
import { commands, options, optionsOf } from '../../../src/cli/release/options.js';
import { commandUsageText, usageText } from '../../../src/cli/release/usage.js';
import { servicePageLimits } from '../../../src/contracts/services.js';

/** A token of the right shape (the CLI checks the shape only; the server checks the signature). */
const jwt = [{ alg: 'HS256', typ: 'JWT' }, { sub: 'ci-bot', role: 'api' }]
  .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.') + '.c2lnbmF0dXJl';
const env = { CLOUDLY_URL: 'https://cloudly.example.com/', CLOUDLY_TOKEN: jwt };

const run = (argv: string[], e: NodeJS.ProcessEnv = env): Extract<Invocation, { kind: 'run' }> => {
  const invocation = parseInvocation(argv, e);
  if (invocation.kind !== 'run') throw new Error(`not a run: ${invocation.kind}`);
  return invocation;
};

/** The CliError parseInvocation throws. */
const refusal = (argv: string[], e: NodeJS.ProcessEnv = env): CliError => {
  try {
    parseInvocation(argv, e);
  } catch (err) {
    if (err instanceof CliError) return err;
    throw err;
  }
  throw new Error(`${argv.join(' ')} was accepted`);
};

describe('cloudly-release argument parsing', () => {
  it('connection: base URL without the trailing slash, token, retries and the per-attempt timeout', () => {
    expect(run(['status', '--service', 's']).connection).toEqual({ baseUrl: 'https://cloudly.example.com', token: jwt, retries: 6, requestTimeoutMs: 30_000 });
    expect(run(['status', '-s', 's', '--retries', '0', '--request-timeout', '5s', '--url', 'http://10.0.0.1:8080/cp/']).connection)
      .toMatchObject({ baseUrl: 'http://10.0.0.1:8080/cp', retries: 0, requestTimeoutMs: 5_000 });
  });

  it('output: table by default; -o / --output json|yaml|table; --json is -o json; colours off with --no-color or NO_COLOR', () => {
    expect(run(['list', '--service', 's']).output).toEqual({ format: 'table', color: true });
    expect(run(['list', '--service', 's', '-o', 'yaml']).output.format).toBe('yaml');
    expect(run(['list', '--service', 's', '--output=json']).output.format).toBe('json');
    expect(run(['list', '--service', 's', '-o', 'table']).output.format).toBe('table');
    expect(run(['history', '--service', 's', '--json']).output.format).toBe('json');
    expect(run(['services', '--json', '-o', 'json']).output.format).toBe('json');
    expect(run(['status', '--service', 's', '--no-color']).output.color).toBe(false);
    expect(run(['status', '--service', 's'], { ...env, NO_COLOR: '1' }).output.color).toBe(false);
    expect(run(['status', '--service', 's'], { ...env, NO_COLOR: '' }).output.color).toBe(true);
    expect(refusal(['list', '--service', 's', '-o', 'xml']).message).toMatch(/-o \/ --output must be one of table, wide, name, json, yaml, got 'xml'/);
    expect(refusal(['list', '--service', 's', '--json', '-o', 'yaml']).message).toMatch(/--json is -o json/);
  });

  it('list and history: --service, --limit 1-500 (default 20), --cursor', () => {
    expect(run(['list', '--service', 'svc_1']).args).toEqual({ command: 'list', serviceId: 'svc_1', limit: 20 });
    expect(run(['history', '--service', 'svc_1', '--limit', '500', '--cursor', '1717']).args)
      .toEqual({ command: 'history', serviceId: 'svc_1', limit: 500, cursor: '1717' });
    expect(refusal(['history', '--service', 's', '--limit', '0']).message).toMatch(/--limit must be an integer from 1 to 500/);
    expect(refusal(['history', '--service', 's', '--limit', '501']).exitCode).toBe(ExitCode.usage);
    expect(refusal(['history', '--service', 's', '--cursor', ' ']).message).toMatch(/--cursor must not be empty/);
    expect(refusal(['history']).message).toBe("'history' needs --service");
  });

  it('services: no --service; --name, --limit, --cursor', () => {
    expect(run(['services']).args).toEqual({ command: 'services', limit: 20 });
    expect(run(['services', '--name', 'shop web', '--limit', '5', '--cursor', 'abc']).args)
      .toEqual({ command: 'services', name: 'shop web', limit: 5, cursor: 'abc' });
    // The server serves at most 200 services a page (servicePageLimits): more is refused here, before anything is sent.
    const max = servicePageLimits.maxPageSize;
    expect(run(['services', '--limit', String(max)]).args).toEqual({ command: 'services', limit: max });
    expect(refusal(['services', '--limit', String(max + 1)]).message).toMatch(new RegExp(`--limit must be an integer from 1 to ${max}`));
    expect(refusal(['services', '--service', 's']).message).toBe("--service is not an option of 'services'");
    expect(refusal(['services', '--name', '']).message).toMatch(/--name must not be empty/);
  });

  it('status: --watch with the follow options (no timeout unless given); they need --watch', () => {
    expect(run(['status', '--service', 's']).args).toEqual({ command: 'status', serviceId: 's' });
    expect(run(['status', '--service', 's', '--watch']).args).toEqual({ command: 'status', serviceId: 's', watch: { pollIntervalMs: 2_000, sse: true } });
    expect(run(['status', '-s', 's', '-w', '--timeout', '5m', '--poll-interval', '500ms', '--no-sse']).args)
      .toEqual({ command: 'status', serviceId: 's', watch: { timeoutMs: 300_000, pollIntervalMs: 500, sse: false } });
    expect(refusal(['status', '--service', 's', '--timeout', '1m']).message).toBe('--timeout, --poll-interval and --no-sse go with --watch');
  });

  it('wait: 10 minutes by default', () => {
    expect(run(['wait', '--service', 's', '--rollout-id', 'ro_1']).args)
      .toEqual({ command: 'wait', serviceId: 's', rolloutId: 'ro_1', follow: { timeoutMs: 600_000, pollIntervalMs: 2_000, sse: true } });
  });

  it('promote and rollback: --release, the expectations, the key, the reason, --wait', () => {
    expect(run(['promote', '--service', 's', '--release', 'r']).args).toEqual({ command: 'promote', serviceId: 's', releaseId: 'r' });
    expect(run(['rollback', '-s', 's', '-r', 'r', '--expect-generation', '0', '--expect-rollout-id', 'ro_1', '--idempotency-key', 'k-1',
      '--reason', 'bad canary', '--wait', '--timeout', '90s']).args).toEqual({
      command: 'rollback',
      serviceId: 's',
      releaseId: 'r',
      expectGeneration: 0,
      expectRolloutId: 'ro_1',
      idempotencyKey: 'k-1',
      reason: 'bad canary',
      wait: { timeoutMs: 90_000, pollIntervalMs: 2_000, sse: true },
    });
    expect(refusal(['promote', '--service', 's']).message).toBe("'promote' needs --release");
    expect(refusal(['promote', '--service', 's', '--release', 'r', '--idempotency-key', 'has space']).message).toMatch(/--idempotency-key must be/);
    expect(refusal(['promote', '--service', 's', '--release', 'r', '--reason', 'x'.repeat(1025)]).message).toMatch(/at most 1024/);
    expect(refusal(['promote', '--service', 's', '--release', 'a/b']).message).toMatch(/without spaces or slashes/);
  });

  it('abort: no --release; otherwise the options of rollback', () => {
    expect(run(['abort', '--service', 's']).args).toEqual({ command: 'abort', serviceId: 's' });
    expect(run(['abort', '--service', 's', '--expect-generation', '3', '--expect-rollout-id', 'ro_3', '--idempotency-key', 'k',
      '--reason', 'canary errors', '--wait', '--no-sse']).args).toEqual({
      command: 'abort',
      serviceId: 's',
      expectGeneration: 3,
      expectRolloutId: 'ro_3',
      idempotencyKey: 'k',
      reason: 'canary errors',
      wait: { timeoutMs: 600_000, pollIntervalMs: 2_000, sse: false },
    });
    expect(refusal(['abort', '--service', 's', '--release', 'r']).message).toBe("--release is not an option of 'abort'");
    expect(refusal(['abort']).message).toBe("'abort' needs --service");
    expect(refusal(['abort', '--service', 's', '--timeout', '1m']).message).toBe('--timeout, --poll-interval and --no-sse go with --wait');
  });

  it('--version and --help need no configuration; completion takes bash or zsh', () => {
    expect(parseInvocation(['--version'], {})).toEqual({ kind: 'version' });
    expect(parseInvocation(['status', '--version'], {})).toEqual({ kind: 'version' });
    expect(parseInvocation(['--help'], {})).toEqual({ kind: 'help', text: usageText });
    // A command's help is its own (issue 23: `promote --help` printed the global help).
    expect(parseInvocation(['help', 'abort'], {})).toEqual({ kind: 'help', text: commandUsageText('abort') });
    expect(parseInvocation(['abort', '--help'], {})).toEqual({ kind: 'help', text: commandUsageText('abort') });
    expect(parseInvocation(['completion', 'bash'], {})).toEqual({ kind: 'completion', shell: 'bash' });
    expect(parseInvocation(['completion', 'zsh'], {})).toEqual({ kind: 'completion', shell: 'zsh' });
    expect(refusal(['completion', 'fish'], {}).message).toMatch(/unknown shell 'fish'/);
    expect(refusal(['completion'], {}).message).toMatch(/needs a shell/);
    expect(refusal(['completion', 'bash', '--service', 's'], {}).message).toMatch(/not an option of 'completion'/);
  });

  it('configuration errors are exit 3 and name the variable', () => {
    const bad = (e: NodeJS.ProcessEnv): CliError => refusal(['status', '--service', 's'], e);
    expect(bad({ CLOUDLY_TOKEN: jwt })).toMatchObject({ exitCode: 3, code: 'config', message: expect.stringMatching(/CLOUDLY_URL is not set/) });
    expect(bad({ ...env, CLOUDLY_URL: 'https://u:p@x.example.com' }).message).toMatch(/plain base URL/);
    expect(bad({ ...env, CLOUDLY_URL: 'not a url' }).message).toMatch(/is not a URL/);
    expect(bad({ CLOUDLY_URL: env.CLOUDLY_URL }).message).toMatch(/CLOUDLY_TOKEN is not set/);
    expect(bad({ ...env, CLOUDLY_TOKEN: 'not-a-jwt' })).toMatchObject({ exitCode: 3, code: 'config', message: expect.stringMatching(/is not a JWT/) });
    expect(bad({ ...env, CLOUDLY_TOKEN: `Bearer ${jwt}` }).message).toMatch(/contains whitespace/);
  });

  it('the JWT shape: three base64url segments, header and payload JSON objects', () => {
    expect(jwtShapeProblem(jwt)).toBeUndefined();
    expect(jwtShapeProblem(jwt.replace(/\.[^.]*$/, '.'))).toBeUndefined(); // an empty signature is still the shape (alg none)
    for (const token of ['abc', 'a.b', 'a.b.c.d', '..sig', `${jwt}=`, 'a+b.c.d']) expect(jwtShapeProblem(token), token).toMatch(/is not a JWT/);
    expect(jwtShapeProblem('eyJub3QganNvbg.eyJzdWIiOiJ4In0.sig')).toMatch(/not JSON/); // header '{not json'
    expect(jwtShapeProblem('WyJhcnJheSJd.eyJzdWIiOiJ4In0.sig')).toMatch(/not JSON/); // header '["array"]'
  });

  it('usage errors: unknown command, option of another command, stray argument', () => {
    expect(refusal(['deploy']).message).toMatch(/unknown command 'deploy'/);
    expect(refusal([]).message).toMatch(/missing command/);
    expect(refusal(['list', '--service', 's', '--watch']).message).toBe("--watch is not an option of 'list'");
    expect(refusal(['list', '--service', 's', 'extra']).message).toMatch(/unexpected argument 'extra'/);
    expect(refusal(['list', '--colour']).message).toMatch(/Unknown option '--colour'/);
  });

  it('governance commands: requests, approve, break-glass request|approve|show, governance [stop-the-line on|off], pipeline', () => {
    expect(run(['requests', '-s', 'shop']).args).toEqual({ command: 'requests', serviceId: 'shop' });
    expect(run(['requests', '-s', 'shop', '-o', 'name']).output.format).toBe('name');
    expect(run(['approve', '-s', 'svc_1', '--request', 'pr_1']).args).toEqual({ command: 'approve', serviceId: 'svc_1', requestId: 'pr_1' });
    expect(refusal(['approve', '-s', 'svc_1']).message).toMatch(/'approve' needs --request/);
    expect(refusal(['approve', '-s', 'svc_1', '--request', 'pr_1', '-o', 'wide']).message).toMatch(/-o wide goes with the listings/);
    expect(run(['break-glass', 'request', '-s', 'svc_1', '-r', 'rel_1', '--reason', 'hotfix']).args)
      .toEqual({ command: 'break-glass', action: 'request', serviceId: 'svc_1', releaseId: 'rel_1', reason: 'hotfix' });
    expect(refusal(['break-glass', 'request', '-s', 'svc_1', '-r', 'rel_1']).message).toMatch(/'break-glass request' needs --reason/);
    expect(run(['break-glass', 'show', '-s', 'svc_1', '--grant', 'bg_1']).args)
      .toEqual({ command: 'break-glass', action: 'show', serviceId: 'svc_1', grantId: 'bg_1' });
    expect(refusal(['break-glass', 'approve', '-s', 'svc_1', '--grant', 'bg_1', '--reason', 'x']).message).toMatch(/go with 'break-glass request'/);
    expect(refusal(['break-glass', 'revoke', '-s', 'svc_1']).message).toMatch(/unknown subcommand 'revoke': request, approve or show/);
    expect(refusal(['break-glass']).exitCode).toBe(ExitCode.usage);
    expect(run(['governance']).args).toEqual({ command: 'governance', action: 'show' });
    expect(run(['governance', 'stop-the-line', 'on', '--reason', 'incident']).args)
      .toEqual({ command: 'governance', action: 'stop-the-line', active: true, reason: 'incident' });
    expect(run(['governance', 'stop-the-line', 'off']).args).toEqual({ command: 'governance', action: 'stop-the-line', active: false });
    expect(refusal(['governance', 'stop-the-line', 'on']).message).toMatch(/needs --reason/);
    expect(refusal(['governance', 'stop-the-line', 'maybe']).message).toMatch(/'maybe' is not on or off/);
    expect(run(['pipeline', '-s', 'svc_1', '--digest', `sha256:${'a'.repeat(64)}`]).args)
      .toEqual({ command: 'pipeline', serviceId: 'svc_1', digest: `sha256:${'a'.repeat(64)}` });
    expect(refusal(['pipeline', '-s', 'svc_1', '--digest', 'x']).message).toMatch(/--digest must be sha256:<64 hex digits>/);
    expect(run(['promote', '-s', 'svc_1', '-r', 'rel_1', '--break-glass-grant', 'bg_1']).args).toMatchObject({ breakGlassGrant: 'bg_1' });
    expect(refusal(['rollback', '-s', 'svc_1', '-r', 'rel_1', '--break-glass-grant', 'bg_1']).message)
      .toBe("--break-glass-grant is not an option of 'rollback'");
  });

  it('a command line that does not parse still says which document format it wanted', () => {
    expect(requestedFormat(['wait', '--json'])).toBe('json');
    expect(requestedFormat(['wait', '-o', 'yaml', '--bogus'])).toBe('yaml');
    expect(requestedFormat(['wait', '--output=json'])).toBe('json');
    expect(requestedFormat(['wait', '-oyaml'])).toBe('yaml');
    expect(requestedFormat(['wait', '-o', 'table'])).toBe('table');
    expect(requestedFormat(['wait'])).toBe('table');
  });

  it('attestation verify: a file with key files needs no server; fetching needs CLOUDLY_URL and CLOUDLY_TOKEN', () => {
    const offline = parseInvocation(['attestation', 'verify', '--file', 'a.json', '--key', 'k1.pem', '--key', 'k2.pem', '--chain', 'c1.json',
      '--chain', 'c2.json', '--digest', `SHA256:${'A'.repeat(64)}`, '--after', 'b'.repeat(64)], {});
    expect(offline).toEqual({
      kind: 'attestation',
      output: { format: 'table', color: true },
      args: {
        source: { kind: 'file', path: 'a.json' },
        keyFiles: ['k1.pem', 'k2.pem'],
        serverKeys: false,
        digest: `sha256:${'a'.repeat(64)}`,
        chainFiles: ['c1.json', 'c2.json'],
        after: 'b'.repeat(64),
      },
    });
    const fetched = parseInvocation(['attestation', 'verify', '-s', 'svc', '--rollout', 'ro_1', '--server-keys', '--json'], env);
    expect(fetched).toMatchObject({
      kind: 'attestation',
      connection: { baseUrl: 'https://cloudly.example.com' },
      args: { source: { kind: 'server', serviceId: 'svc', rolloutId: 'ro_1' } },
    });
    expect(refusal(['attestation', 'verify', '--file', 'a.json', '--server-keys'], {}).message).toMatch(/CLOUDLY_URL is not set/);
    expect(refusal(['attestation', 'verify', '--file', 'a.json', '--service', 's', '--rollout', 'r', '--key', 'k']).message)
      .toMatch(/needs --file FILE, or --service/);
    expect(refusal(['attestation', 'verify', '--file', 'a.json', '--key', 'k', '--after', 'xyz']).message).toMatch(/--after must be an attestation digest/);
    expect(refusal(['attestation', 'verify', '--file', 'a.json', '--key', 'k', '--watch']).message).toMatch(/--watch is not an option of 'attestation'/);
    expect(refusal(['attestation']).message).toMatch(/'attestation' needs a subcommand: verify/);
    expect(refusal(['status', '-s', 's', '--key', 'k']).message).toMatch(/--key is not an option of 'status'/);
  });

  it('each command\'s help names its synopsis and exactly its own options', () => {
    for (const command of commands) {
      const text = commandUsageText(command);
      expect(text).toMatch(new RegExp(`^usage: cloudly-release ${command} `));
      const named = Object.keys(options).filter((name) => new RegExp(`--${name}(?![\\w-])`).test(text));
      expect(named.sort(), command).toEqual([...optionsOf[command]].sort());
    }
    expect(commandUsageText('promote')).toContain('--release ID');
    expect(commandUsageText('promote')).not.toContain('--name');
  });

  it('the help text names every command and every option', () => {
    for (const command of commands) expect(usageText, command).toMatch(new RegExp(`^  ${command} `, 'm'));
    for (const name of Object.keys(options)) expect(usageText, name).toContain(`--${name}`);
  });
});
