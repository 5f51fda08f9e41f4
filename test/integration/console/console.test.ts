import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../../src/domain/tokens.js';
import { bearer } from '../../support/fixtures.js';
import { fullReplicas, verifiedReplica } from '../../support/reports.js';
import {
  cellLabel, focused, inPage, screenshot, signedIn, textContrast, waitForAttribute, waitForGrid, waitForText,
} from './browser.js';
import { consoleHarness } from './harness.js';
import { NODES, namedService, promotedService, report } from './stage.js';

// The console in a real browser (Chromium) against a real server process: signing in, the
// overview, and a service page's live grid. Actions (promote, roll back, abort) are in consoleActions.test.ts.
describe('the console in a browser', () => {
  const harness = consoleHarness();
  const open = () => harness.open();
  let stage: typeof harness.stage;
  beforeEach(() => { stage = harness.stage; });

  it('asks for a token once, keeps it in sessionStorage only, and returns to the form with the server\'s message on a 401', async () => {
    const cp = await open();
    const { page } = cp;
    await page.goto(`${stage.base}/console`);
    expect(page.url()).toBe(`${stage.base}/console/`);
    await page.waitForSelector('#login', { visible: true });
    await waitForText(page, '#token-help', 'npm run -s token -- --role admin');

    await page.type('#token', 'not-a-token');
    await page.keyboard.press('Enter');
    const refused = await stage.api.inject({ method: 'GET', url: '/v1/services?limit=1', headers: bearer('not-a-token') });
    expect(refused.statusCode).toBe(401);
    await waitForText(page, '#login-error', `The server refused the token: ${refused.json().detail}`);

    await page.type('#token', stage.admin);
    await page.keyboard.press('Enter');
    await waitForText(page, '#view h1', 'Services');
    await waitForText(page, '#identity', 'Signed in as ops-admin (admin)');
    const storage = await inPage(page,
      "({ session: sessionStorage.getItem('cloudly-console-token'), local: localStorage.length, cookie: document.cookie, url: location.href })");
    expect(storage).toEqual({ session: stage.admin, local: 0, cookie: '', url: `${stage.base}/console/` });

    // Once per browser session: a reload keeps it, no form.
    await page.reload();
    await waitForText(page, '#view h1', 'Services');
    expect(await page.$eval('#login', (el) => el.hidden)).toBe(true);

    // A token the server no longer accepts (here: signed with another key) sends the user back to the form.
    const foreign = await mintToken({ kind: 'secret', secret: randomBytes(32).toString('hex') }, { subject: 'ops-admin', role: 'admin' });
    await inPage(page, `sessionStorage.setItem('cloudly-console-token', ${JSON.stringify(foreign)})`);
    await page.click('#view button.secondary'); // Refresh
    const detail = (await stage.api.inject({ method: 'GET', url: '/v1/services?limit=1', headers: bearer(foreign) })).json().detail;
    await waitForText(page, '#login-error', `The server refused the token: ${detail}`);
    expect(await inPage(page, "sessionStorage.getItem('cloudly-console-token')")).toBeNull();
    expect(cp.requests.filter((r) => r.url.includes('access_token') && !r.url.includes('/rollout/events'))).toEqual([]);
  });

  it('the overview shows every service with its state and counts, and filters by name and state from the keyboard', async () => {
    const tag = randomBytes(2).toString('hex');
    const web = await promotedService(stage, `web-${tag}`);
    await report(stage, web.plan, web.svc.id, fullReplicas(web.plan, web.svc.id, NODES));
    const shop = await promotedService(stage, `shop-${tag}`);
    await report(stage, shop.plan, shop.svc.id, [verifiedReplica(shop.plan, shop.svc.id, 'node-a', 0)], ['node-a']);
    const cart = await promotedService(stage, `cart-${tag}`);
    await report(stage, cart.plan, cart.svc.id, [
      verifiedReplica(cart.plan, cart.svc.id, 'node-a', 0),
      verifiedReplica(cart.plan, cart.svc.id, 'node-a', 1, { evidence: { resolvedDigest: `sha256:${'e'.repeat(64)}` } }),
    ], ['node-a']);
    const jobs = await promotedService(stage, `jobs-${tag}`);
    await report(stage, jobs.plan, jobs.svc.id, [verifiedReplica(jobs.plan, jobs.svc.id, 'node-b', 0, { status: 'failed' })], ['node-b']);
    const docs = await promotedService(stage, `docs-${tag}`);
    const idle = await namedService(stage, `idle-${tag}`);
    const expected: Record<string, string> = {
      [web.svc.id]: 'succeeded',
      [shop.svc.id]: 'deploying',
      [cart.svc.id]: 'mismatched',
      [jobs.svc.id]: 'failed',
      [docs.svc.id]: 'pending',
      [idle.svc.id]: 'none',
    };

    const cp = await open();
    const { page } = cp;
    await signedIn(cp, stage.base, stage.admin);
    for (const [id, status] of Object.entries(expected)) await waitForAttribute(page, `tr[data-service-id="${id}"]`, 'data-status', status);
    const webRow = await page.$eval(`tr[data-service-id="${web.svc.id}"]`, (tr) => tr.textContent ?? '');
    expect(webRow).toContain('4/4 verified · 4 healthy · 4 observed');
    expect(await page.$eval(`tr[data-service-id="${cart.svc.id}"]`, (tr) => tr.textContent)).toContain('pulled-digest-mismatch');
    await screenshot(page, 'console-overview');

    // "/" jumps to the filter; typing narrows the list; the filter is kept in the address.
    await page.keyboard.press('/');
    expect(await focused(page)).toBe('filter-name');
    await page.keyboard.type(`web-${tag}`);
    await page.waitForFunction(`document.querySelectorAll('table.services tbody tr[data-service-id]').length === 1 &&
      document.querySelector('tr[data-service-id="${web.svc.id}"]') !== null`);
    expect(await inPage(page, 'location.hash')).toBe(`#/?name=web-${tag}`);

    // Name and state together: the two that need attention.
    await page.$eval('#filter-name', (el: { value: string }) => { el.value = ''; });
    await page.type('#filter-name', tag);
    await page.select('#filter-state', 'attention');
    await page.waitForFunction("document.querySelectorAll('table.services tbody tr[data-service-id]').length === 2");
    const shown = await page.$$eval('table.services tbody tr[data-service-id]', (rows) => rows.map((r) => r.getAttribute('data-service-id')).sort());
    expect(shown).toEqual([cart.svc.id, jobs.svc.id].sort());
    await waitForText(page, '#service-count', '2 of ');

    // Keyboard alone: Tab from the state filter reaches the first service link; Enter opens it.
    await page.focus('#filter-state');
    const firstLink = await page.$eval('table.services tbody a', (a) => a.getAttribute('href'));
    for (let i = 0; i < 10 && await inPage(page, "document.activeElement?.closest('table.services') === null"); i++) await page.keyboard.press('Tab');
    expect(await focused(page)).toBe(firstLink);
    await page.keyboard.press('Enter');
    await page.waitForFunction(`location.hash === ${JSON.stringify(firstLink)}`);
    await waitForAttribute(page, '#live-mode', 'data-live', 'live');
  });

  it('a service page draws target nodes × replica slots and turns the grid from pending to succeeded live, without a reload', async () => {
    const { svc, plan, name } = await promotedService(stage, 'grid');
    const cp = await open();
    const { page } = cp;
    await signedIn(cp, stage.base, stage.admin, `#/services/${svc.id}`);
    await waitForText(page, '#view h1', name);
    await waitForAttribute(page, '#live-mode', 'data-live', 'live');
    await waitForGrid(page, { 'node-a#1': 'missing', 'node-a#2': 'missing', 'node-b#1': 'missing', 'node-b#2': 'missing' });
    expect(await page.$$eval('table.grid thead th', (ths) => ths.map((th) => th.textContent))).toEqual(['Node', 'Slot 1', 'Slot 2', 'Not counted']);
    expect(await page.$$eval('table.grid tbody th', (ths) => ths.map((th) => th.textContent))).toEqual(NODES);
    await waitForText(page, '#blocking-list', "no reporter covers node 'node-b'");
    await inPage(page, 'window.notReloaded = true');

    // Scheduled and starting: not healthy yet.
    await report(stage, plan, svc.id, [
      verifiedReplica(plan, svc.id, 'node-a', 0, { status: 'starting', evidence: null }),
      verifiedReplica(plan, svc.id, 'node-a', 1, { status: 'starting', evidence: null }),
    ], ['node-a']);
    await waitForGrid(page, { 'node-a#1': 'pending', 'node-a#2': 'pending', 'node-b#1': 'missing' });
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'deploying');

    // Running, no evidence yet: healthy but not verified.
    await report(stage, plan, svc.id, [
      verifiedReplica(plan, svc.id, 'node-a', 0, { evidence: null }), verifiedReplica(plan, svc.id, 'node-a', 1),
    ], ['node-a']);
    await waitForGrid(page, { 'node-a#1': 'progress', 'node-a#2': 'verified', 'node-b#1': 'missing' });
    expect(await cellLabel(page, 'node-a#1'))
      .toMatch(/^node-a, slot 1: healthy, not verified yet; reason runtime-attestation-missing; deployment node-a-task-0 \(running\); evidence \d+ s old/);

    // Everything verified everywhere: succeeded.
    await report(stage, plan, svc.id, fullReplicas(plan, svc.id, NODES));
    await waitForGrid(page, { 'node-a#1': 'verified', 'node-a#2': 'verified', 'node-b#1': 'verified', 'node-b#2': 'verified' });
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'succeeded');
    await waitForText(page, '#blocking-list', 'Nothing blocks this rollout.');
    await waitForText(page, '#status', 'Rollout succeeded: 4 of 4 replicas verified.');
    expect(await cellLabel(page, 'node-b#2'))
      .toMatch(/^node-b, slot 2: verified and healthy; deployment node-b-task-1 \(running\); evidence \d+ s old \(reporter c1\/coreflow-c1\)$/);
    expect(await inPage(page, 'window.notReloaded')).toBe(true);
    // Live over the stream: one EventSource, and the view was read once per change, not on a timer.
    expect(cp.requests.filter((r) => r.url.includes('/rollout/events')).length).toBe(1);
  });

  it('marks a mismatched replica distinctly with its upstream reason in the label; extras sit beside the slots; arrow keys move', async () => {
    const { svc, plan } = await promotedService(stage, 'mixed');
    await report(stage, plan, svc.id, [
      verifiedReplica(plan, svc.id, 'node-a', 0),
      verifiedReplica(plan, svc.id, 'node-a', 1, { evidence: { resolvedDigest: `sha256:${'f'.repeat(64)}` } }),
      verifiedReplica(plan, svc.id, 'node-b', 0, { status: 'failed' }),
      verifiedReplica(plan, svc.id, 'node-b', 1, { status: 'starting', evidence: null }),
      verifiedReplica(plan, svc.id, 'node-b', 2),
    ]);
    const cp = await open();
    const { page } = cp;
    await signedIn(cp, stage.base, stage.admin, `#/services/${svc.id}`);
    // node-b runs three tasks: the server counts the two best (task 0, task 2), task 1 is an extra.
    await waitForGrid(page, {
      'node-a#1': 'verified', 'node-a#2': 'mismatched', 'node-b#1': 'failed', 'node-b#2': 'verified', 'node-b+node-b-task-1': 'pending',
    });
    const label = await cellLabel(page, 'node-a#2');
    // With the digest the replica runs instead (from its evidence).
    expect(label).toMatch(new RegExp('^node-a, slot 2: mismatched, does not run the planned digest; reason pulled-digest-mismatch; ' +
      `runs sha256:${'f'.repeat(64)}; deployment node-a-task-1 \\(running\\); evidence \\d+ s old`));
    // The tooltip says the same (read together: the label's "evidence N s old" moves on with the clock between two reads).
    const both = await page.$eval('[data-key="node-a#2"]', (b) => ({ label: b.getAttribute('aria-label'), title: b.getAttribute('title') }));
    expect(both.title).toBe(both.label);
    // Not by colour alone: each state has its own mark.
    const marks = await page.$$eval('#grid button.cell', (bs) => Object.fromEntries(bs.map((b) => [b.getAttribute('data-state'), b.textContent])));
    expect(marks).toEqual({ verified: '✓', mismatched: '≠', failed: '✕', pending: '○' });
    expect(await cellLabel(page, 'node-b+node-b-task-1'))
      .toContain('extra replica 1: not healthy yet (starting); reason runtime-attestation-missing; deployment node-b-task-1 (starting); not counted');
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'mismatched');
    await waitForText(page, '#blocking-list', "replica 'node-a-task-1' on node 'node-a' does not run the planned digest: pulled-digest-mismatch");
    await screenshot(page, 'console-service');
    // WCAG AA: every mark, badge, legend entry and fact on the page at 4.5:1 or more.
    const contrast = await textContrast(page, '#grid .cell .mark, .badge, .legend li, #rollout-summary dt, #rollout-summary dd, #abort, #live-mode');
    expect(contrast.length).toBeGreaterThan(15);
    expect(contrast.filter((c) => c.ratio < 4.5)).toEqual([]);

    // One tab stop for the grid; arrows, Home and End move; the detail line reads the focused cell.
    await page.click('[data-key="node-a#1"]');
    await page.keyboard.press('ArrowRight');
    expect(await focused(page)).toBe('node-a#2');
    await waitForText(page, '#cell-detail', label.split(';')[0] ?? label);
    await page.keyboard.press('ArrowDown');
    expect(await focused(page)).toBe('node-b#2');
    await page.keyboard.press('End');
    expect(await focused(page)).toBe('node-b+node-b-task-1');
    await page.keyboard.press('Home');
    expect(await focused(page)).toBe('node-b#1');
    expect(await page.$$eval('#grid button.cell[tabindex="0"]', (bs) => bs.map((b) => b.getAttribute('data-key')))).toEqual(['node-b#1']);
  });

  it('falls back to polling the view every 2 s when the event stream keeps failing, and the grid stays live', async () => {
    const { svc, plan } = await promotedService(stage, 'polling');
    const cp = await open();
    const { page } = cp;
    await page.setRequestInterception(true);
    page.on('request', (request) => {
      if (request.url().includes('/rollout/events')) void request.abort('failed');
      else void request.continue();
    });
    await signedIn(cp, stage.base, stage.admin, `#/services/${svc.id}`);
    await waitForAttribute(page, '#live-mode', 'data-live', 'polling');
    await waitForText(page, '#live-mode', 'checking every 2 s');
    expect(cp.requests.filter((r) => r.url.includes('/rollout/events'))).toHaveLength(3);
    await report(stage, plan, svc.id, fullReplicas(plan, svc.id, NODES));
    await waitForGrid(page, { 'node-a#1': 'verified', 'node-a#2': 'verified', 'node-b#1': 'verified', 'node-b#2': 'verified' });
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'succeeded');
  });
});
