import type { HTTPRequest } from 'puppeteer-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { bearer, promote } from '../../support/fixtures.js';
import { fullReplicas } from '../../support/reports.js';
import { screenshot, signedIn, waitForAttribute, waitForGrid, waitForText, type ConsolePage } from './browser.js';
import { consoleHarness } from './harness.js';
import { NODES, currentPlan, history, promotedService, report, type PromotedService } from './stage.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// Promote, roll back and abort from the console in a real browser against a real server process.
describe('console actions in a browser', () => {
  const harness = consoleHarness();
  let stage: typeof harness.stage;
  beforeEach(() => { stage = harness.stage; });

  /** A promoted service (v1 at generation 1, v2 observed) open in the console, live. */
  async function openService (prefix: string, before?: (s: PromotedService) => Promise<void>): Promise<PromotedService & { cp: ConsolePage }> {
    const s = await promotedService(stage, prefix);
    await before?.(s);
    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, `#/services/${s.svc.id}`);
    await waitForAttribute(cp.page, '#live-mode', 'data-live', 'live');
    await cp.page.waitForSelector(`tr[data-release-id="${s.releases.b}"] button[data-action="promote"]`);
    return { ...s, cp };
  }

  const postsTo = (cp: ConsolePage, suffix: string) => cp.requests.filter((r) => r.method === 'POST' && r.url.endsWith(suffix));

  it('promotes a release with an Idempotency-Key and the state on screen: one rollout even when both buttons are double-clicked', async () => {
    const s = await openService('promote');
    const { page } = s.cp;
    expect(await history(stage, s.svc.id)).toHaveLength(1);
    await page.click(`tr[data-release-id="${s.releases.b}"] button[data-action="promote"]`, { count: 2 });
    await page.waitForSelector('#action-dialog[open]');
    await waitForText(page, '#action-expect', `Expected generation1Expected current rollout${s.plan.rolloutId}`);
    await page.type('#action-reason', 'ship v2 from the console');
    await page.click('#action-confirm', { count: 2 });
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');

    const rollouts = await history(stage, s.svc.id);
    expect(rollouts).toHaveLength(2);
    expect(rollouts[0]).toMatchObject({
      generation: 2, mode: 'promotion', releaseId: s.releases.b, reason: 'ship v2 from the console', issuedBy: { subject: 'ops-admin' },
    });
    const posts = postsTo(s.cp, `/image-releases/${s.releases.b}/promote`);
    expect(posts).toHaveLength(1);
    expect(posts[0]?.headers['idempotency-key']).toMatch(UUID);
    expect(JSON.parse(posts[0]?.body ?? '')).toEqual({
      expectedRolloutGeneration: 1, expectedCurrentRolloutId: s.plan.rolloutId, enableImmutableImage: true, reason: 'ship v2 from the console',
    });
    // The page follows the new rollout at once: its release, a fresh grid, the history.
    await waitForText(page, '#status', `Promoted ${s.releases.b}: rollout ${rollouts[0]?.rolloutId} (generation 2) issued.`);
    await waitForText(page, '#rollout-summary', s.releases.b);
    await waitForGrid(page, { 'node-a#1': 'missing', 'node-b#2': 'missing' });
    await page.waitForSelector(`#history-list tr[data-rollout-id="${rollouts[0]?.rolloutId}"]`);
  });

  it('rolls back from the page to a release promoted before, and shows the automation hold', async () => {
    let second = '';
    const s = await openService('rollback', async (svc) => {
      const res = await promote(stage.api, stage.releaser, svc.svc.id, svc.releases.b, { generation: 1, currentRolloutId: svc.plan.rolloutId });
      expect(res.statusCode, res.body).toBe(200);
      second = res.json().service.data.imageDeployment.rolloutId;
    });
    const { page } = s.cp;
    // Offered only where the server accepts it: an accepted release that is not deployed now.
    await page.waitForSelector(`tr[data-release-id="${s.releases.a}"] button[data-action="rollback"]`);
    expect(await page.$(`tr[data-release-id="${s.releases.b}"] button[data-action="rollback"]`)).toBeNull();
    await page.click(`tr[data-release-id="${s.releases.a}"] button[data-action="rollback"]`);
    await page.waitForSelector('#action-dialog[open]');
    // v1 was promoted but never reported: a rollback to it must be acknowledged (consolePolish.test.ts).
    await page.click('#action-ack-box');
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');

    const rollouts = await history(stage, s.svc.id);
    expect(rollouts).toHaveLength(3);
    expect(rollouts[0]).toMatchObject({ generation: 3, mode: 'rollback', releaseId: s.releases.a, rollbackOfRolloutId: second, automationHold: 'set' });
    const posts = postsTo(s.cp, `/image-releases/${s.releases.a}/rollback`);
    expect(posts).toHaveLength(1);
    expect(posts[0]?.headers['idempotency-key']).toMatch(UUID);
    expect(JSON.parse(posts[0]?.body ?? '')).toEqual({ expectedRolloutGeneration: 2, expectedCurrentRolloutId: second });
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'rolling-back');
    await waitForText(page, '#rollout-summary', 'on hold since a rollback by ops-admin');
  });

  it('shows a conflict plainly when someone else changed the rollout underneath, and changes nothing', async () => {
    const s = await openService('conflict');
    const { page } = s.cp;
    await page.click(`tr[data-release-id="${s.releases.b}"] button[data-action="promote"]`);
    await page.waitForSelector('#action-dialog[open]');
    // While the operator reads the dialog, CI promotes.
    const theirs = await promote(stage.api, stage.releaser, s.svc.id, s.releases.b, { generation: 1, currentRolloutId: s.plan.rolloutId, reason: 'CI' });
    expect(theirs.statusCode, theirs.body).toBe(200);
    const theirRollout = theirs.json().service.data.imageDeployment.rolloutId;
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'failed-reload');
    await waitForText(page, '#action-error',
      `Someone else changed the rollout: it is now generation 2 (rollout ${theirRollout}), you were looking at generation 1. Nothing was changed.`);
    await waitForText(page, '#action-error', 'rollout-generation-conflict, HTTP 409, request id ');
    expect(await page.$eval('#action-confirm', (b) => b.hidden)).toBe(true);
    expect(await history(stage, s.svc.id)).toHaveLength(2);
    await screenshot(page, 'console-conflict');
    await page.click('#action-error button');
    await page.waitForSelector('#action-dialog:not([open])');
    await waitForText(page, '#rollout-summary', theirRollout);
  });

  it('retries after a lost answer with the same Idempotency-Key and body: the server replays, still one rollout', async () => {
    const s = await openService('retry');
    const { page } = s.cp;
    await page.setRequestInterception(true);
    let lost = 0;
    const replayed: string[] = [];
    page.on('request', (request: HTTPRequest) => {
      if (!(request.method() === 'POST' && request.url().endsWith('/promote') && lost++ === 0)) {
        void request.continue();
        return;
      }
      // The request reaches the server and is applied; its answer never reaches the browser.
      void (async () => {
        const sent = request.headers();
        const headers = { authorization: sent['authorization'] ?? '', 'content-type': 'application/json', 'idempotency-key': sent['idempotency-key'] ?? '' };
        await fetch(request.url(), { method: 'POST', headers, body: request.postData() ?? '' });
        await request.abort('connectionreset');
      })();
    });
    page.on('response', (res) => { if (res.url().endsWith('/promote')) replayed.push(res.headers()['idempotent-replayed'] ?? 'false'); });
    await page.click(`tr[data-release-id="${s.releases.b}"] button[data-action="promote"]`);
    await page.waitForSelector('#action-dialog[open]');
    await page.type('#action-reason', 'first try');
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'failed-retry');
    await waitForText(page, '#action-error', 'No answer from the server');
    expect(await page.$eval('#action-confirm', (b) => [b.textContent, b.disabled])).toEqual(['Retry (same Idempotency-Key)', false]);
    expect(await page.$eval('#action-reason', (i: { readOnly: boolean }) => i.readOnly)).toBe(true);
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');

    const posts = postsTo(s.cp, `/image-releases/${s.releases.b}/promote`);
    expect(posts).toHaveLength(2);
    expect(posts[1]?.headers['idempotency-key']).toBe(posts[0]?.headers['idempotency-key']);
    expect(posts[1]?.body).toBe(posts[0]?.body);
    expect(replayed).toEqual(['true']);
    expect(await history(stage, s.svc.id)).toHaveLength(2);
    expect((await currentPlan(stage, s.svc.id)).releaseId).toBe(s.releases.b);
  });

  it('on a rollout that succeeded, the abort button says what it does: a rollback to the last verified release', async () => {
    const s = await openService('abort-after-success', async (svc) => {
      await report(stage, svc.plan, svc.svc.id, fullReplicas(svc.plan, svc.svc.id, NODES));
    });
    const { page } = s.cp;
    await waitForText(page, '#abort', 'Roll back to the last verified release…');
    expect(await page.$eval('#abort', (b) => b.getAttribute('title'))).toContain('This rollout succeeded');
  });

  it('aborts from the page: the server rolls back to the last verified release; the page and the history name it an abort', async () => {
    let second = '';
    const s = await openService('abort', async (svc) => {
      await report(stage, svc.plan, svc.svc.id, fullReplicas(svc.plan, svc.svc.id, NODES));
      const res = await promote(stage.api, stage.releaser, svc.svc.id, svc.releases.b, { generation: 1, currentRolloutId: svc.plan.rolloutId });
      expect(res.statusCode, res.body).toBe(200);
      second = res.json().service.data.imageDeployment.rolloutId;
    });
    const { page } = s.cp;
    await page.click('#abort', { count: 2 });
    await page.waitForSelector('#action-dialog[open]');
    expect(await page.$eval('#action-confirm', (b) => b.textContent)).toBe('Abort rollout');
    await waitForText(page, '#action-summary', `Rolls back rollout ${second} to the last release that was verified on every target node.`);
    await waitForText(page, '#action-expect', `Expected generation2Expected current rollout${second}`);
    await page.type('#action-reason', 'v2 looks wrong');
    await page.click('#action-confirm', { count: 2 });
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');

    const rollouts = await history(stage, s.svc.id);
    expect(rollouts.map((r) => r['generation'])).toEqual([3, 2, 1]);
    expect(rollouts[0]).toMatchObject({
      mode: 'rollback',
      releaseId: s.releases.a,
      rollbackOfRolloutId: second,
      trigger: { kind: 'abort' },
      reason: 'v2 looks wrong',
      issuedBy: { subject: 'ops-admin' },
    });
    expect(rollouts[1]).toMatchObject({ rolloutId: second, outcome: 'aborted', endedBy: { kind: 'aborted', rolloutId: rollouts[0]?.['rolloutId'] } });
    const posts = postsTo(s.cp, '/rollout/abort');
    expect(posts).toHaveLength(1);
    expect(posts[0]?.headers['idempotency-key']).toMatch(UUID);
    expect(JSON.parse(posts[0]?.body ?? '')).toEqual({ expectedRolloutGeneration: 2, expectedCurrentRolloutId: second, reason: 'v2 looks wrong' });

    // The page follows the rollback: what it is, why the server issued it, and the aborted rollout's outcome.
    const abortId = String(rollouts[0]?.['rolloutId']);
    await waitForText(page, '#status', `Aborted: rollout ${abortId} (generation 3) issued.`);
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'rolling-back');
    await waitForText(page, '#rollout-trigger', `abort of ${second}`);
    await waitForText(page, '#rollout-summary', s.releases.a);
    await waitForAttribute(page, `#history-list tr[data-rollout-id="${abortId}"]`, 'data-trigger', 'abort');
    await waitForText(page, `#history-list tr[data-rollout-id="${abortId}"]`, `rollback (abort of ${second})`);
    await waitForText(page, `#history-list tr[data-rollout-id="${second}"] td.outcome`, `aborted by ${abortId}`);
    await report(stage, await currentPlan(stage, s.svc.id), s.svc.id, fullReplicas(await currentPlan(stage, s.svc.id), s.svc.id, NODES));
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'rolled-back');
    await waitForText(page, '#lifecycle-succeeded', 'Rolled back');
  });

  it('abort answered with a conflict when someone else aborted first: said plainly, nothing changed, one abort in the history', async () => {
    let second = '';
    const s = await openService('abort-conflict', async (svc) => {
      await report(stage, svc.plan, svc.svc.id, fullReplicas(svc.plan, svc.svc.id, NODES));
      const res = await promote(stage.api, stage.releaser, svc.svc.id, svc.releases.b, { generation: 1, currentRolloutId: svc.plan.rolloutId });
      expect(res.statusCode, res.body).toBe(200);
      second = res.json().service.data.imageDeployment.rolloutId;
    });
    const { page } = s.cp;
    await page.click('#abort');
    await page.waitForSelector('#action-dialog[open]');
    // While the operator reads the dialog, another operator aborts with the CLI.
    const theirs = await stage.api.inject({
      method: 'POST',
      url: `/v1/services/${s.svc.id}/rollout/abort`,
      headers: { ...bearer(stage.admin), 'idempotency-key': `cli-${second}` },
      payload: { expectedRolloutGeneration: 2, expectedCurrentRolloutId: second, reason: 'CLI' },
    });
    expect(theirs.statusCode, theirs.body).toBe(200);
    const theirRollout = theirs.json().service.data.imageDeployment.rolloutId;
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'failed-reload');
    await waitForText(page, '#action-error',
      `Someone else changed the rollout: it is now generation 3 (rollout ${theirRollout}), you were looking at generation 2. Nothing was changed.`);
    await waitForText(page, '#action-error', 'HTTP 409, request id ');
    expect(await page.$eval('#action-confirm', (b) => b.hidden)).toBe(true);
    const posts = postsTo(s.cp, '/rollout/abort');
    expect(posts).toHaveLength(1);
    expect(posts[0]?.headers['idempotency-key']).toMatch(UUID);
    const rollouts = await history(stage, s.svc.id);
    expect(rollouts.map((r) => [r['generation'], r['reason']])).toEqual([[3, 'CLI'], [2, 'manual promotion'], [1, 'first release']]);
    await page.click('#action-error button'); // Reload
    await page.waitForSelector('#action-dialog:not([open])');
    await waitForText(page, '#rollout-trigger', `abort of ${second}`);
  });

  it('abort with nothing to return to: the server\'s refusal (409 no-verified-release) said plainly; nothing changed', async () => {
    const s = await openService('abort-none');
    const { page } = s.cp;
    await page.click('#abort');
    await page.waitForSelector('#action-dialog[open]');
    await page.click('#action-confirm');
    await waitForAttribute(page, '#action-dialog', 'data-state', 'failed-close');
    await waitForText(page, '#action-error', `There is no verified release to return to: service '${s.svc.id}' has no release that succeeded before, ` +
      'other than the one deployed now: nothing to abort to');
    await waitForText(page, '#action-error', 'no-verified-release, HTTP 409, request id ');
    expect(await page.$eval('#action-confirm', (b) => b.hidden)).toBe(true);
    const posts = postsTo(s.cp, '/rollout/abort');
    expect(posts).toHaveLength(1);
    expect(posts[0]?.headers['idempotency-key']).toMatch(UUID);
    expect(JSON.parse(posts[0]?.body ?? '')).toEqual({ expectedRolloutGeneration: 1, expectedCurrentRolloutId: s.plan.rolloutId });
    expect(await history(stage, s.svc.id)).toHaveLength(1);
  });
});
