import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promote, type Caller } from '../../support/fixtures.js';
import { verifiedReplica } from '../../support/reports.js';
import { startCliFleet, type CliFleet } from './cliFleet.js';
import { cliEntry } from './harness.js';

/**
 * The CLI on a real terminal: each command runs in a tmux pane (160×40) and the test reads the
 * screen as a person would see it (`tmux capture-pane`). tmux runs on a socket of its own and
 * only that server is killed at the end. TEST_LOG=1 prints every screen the test looked at.
 */

const ESC = String.fromCharCode(27);
const socket = `cloudly-cli-test-${process.pid}`;

const tmux = (...args: string[]): string => execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });

const quote = (word: string): string => `'${word.replace(/'/g, "'\\''")}'`;

let paneSeq = 0;

/** Runs the CLI in a new pane (`columns` wide, 40 rows); the pane stays open after it exits, showing `[exit N]`. */
function runInPane (argv: string[], env: Record<string, string>, columns = 160): string {
  const name = `cli-${++paneSeq}`;
  const command = ['env', '-u', 'NO_COLOR', '-u', 'FORCE_COLOR', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), process.execPath, cliEntry, ...argv]
    .map(quote).join(' ');
  tmux('new-session', '-d', '-s', name, '-x', String(columns), '-y', '40', `${command}; echo "[exit $?]"; exec cat`);
  return name;
}

/** The pane's screen, lines the terminal wrapped joined again: plain text, or with the escape codes of its colours (`escapes`). */
const screenOf = (pane: string, escapes = false): string =>
  tmux('capture-pane', '-p', '-J', ...(escapes ? ['-e'] : []), '-t', pane).split('\n').map((l) => l.trimEnd()).join('\n');

/** Polls the screen until `ready` holds (the state the test waits for), at most `timeoutMs`. */
async function waitForScreen (pane: string, ready: (screen: string) => boolean, timeoutMs = 20_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  let screen = '';
  while (Date.now() < until) {
    screen = screenOf(pane);
    if (ready(screen)) {
      if (process.env['TEST_LOG']) console.log(`--- tmux ${pane}\n${screen.trimEnd()}\n---`);
      return screen;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the screen never got there in ${timeoutMs} ms; it shows:\n${screen}`);
}

const rowOf = (screen: string, node: string): string => screen.split('\n').find((l) => l.startsWith(`${node} `)) ?? '';

describe('cloudly-release on a terminal (tmux)', () => {
  let cf: CliFleet;
  let caller: Caller;
  let env: Record<string, string>;

  beforeAll(async () => {
    try {
      execFileSync('tmux', ['-V']);
    } catch {
      throw new Error('these tests drive a real terminal with tmux: install tmux (apt-get install tmux)');
    }
    // The lifecycle sweeper every 100 ms: a short progress deadline is decided as soon as it passes.
    cf = await startCliFleet({ processes: 1, env: { LIFECYCLE_SWEEP_INTERVAL_MS: '100' } });
    caller = cf.callers[0]!;
    env = { CLOUDLY_URL: cf.fleet.servers[0]!.url, CLOUDLY_TOKEN: cf.api };
  }, 120_000);

  afterAll(async () => {
    try {
      tmux('kill-server');
    } catch {
      // no pane was ever opened
    }
    await cf?.fleet.close();
  });

  it('status --watch: a live per-node view redrawn in place, coloured, ending with the final state once', async () => {
    const { svc, a } = await cf.service();
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    const rolloutId = (await cf.planOf(svc.id)).rolloutId;
    const pane = runInPane(['status', '--service', svc.id, '--watch'], env);

    const pending = await waitForScreen(pane, (s) => /\(generation 1\) pending/.test(s) && rowOf(s, 'n2') !== '');
    expect(pending).toContain(`service ${svc.id} · release ${a} sha256:`);
    expect(pending).toMatch(/^NODE\s+REPLICAS\s+STATE$/m);
    expect(rowOf(pending, 'n1')).toMatch(/^n1\s+·\s+required-replica-missing: /);
    expect(rowOf(pending, 'n2')).toMatch(/^n2\s+·\s+required-replica-missing: /);

    expect(await cf.report(svc.id, (plan) => [verifiedReplica(plan, svc.id, 'n1', 0)])).toBe('deploying');
    const deploying = await waitForScreen(pane, (s) => /\(generation 1\) deploying: observed 1\/2/.test(s) && rowOf(s, 'n1').includes('●'));
    expect(rowOf(deploying, 'n1')).toMatch(/^n1\s+●\s+verified$/);
    expect(rowOf(deploying, 'n2')).toMatch(/^n2\s+·\s+required-replica-missing: /);
    expect(deploying).not.toMatch(/pending/); // redrawn in place, not appended
    expect(screenOf(pane, true)).toContain(`${ESC}[32m●`); // verified is green

    expect(await cf.allVerified(svc.id)).toBe('succeeded');
    const final = await waitForScreen(pane, (s) => s.includes('[exit 0]'));
    const lines = final.split('\n');
    expect(lines.filter((l) => l.includes('succeeded'))).toEqual([`rollout ${rolloutId} (generation 1) succeeded: observed 2/2, healthy 2/2, verified 2/2`]);
    expect(lines.filter((l) => /^NODE\s/.test(l))).toHaveLength(1);
    expect(rowOf(final, 'n1')).toMatch(/^n1\s+●\s+verified$/);
    expect(rowOf(final, 'n2')).toMatch(/^n2\s+●\s+verified$/);
    expect(final).not.toMatch(/deploying|pending/);
  });

  it('a stability window on a terminal: "not yet stable N s of M s" counts up between reads, then waits for a report; the deadline counts down', async () => {
    const { svc, a } = await cf.service({ rolloutPolicy: { stabilityWindowSeconds: 6 } });
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    expect(await cf.allVerified(svc.id)).toBe('deploying');
    const pane = runInPane(['status', '--service', svc.id, '--watch', '--no-color'], env);

    const counted = (s: string, node: string): number => Number(/not yet stable (\d) s of 6 s/.exec(rowOf(s, node))?.[1] ?? NaN);
    const early = await waitForScreen(pane, (s) => counted(s, 'n1') <= 3 && counted(s, 'n2') <= 3);
    expect(rowOf(early, 'n1')).toMatch(/^n1\s+○\s+not yet stable \d s of 6 s$/);
    const deadline = /^deadline {2}fails at \S+Z unless it progresses \(in (10m|9m \d+s); 600 s allowed without progress\)$/m;
    const left = (screen: string): number => {
      const [, m, sec] = /(\d+)m(?: (\d+)s)?/.exec(deadline.exec(screen)?.[1] ?? '') ?? [];
      return Number(m) * 60 + Number(sec ?? 0);
    };
    expect(early).toMatch(deadline);
    // Nothing is reported meanwhile: the counter and the countdown move with the clock alone.
    const later = await waitForScreen(pane, (s) => counted(s, 'n1') >= counted(early, 'n1') + 2);
    expect(left(later)).toBeLessThan(left(early));
    await waitForScreen(pane, (s) => rowOf(s, 'n1').includes('stable for the window, waiting for the next report'));

    // The next report after the window counts the replicas: succeeded.
    expect(await cf.allVerified(svc.id)).toBe('succeeded');
    const final = await waitForScreen(pane, (s) => s.includes('[exit 0]'));
    expect(rowOf(final, 'n1')).toMatch(/^n1\s+●\s+verified$/);
    expect(final).toMatch(/^rollout \S+ \(generation 1\) succeeded: observed 2\/2, healthy 2\/2, verified 2\/2$/m);
    expect(final).not.toMatch(/not yet stable \d|waiting for the next report|unless it progresses/);
  });

  it('wait on a terminal: the deadline counts down in the live view; the verdict replaces it, whole though wider than the pane; exit 1', async () => {
    const { svc, a } = await cf.service({ rolloutPolicy: { progressDeadlineSeconds: 6 } });
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    const rolloutId = (await cf.planOf(svc.id)).rolloutId;
    const pane = runInPane(['wait', '--service', svc.id, '--timeout', '30s'], env, 120);
    const countdown = /^deadline {2}fails at \S+Z unless it progresses \(in [0-6]s; 6 s allowed without progress\)$/m;
    const counting = await waitForScreen(pane, (s) => countdown.test(s));
    expect(rowOf(counting, 'n1')).toMatch(/^n1\s+·\s+required-replica-missing: /);

    const final = await waitForScreen(pane, (s) => s.includes('[exit 1]'));
    // -J joins what the terminal wrapped: the result line and each reason whole, longer than the 120 columns.
    const result = final.split('\n').find((l) => l.startsWith(`rollout ${rolloutId} `)) ?? '';
    expect(result).toMatch(new RegExp('^rollout \\S+ \\(generation 1\\) failed: progress deadline exceeded \\(no progress for 6 s since \\S+Z\\): ' +
      'required-replica-missing \\(observed 0/2, healthy 0/2, verified 0/2\\)$'));
    expect(result.length).toBeGreaterThan(120);
    expect(final).toMatch(new RegExp('^blocking\\n {2}required-replica-missing: no progress for 6 s \\(last at \\S+\\): ' +
      'the rollout failed at \\S+ \\(required-replica-missing\\); promote again to retry$', 'm'));
    expect(final).toContain("  required-replica-missing: no reporter covers node 'n2': 1 required replica missing");
    expect(final).not.toMatch(/unless it progresses|pending/);
  });

  it('promote --wait on a terminal: the live view, log lines above it, the summary once; --no-color draws no colour', async () => {
    const { svc, a } = await cf.service();
    const pane = runInPane(['promote', '--service', svc.id, '--release', a, '--wait', '--timeout', '30s', '--no-color'], env);
    const pending = await waitForScreen(pane, (s) => /\(generation 1\) pending/.test(s) && rowOf(s, 'n2') !== '');
    const lines = pending.split('\n');
    const promoted = lines.findIndex((l) => l.startsWith(`promoted release ${a} `));
    const waiting = lines.findIndex((l) => l.startsWith('cloudly-release: waiting for rollout '));
    const header = lines.findIndex((l) => l.startsWith(`service ${svc.id} · `));
    expect(promoted).toBeGreaterThanOrEqual(0);
    // Whole: nothing drawn over it (the live view draws nothing before it has read the rollout).
    expect(lines[promoted]).toMatch(new RegExp(`^promoted release ${a} \\(sha256:[0-9a-f]{12}\\) on service ${svc.id}: rollout \\S+, generation 1$`));
    expect(waiting).toBeGreaterThan(promoted);
    expect(header).toBeGreaterThan(waiting);

    const wrong = `sha256:${'f'.repeat(64)}`;
    expect(await cf.report(svc.id, (plan) => [
      verifiedReplica(plan, svc.id, 'n1', 0),
      verifiedReplica(plan, svc.id, 'n2', 0, { evidence: { resolvedDigest: wrong } }),
    ])).toBe('mismatched');
    const final = await waitForScreen(pane, (s) => s.includes('[exit 1]'));
    const rows = final.split('\n');
    expect(rows.filter((l) => / mismatched: /.test(l))).toEqual([expect.stringMatching(/^rollout \S+ \(generation 1\) mismatched: pulled-digest-mismatch \(/)]);
    expect(rowOf(final, 'n2')).toMatch(/^n2\s+≠\s+pulled-digest-mismatch: /);
    expect(final).toMatch(/^blocking\n {2}pulled-digest-mismatch: replica 'n2-task-0' on node 'n2' does not run the planned digest/m);
    // SGR colour codes (ESC [ 3x m); tmux may still send other attributes.
    expect(screenOf(pane, true)).not.toMatch(new RegExp(`${ESC}\\[3\\dm`));
  });
});
