import { describe, expect, it } from 'vitest';
import { bearer, promote, pushRelease } from '../../support/fixtures.js';
import { fullReplicas } from '../../support/reports.js';
import { signedIn, waitForAttribute, waitForGrid, waitUntil, type ConsolePage } from './browser.js';
import { consoleHarness } from './harness.js';
import { NODES, currentPlan, history, promotedService, report } from './stage.js';

// Issue 23 "operator polish" in a real browser against a real server process: the evidence age stays
// true while the agent keeps reporting, and a rollback to a release that never verified needs an explicit "I know".
describe('console polish', () => {
  const harness = consoleHarness();

  it('the evidence age stays small while fresh reports keep arriving, though they change no count (no status event)', async () => {
    const { stage } = harness;
    const s = await promotedService(stage, 'fresh');
    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, `#/services/${s.svc.id}`);
    await waitForAttribute(cp.page, '#live-mode', 'data-live', 'live');
    await report(stage, s.plan, s.svc.id, fullReplicas(s.plan, s.svc.id, NODES));
    await waitForGrid(cp.page, { 'node-a#1': 'verified', 'node-b#2': 'verified' });
    const firstReport = Date.now();

    // The agent goes on reporting the same replicas every 700 ms, as Coreflow does.
    const reporting = { on: true };
    const agent = (async () => {
      while (reporting.on) {
        await report(stage, s.plan, s.svc.id, fullReplicas(s.plan, s.svc.id, NODES));
        await new Promise((resolve) => setTimeout(resolve, 700));
      }
    })();
    try {
      // Ten seconds after the first report the page must still say the evidence is a few seconds old: it re-reads once
      // what it shows is 4 s old, and a report came at most 0.7 s before (a page that waits for status events shows 10 s and more).
      const label = "document.querySelector('#grid button.cell[data-key=\"node-a#1\"]')?.getAttribute('aria-label') ?? ''";
      await waitUntil(cp.page,
        `Date.now() >= ${firstReport + 10_000} && Number((/evidence (\\d+) s old/.exec(${label}) ?? [])[1] ?? 99) <= 6`,
        'the evidence age did not stay at most 6 s while reports kept arriving', label, 20_000);
    } finally {
      reporting.on = false;
      await agent;
    }
  });

  /** A service whose v1 succeeded, then v2 and v3 promoted without a report: v1 verified, v2 never. */
  async function withUnverifiedTarget () {
    const { stage } = harness;
    const s = await promotedService(stage, 'unverified');
    await report(stage, s.plan, s.svc.id, fullReplicas(s.plan, s.svc.id, NODES));
    const second = await promote(stage.api, stage.releaser, s.svc.id, s.releases.b, { generation: 1, currentRolloutId: s.plan.rolloutId });
    expect(second.statusCode, second.body).toBe(200);
    const c = await pushRelease(stage.api, stage.releaser, s.svc, { tag: 'v3' });
    const third = await promote(stage.api, stage.releaser, s.svc.id, c.releaseId, {
      generation: 2, currentRolloutId: second.json().service.data.imageDeployment.rolloutId,
    });
    expect(third.statusCode, third.body).toBe(200);
    return { ...s, c: c.releaseId };
  }

  const rollbackPosts = (cp: ConsolePage, releaseId: string) =>
    cp.requests.filter((r) => r.method === 'POST' && r.url.endsWith(`/image-releases/${releaseId}/rollback`));

  it('the releases list says which releases ever verified (lastSucceededAt), and the page marks a rollback target that never did', async () => {
    const { stage } = harness;
    const s = await withUnverifiedTarget();
    const page = await stage.api.inject({ method: 'GET', url: `/v1/services/${s.svc.id}/image-releases`, headers: bearer(stage.admin) });
    expect(page.statusCode, page.body).toBe(200);
    expect(Object.keys(page.json().lastSucceededAt)).toEqual([s.releases.a]);
    expect(page.json().lastSucceededAt[s.releases.a]).toEqual(expect.any(Number));

    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, `#/services/${s.svc.id}`);
    const row = (id: string) => `tr[data-release-id="${id}"]`;
    await cp.page.waitForSelector(`${row(s.releases.b)} button[data-action="rollback"]`);
    await cp.page.waitForSelector(`${row(s.releases.b)} [data-never-verified]`);
    expect(await cp.page.$eval(`${row(s.releases.b)} button[data-action="rollback"]`, (b) => b.getAttribute('aria-label'))).toMatch(/\(never verified\)$/);
    expect(await cp.page.$(`${row(s.releases.a)} button[data-action="rollback"]`)).not.toBeNull();
    expect(await cp.page.$(`${row(s.releases.a)} [data-never-verified]`)).toBeNull();

    // A verified target: no acknowledgement asked.
    await cp.page.click(`${row(s.releases.a)} button[data-action="rollback"]`);
    await cp.page.waitForSelector('#action-dialog[open]');
    expect(await cp.page.$eval('#action-ack', (el) => el.hasAttribute('hidden'))).toBe(true);
    expect(await cp.page.$eval('#action-confirm', (b) => b.hasAttribute('disabled'))).toBe(false);
    await cp.page.click('#action-cancel');
  });

  it('a rollback to a release that never verified is sent only once "I know this release never verified" is ticked', async () => {
    const { stage } = harness;
    const s = await withUnverifiedTarget();
    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, `#/services/${s.svc.id}`);
    const { page } = cp;
    const button = `tr[data-release-id="${s.releases.b}"] button[data-action="rollback"]`;
    await page.waitForSelector(button);
    await page.click(button);
    await page.waitForSelector('#action-dialog[open]');
    expect(await page.$eval('#action-ack', (el) => el.hasAttribute('hidden'))).toBe(false);
    expect(await page.$eval('#action-ack-label', (el) => el.textContent)).toBe('I know this release never verified');
    expect(await page.$eval('#action-summary', (el) => el.textContent)).toContain('never verified on the target nodes');
    expect(await page.$eval('#action-confirm', (b) => b.hasAttribute('disabled'))).toBe(true);
    // Enter in the reason field submits the form: without the tick it sends nothing (the tick and a confirm follow, and one request is counted).
    await page.type('#action-reason', 'back to v2');
    await page.keyboard.press('Enter');
    expect(await page.$eval('#action-dialog', (d) => d.getAttribute('data-state'))).toBe('open');

    await page.click('#action-ack-box');
    expect(await page.$eval('#action-confirm', (b) => b.hasAttribute('disabled'))).toBe(false);
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');
    expect(rollbackPosts(cp, s.releases.b)).toHaveLength(1);
    const [newest] = await history(stage, s.svc.id);
    expect(newest).toMatchObject({ generation: 4, mode: 'rollback', releaseId: s.releases.b, reason: 'back to v2' });
    expect((await currentPlan(stage, s.svc.id)).releaseId).toBe(s.releases.b);
  });
});
