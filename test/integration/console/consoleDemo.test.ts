import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cellLabel, inPage, screenshot, signedIn, waitForAttribute, waitForGrid, waitForText, waitUntil } from './browser.js';
import { consoleHarness } from './harness.js';
import { history } from './stage.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const demoEntry = join(import.meta.dirname, '..', '..', '..', 'dist', 'src', 'demo', 'main.js');

interface Demo {
  child: ChildProcess;
  output: () => string;
  /** The first match of `re` in the demo's output, once it is printed. */
  waitFor: (re: RegExp, timeoutMs?: number) => Promise<RegExpExecArray>;
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();

/** The real demo command (`npm run demo` is `node dist/src/demo/main.js`) as a child process, minting its tokens with the server's secret. */
function startDemo (base: string, secret: string, args: string[]): Demo {
  const child = spawn(process.execPath, [demoEntry, ...args], {
    env: { PATH: process.env['PATH'] ?? '', CLOUDLY_URL: base, AUTH_JWT_SECRET: secret },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: string): void => { out += d; for (const l of [...listeners]) l(); };
  child.stdout?.setEncoding('utf8').on('data', onData);
  child.stderr?.setEncoding('utf8').on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => {
    running.delete(child);
    for (const l of [...listeners]) l();
    resolve(code);
  }));
  const waitFor = (re: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> => new Promise((resolve, reject) => {
    const check = (): void => {
      const match = re.exec(out);
      if (match) finish(undefined, match);
      else if (child.exitCode !== null) finish(new Error(`the demo exited (${child.exitCode}) before printing ${re}:\n${out}`));
    };
    const timer = setTimeout(() => { finish(new Error(`the demo did not print ${re} within ${timeoutMs} ms:\n${out}`)); }, timeoutMs);
    function finish (err: Error | undefined, match?: RegExpExecArray): void {
      clearTimeout(timer);
      listeners.delete(check);
      if (match) resolve(match); else reject(err);
    }
    listeners.add(check);
    check();
  });
  return { child, output: () => out, waitFor, exited };
}

// The acceptance check, end to end: a real server process (what `npm start` runs), the real
// demo command against it, and the console in a real browser following the demo's rollout live to
// `succeeded` — then promote and abort driven from the page, the demo's agents seeing the page's promotion.
describe('the demo in the console (acceptance check)', () => {
  const harness = consoleHarness();
  afterEach(() => { for (const c of running) c.kill('SIGKILL'); });

  it('the console shows the demo\'s rollout reach succeeded live, through "not yet stable"; promote and abort from the same page', async () => {
    expect(existsSync(demoEntry), `${demoEntry}: run \`npm run build\` first`).toBe(true);
    const stage = harness.stage;
    const name = 'demo-shop'; // the demo's default: the harness's server has a database of its own
    // An 8 s stability window: the rollout cannot succeed before the page (opened once the demo promoted) follows it.
    const demo = startDemo(stage.base, stage.secret, ['--interval', '1s', '--stability-window', '8s', '--follow']);
    const serviceId = (await demo.waitFor(/service \S+ created: (svc_\S+) /))[1] ?? '';
    const firstId = (await demo.waitFor(/promoted v1: rollout (ro_\S+) \(generation 1\)/))[1] ?? '';

    // The overview lists the demo's service; the keyboard opens it.
    const cp = await harness.open();
    const { page } = cp;
    await page.setViewport({ width: 1280, height: 960 }); // the whole grid in the screenshots
    await signedIn(cp, stage.base, stage.admin, '#/');
    const link = `tr[data-service-id="${serviceId}"] a`;
    await page.waitForSelector(link);
    await page.focus(link);
    await page.keyboard.press('Enter');
    await waitForText(page, '#view h1', name);
    await waitForAttribute(page, '#live-mode', 'data-live', 'live');
    await inPage(page, 'window.notReloaded = true');

    // 6 nodes × 2 slots; the replicas start, run verified but not yet stable for the 8 s window, then count.
    const cells = ['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].flatMap((n) => [`${name}-${n}#1`, `${name}-${n}#2`]);
    const labels = "[...document.querySelectorAll('#grid button.cell')].map((b) => b.getAttribute('aria-label') ?? '')";
    await waitUntil(page, `${labels}.some((l) => l.includes('not yet stable'))`, 'no cell said "not yet stable"',
      `[document.querySelector('#rollout-summary .badge')?.dataset.status, ...${labels}]`, 20_000);
    await screenshot(page, 'console-demo-rollout');
    const unstable = (await inPage<string[]>(page, labels)).filter((l) => l.includes('not yet stable'));
    expect(unstable[0]).toMatch(/healthy and verified, not yet stable, (\d s of 8 s|waiting for the next report)/);
    expect(await page.$eval('#rollout-summary .badge', (b) => b.getAttribute('data-status'))).toBe('deploying');
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'succeeded', 30_000);
    await waitForGrid(page, Object.fromEntries(cells.map((c) => [c, 'verified'])));
    expect(await cellLabel(page, `${name}-b3#2`)).toContain('verified and healthy');
    await waitForText(page, '#replica-counts', '12 verified');
    await waitForText(page, '#lifecycle-succeeded', 'Succeeded');
    await waitForText(page, '#lifecycle-policy', 'stability window 8 s');
    await waitForText(page, `#history-list tr[data-rollout-id="${firstId}"] td.outcome`, 'succeeded');
    expect(await inPage(page, 'window.notReloaded')).toBe(true); // live: no reload
    await demo.waitFor(/succeeded, as predicted/);
    await screenshot(page, 'console-demo-succeeded');

    // Promote v2 from the page: the demo's agents (still reporting v1 with --follow) see the page's rollout replace theirs.
    await page.click(`tr[data-release-id="${name}-v2"] button[data-action="promote"]`);
    await page.waitForSelector('#action-dialog[open]');
    await page.type('#action-reason', 'try v2');
    await page.keyboard.press('Enter');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');
    const [promoted] = await history(stage, serviceId);
    const secondId = String(promoted?.['rolloutId']);
    expect(promoted).toMatchObject({ generation: 2, mode: 'promotion', releaseId: `${name}-v2`, reason: 'try v2', issuedBy: { subject: 'ops-admin' } });
    await waitForText(page, '#status', `Promoted ${name}-v2: rollout ${secondId} (generation 2) issued.`);
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'pending');
    await waitForText(page, '#lifecycle-deadline', 'fails unless it progresses (600 s allowed without progress)');
    await demo.waitFor(new RegExp(`rollout ${firstId} was superseded by ${secondId}`));
    expect(await demo.exited).toBe(0);

    // Abort v2 from the page: the server rolls back to v1, the last verified release.
    await page.click('#abort');
    await page.waitForSelector('#action-dialog[open]');
    await waitForText(page, '#action-summary', `Rolls back rollout ${secondId} to the last release that was verified on every target node.`);
    await page.type('#action-reason', 'v2 is not reported');
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');
    const [rollback, aborted] = await history(stage, serviceId);
    const rollbackId = String(rollback?.['rolloutId']);
    expect(rollback).toMatchObject({ generation: 3, mode: 'rollback', releaseId: `${name}-v1`, trigger: { kind: 'abort' }, rollbackOfRolloutId: secondId });
    expect(aborted).toMatchObject({ rolloutId: secondId, outcome: 'aborted' });
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'rolling-back');
    await waitForText(page, '#rollout-trigger', `abort of ${secondId}`);
    await waitForText(page, `#history-list tr[data-rollout-id="${secondId}"] td.outcome`, `aborted by ${rollbackId}`);
    await waitForAttribute(page, `#history-list tr[data-rollout-id="${rollbackId}"]`, 'data-trigger', 'abort');
    const posts = cp.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => new URL(r.url).pathname)).toEqual([
      `/v1/services/${serviceId}/image-releases/${name}-v2/promote`, `/v1/services/${serviceId}/rollout/abort`,
    ]);
    for (const post of posts) expect(post.headers['idempotency-key']).toMatch(UUID);
    expect(JSON.parse(posts[1]?.body ?? '')).toEqual({ expectedRolloutGeneration: 2, expectedCurrentRolloutId: secondId, reason: 'v2 is not reported' });
    expect(await inPage(page, 'window.notReloaded')).toBe(true);
  }, 150_000);
});
