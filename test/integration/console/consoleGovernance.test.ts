import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../../src/domain/tokens.js';
import type { Role } from '../../../src/domain/principal.js';
import { serviceData } from '../../support/app.js';
import { bearer, promote, pushRelease, registryHost, type FixtureService } from '../../support/fixtures.js';
import { screenshot, signedIn, textContrast, waitForAttribute, waitForText, type ConsolePage } from './browser.js';
import { consoleHarness } from './harness.js';
import { history, namedService } from './stage.js';

// Governance in the console (docs/console.md "Governance"), in a real browser against a real server process:
// the stop-the-line banner on every page, and a service's promotion requests approved by distinct principals.
describe('governance in the console', () => {
  const harness = consoleHarness();
  let stage: typeof harness.stage;
  beforeEach(() => { stage = harness.stage; });

  /** A token for a principal of its own (the console's approvals are told apart by subject). */
  const tokenFor = (subject: string, role: Role): Promise<string> => mintToken({ kind: 'secret', secret: stage.secret }, { subject, role });

  const approvals = { required: 2, approvers: [{ role: 'admin' }, { role: 'api' }], requestTtlSeconds: 3600 };

  /** A service on c1 with this promotion policy; `payload` is what created it (PUT it back changed to change the policy). */
  async function governedService (prefix: string, promotionPolicy: Record<string, unknown>) {
    const name = `${prefix}-${randomBytes(3).toString('hex')}`;
    const svc: FixtureService = { id: '', repository: `team/${name}` };
    const payload = serviceData({
      name,
      registryTarget: { protocol: 'oci', registryHost, repository: svc.repository },
      placement: { clusterIds: ['c1'], replicasPerNode: 2 },
      promotionPolicy,
    });
    const res = await stage.api.inject({ method: 'POST', url: '/v1/services', headers: bearer(stage.admin), payload });
    expect(res.statusCode, res.body).toBe(201);
    svc.id = res.json().service.id;
    return { svc, name, payload };
  }

  const setStopTheLine = async (stopTheLine: Record<string, unknown>) => {
    const res = await stage.api.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(stage.admin), payload: { governance: { stopTheLine } } });
    expect(res.statusCode, res.body).toBe(200);
  };

  /** Signs the page out and in again with another principal's token, pasted into the form as an operator does. */
  async function switchTo (cp: ConsolePage, jwt: string, hash: string, who: string) {
    await cp.page.click('#logout');
    await cp.page.waitForSelector('#login', { visible: true });
    await signedIn(cp, stage.base, jwt, hash);
    await waitForText(cp.page, '#identity', `Signed in as ${who}`);
  }

  const requestRow = (requestId: string) => `#requests-list tr[data-request-id="${requestId}"]`;
  const approveOnPage = async (page: ConsolePage['page'], requestId: string) => {
    const button = await page.waitForSelector(`${requestRow(requestId)} button[data-action="approve"]:not([disabled])`);
    await button?.click();
  };

  it('a promotion from the console that needs approvals makes a request; the requester cannot approve it, two others issue the rollout', async () => {
    const [rita, alice, bob] = await Promise.all([tokenFor('rita', 'api'), tokenFor('alice', 'admin'), tokenFor('bob', 'api')]);
    const { svc } = await governedService('approvals', { approvals });
    const a = await pushRelease(stage.api, stage.releaser, svc, { tag: 'v1' });
    const hash = `#/services/${svc.id}`;

    const cp = await harness.open();
    const { page } = cp;
    await signedIn(cp, stage.base, rita, hash);
    await waitForText(page, '#requests-list', 'No promotion requests');
    await page.click(`tr[data-release-id="${a.releaseId}"] button[data-action="promote"]`);
    await page.waitForSelector('#action-dialog[open]');
    await page.type('#action-reason', 'ship v1');
    await page.click('#action-confirm');
    // 202 approval-required is not a failure: the dialog closes, the page says a request was made and lists it.
    await waitForAttribute(page, '#action-dialog', 'data-state', 'done');
    await waitForText(page, '#requests-note', 'Promotion request pr_');
    await waitForText(page, '#requests-note', '2 approvals from other principals needed');
    const row = await page.waitForSelector('#requests-list tbody tr');
    const requestId = (await row?.evaluate((tr) => tr.getAttribute('data-request-id'))) ?? '';
    expect(requestId).toMatch(/^pr_/);
    const cells = async () => page.$eval(requestRow(requestId), (tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent));
    expect(await cells()).toEqual([requestId, a.releaseId, 'pending', 'rita (api)ship v1', '0 / 2', expect.stringMatching(/^in (1 h|59 min)/), 'Approve']);
    expect(await history(stage, svc.id)).toHaveLength(0);

    // The requester's own approval is refused, and the page says why in the server's words.
    await approveOnPage(page, requestId);
    await waitForText(page, '#requests-error', 'the requester can never approve their own request');
    await waitForText(page, '#requests-error', 'approval-not-allowed, self-approval, HTTP 403');
    expect(await cells()).toContain('0 / 2');

    await switchTo(cp, alice, hash, 'alice (admin)');
    await approveOnPage(page, requestId);
    await waitForText(page, '#requests-note', `Approved ${requestId}: 1 of 2 approvals.`);
    await waitForText(page, `${requestRow(requestId)} td.approvals`, '1 / 2');
    expect(await page.$eval('#requests-error', (el) => el.hidden)).toBe(true);
    expect(await history(stage, svc.id)).toHaveLength(0);

    // The second distinct approver completes the quorum: the rollout is issued and the page follows it.
    await switchTo(cp, bob, hash, 'bob (api)');
    await waitForText(page, '#rollout-summary', 'No rollout yet');
    await approveOnPage(page, requestId);
    const rollouts = await (async () => {
      await waitForAttribute(page, requestRow(requestId), 'data-state', 'issued');
      return history(stage, svc.id);
    })();
    expect(rollouts).toHaveLength(1);
    expect(rollouts[0]).toMatchObject({ generation: 1, mode: 'promotion', releaseId: a.releaseId });
    await waitForText(page, '#requests-note', `rollout ${rollouts[0]?.rolloutId} issued`);
    await waitForText(page, '#rollout-summary', a.releaseId);
    await waitForText(page, '#rollout-summary', rollouts[0]?.rolloutId ?? '');
    await page.waitForSelector(`#history-list tr[data-rollout-id="${rollouts[0]?.rolloutId}"]`);
    expect(await page.$(`${requestRow(requestId)} button[data-action="approve"]`)).toBeNull();
    const approvalPosts = cp.requests.filter((r) => r.method === 'POST' && r.url.endsWith(`/promotion-requests/${requestId}/approve`));
    expect(approvalPosts.map((r) => r.headers['authorization'])).toEqual([`Bearer ${rita}`, `Bearer ${alice}`, `Bearer ${bob}`]);
  });

  it('stop-the-line: a banner on every page (who, since when, why; rollbacks and aborts still go), gone when it is off', async () => {
    const upstream = await namedService(stage, 'shop-staging');
    const { svc, payload } = await governedService('shop-prod', { approvals });
    const a = await pushRelease(stage.api, stage.releaser, svc, { tag: 'v1' });
    const requested = await promote(stage.api, stage.releaser, svc.id, a.releaseId, { generation: 0, reason: 'first release of shop' });
    expect(requested.statusCode, requested.body).toBe(202);
    const requestId = requested.json().promotionRequest.requestId as string;
    // The pipeline comes after the request (a stage not yet passed would refuse the promotion before approvals are asked).
    const pipeline = { requires: [{ serviceId: upstream.svc.id, soakSeconds: 3600 }] };
    const updated = await stage.api.inject({
      method: 'PUT', url: `/v1/services/${svc.id}`, headers: bearer(stage.admin), payload: { ...payload, promotionPolicy: { approvals, pipeline } },
    });
    expect(updated.statusCode, updated.body).toBe(200);

    const cp = await harness.open();
    const { page } = cp;
    await signedIn(cp, stage.base, stage.admin, '#/');
    await waitForAttribute(page, '#stop-the-line', 'data-active', 'false');
    expect(await page.$eval('#stop-the-line', (el) => el.hidden)).toBe(true);

    const reason = 'incident 4711: payments degraded';
    await setStopTheLine({ active: true, reason });
    try {
      // Read again on navigation: the service page shows it without a reload.
      await page.evaluate(`location.hash = ${JSON.stringify(`#/services/${svc.id}`)}`);
      await waitForAttribute(page, '#stop-the-line', 'data-active', 'true');
      const banner = await page.$eval('#stop-the-line', (el) => ({ text: el.textContent ?? '', hidden: el.hidden }));
      expect(banner.hidden).toBe(false);
      expect(banner.text).toContain('Stop-the-line: every promotion of every service is refused.');
      expect(banner.text).toContain('Switched on by ops-admin since ');
      expect(banner.text).toMatch(/\(\d+ s ago\)/);
      expect(banner.text).toMatch(new RegExp(`ago\\): ${reason}`));
      expect(banner.text).toContain('Rollbacks and aborts still go through.');
      for (const { text, ratio } of await textContrast(page, '#stop-the-line, #stop-the-line *')) expect(ratio, text).toBeGreaterThanOrEqual(4.5);

      // The screenshot: the banner over a service page with its pending request and its pipeline.
      await waitForText(page, requestRow(requestId), 'first release of shop');
      await waitForText(page, '#pipeline-stages', upstream.name);
      const stage1 = await page.$eval(`#pipeline-stages li[data-stage="${upstream.svc.id}"]`, (li) => ({
        text: li.textContent, href: li.querySelector('a')?.getAttribute('href'),
      }));
      expect(stage1).toEqual({ text: `${upstream.name} ${upstream.svc.id} — soak 1 h after success`, href: `#/services/${upstream.svc.id}` });
      await page.evaluate("document.getElementById('requests').scrollIntoView({ block: 'center' })");
      await screenshot(page, 'console-governance');

      // And on a fresh load of the overview.
      await page.goto(`${stage.base}/console/#/`);
      await waitForAttribute(page, '#stop-the-line', 'data-active', 'true');
    } finally {
      await setStopTheLine({ active: false });
    }
    // The overview lists the services once its read answered (slow on a loaded machine): wait for the link.
    const link = `a[href="#/services/${svc.id}"]`;
    await page.waitForSelector(link, { timeout: 30_000 });
    await page.click(link);
    await waitForAttribute(page, '#stop-the-line', 'data-active', 'false');
    expect(await page.$eval('#stop-the-line', (el) => ({ hidden: el.hidden, text: el.textContent }))).toEqual({ hidden: true, text: '' });
  });
});
