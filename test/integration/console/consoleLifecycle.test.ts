import { beforeEach, describe, expect, it } from 'vitest';
import { promote, pushRelease } from '../../support/fixtures.js';
import { fullReplicas, verifiedReplica } from '../../support/reports.js';
import { cellLabel, screenshot, signedIn, waitForAttribute, waitForGrid, waitForText, type ConsolePage } from './browser.js';
import { consoleHarness } from './harness.js';
import { NODES, currentPlan, history, namedService, promotedService, report, type PromotedService } from './stage.js';

const WRONG = `sha256:${'f'.repeat(64)}`;
const CELLS = ['node-a#1', 'node-a#2', 'node-b#1', 'node-b#2'];
const all = (state: string): Record<string, string> => Object.fromEntries(CELLS.map((key) => [key, state]));

// The rollout lifecycle on a service page, in a real browser against a real server process whose
// lifecycle sweeper runs every 100 ms: the progress deadline counting down and failing a rollout,
// the stability window, an automatic rollback and a push queued behind a rollout.
describe('the rollout lifecycle in the console', () => {
  const harness = consoleHarness({ env: { LIFECYCLE_SWEEP_INTERVAL_MS: '100' } });
  let stage: typeof harness.stage;
  beforeEach(() => { stage = harness.stage; });

  async function openPage (serviceId: string): Promise<ConsolePage> {
    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, `#/services/${serviceId}`);
    await waitForAttribute(cp.page, '#live-mode', 'data-live', 'live');
    return cp;
  }

  const rolloutReads = (cp: ConsolePage): number => cp.requests.filter((r) => r.method === 'GET' && new URL(r.url).pathname.endsWith('/rollout')).length;

  it('counts the progress deadline down while the rollout is in progress, then shows the deadline\'s failure with its reason ' +
    '(summary, blocking list, history)', async () => {
    // Long enough for the page to open well before it on a busy machine, short enough to wait for.
    const s = await promotedService(stage, 'deadline', { rolloutPolicy: { progressDeadlineSeconds: 15 } });
    const cp = await openPage(s.svc.id);
    const { page } = cp;
    await waitForText(page, '#lifecycle-deadline', 'fails unless it progresses (15 s allowed without progress)');
    await waitForText(page, '#lifecycle-policy', 'progress deadline 15 s, stability window 0 s, automatic rollback off');
    const countdown = await page.$eval('#lifecycle-deadline time', (t) => t.textContent ?? '');
    expect(countdown).toMatch(/^in \d+ s$/);
    const first = Number(/\d+/.exec(countdown)?.[0]);
    expect(first).toBeLessThanOrEqual(15);
    // The countdown moves with the browser's clock, without another read (the stream stays open).
    await page.waitForNetworkIdle({ idleTime: 300, concurrency: 1 });
    const reads = rolloutReads(cp);
    await page.waitForFunction(`/in (\\d+) s/.exec(document.querySelector('#lifecycle-deadline time')?.textContent ?? '')?.[1] < ${first}`);
    expect(rolloutReads(cp)).toBe(reads);

    // Nothing reported: the sweeper fails it; the status event brings the page there.
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'failed', 30_000);
    await waitForText(page, '#lifecycle-failure', 'required-replica-missing — progress deadline exceeded: no progress for 15 s');
    expect(await page.$('#lifecycle-deadline')).toBeNull();
    await waitForText(page, '#blocking-list li[data-kind="progress-deadline-exceeded"]', 'no progress for 15 s');
    await waitForText(page, '#status', 'Rollout failed: 0 of 4 replicas verified.');
    await waitForText(page, `#history-list tr[data-rollout-id="${s.plan.rolloutId}"] td.outcome`, 'failed required-replica-missing (progress deadline)');
    const [entry] = await history(stage, s.svc.id);
    expect(entry).toMatchObject({ outcome: 'failed', failureReason: 'required-replica-missing', failedBy: 'deadline' });
    await screenshot(page, 'console-lifecycle');
  }, 60_000);

  it('a stability window: cells "not yet stable, N s of M s" count with the clock, then wait for the next report; ' +
    'the evidence age is the server\'s receipt time; the next report counts them', async () => {
    const s = await promotedService(stage, 'stability', { rolloutPolicy: { stabilityWindowSeconds: 5 } });
    const cp = await openPage(s.svc.id);
    const { page } = cp;
    // The reporter's clock is two minutes behind: its own times prove nothing, the server's receipt time counts.
    await report(stage, s.plan, s.svc.id, fullReplicas(s.plan, s.svc.id, NODES), NODES, { reportedAt: Date.now() - 120_000 });
    await waitForGrid(page, all('progress'));
    const label = await cellLabel(page, 'node-a#1');
    const held = /^node-a, slot 1: healthy and verified, not yet stable, (\d) s of 5 s; deployment node-a-task-0 \(running\); evidence (\d+) s old/.exec(label);
    expect(held, label).not.toBeNull();
    expect(Number(held?.[1])).toBeLessThanOrEqual(3);
    expect(Number(held?.[2])).toBeLessThan(60); // the receipt time, not the reporter's own (120 s ago)
    const unstable = "replica 'node-a-task-0' on node 'node-a' is not yet stable: running verified";
    await waitForText(page, '#blocking-list li[data-kind="replica-not-stable"]', unstable);
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'deploying');

    // The counter moves without a read (once the reads the report caused are done; the stream stays open);
    // once the window is over the cell waits for the next report. (Once the evidence is 4 s old the page
    // re-reads the view to keep its age true — consolePolish.test.ts — so only the first tick is read-free.)
    await page.waitForNetworkIdle({ idleTime: 300, concurrency: 1 });
    const reads = rolloutReads(cp);
    await page.waitForFunction(`document.querySelector('[data-key="node-a#1"]')?.getAttribute('aria-label') !== ${JSON.stringify(label)}`);
    expect(rolloutReads(cp)).toBe(reads);
    await page.waitForFunction("document.querySelector('[data-key=\"node-a#1\"]')?.getAttribute('aria-label')" +
      ".includes('healthy and verified, not yet stable, waiting for the next report')", { timeout: 10_000 });

    await report(stage, s.plan, s.svc.id, fullReplicas(s.plan, s.svc.id, NODES));
    await waitForGrid(page, all('verified'));
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'succeeded');
    await waitForText(page, '#lifecycle-succeeded', 'Succeeded');
    expect(await page.$('#lifecycle-deadline')).toBeNull();
    await waitForText(page, `#history-list tr[data-rollout-id="${s.plan.rolloutId}"] td.outcome`, 'succeeded');
  });

  /** v1 promoted and verified, then v2 promoted (generation 2), the page open on it. */
  async function verifiedThenPromoted (prefix: string, rolloutPolicy: Record<string, unknown>): Promise<PromotedService & { second: string }> {
    const s = await promotedService(stage, prefix, { rolloutPolicy });
    await report(stage, s.plan, s.svc.id, fullReplicas(s.plan, s.svc.id, NODES));
    const res = await promote(stage.api, stage.releaser, s.svc.id, s.releases.b, { generation: 1, currentRolloutId: s.plan.rolloutId });
    expect(res.statusCode, res.body).toBe(200);
    return { ...s, second: res.json().service.data.imageDeployment.rolloutId };
  }

  it('an automatic rollback: the mismatched rollout\'s outcome, the rollback the server issued and why; ' +
    'refused when there is nothing to return to', async () => {
    const s = await verifiedThenPromoted('autorb', { autoRollback: { enabled: true, triggers: ['mismatched'] } });
    const { page } = await openPage(s.svc.id);
    await waitForText(page, '#lifecycle-policy', 'automatic rollback on (mismatched)');
    const plan = await currentPlan(stage, s.svc.id);
    await report(stage, plan, s.svc.id, [
      verifiedReplica(plan, s.svc.id, 'node-a', 0),
      verifiedReplica(plan, s.svc.id, 'node-a', 1, { evidence: { resolvedDigest: WRONG } }),
    ], ['node-a']);
    await waitForText(page, '#rollout-trigger', `automatic rollback of ${s.second} (mismatched)`);
    await waitForAttribute(page, '#rollout-summary .badge', 'data-status', 'rolling-back');
    await waitForText(page, '#rollout-summary', s.releases.a);
    const [rollback] = await history(stage, s.svc.id);
    expect(rollback).toMatchObject({ generation: 3, mode: 'rollback', releaseId: s.releases.a, trigger: { kind: 'automatic-rollback', cause: 'mismatched' } });
    const rollbackId = String(rollback?.['rolloutId']);
    await waitForAttribute(page, `#history-list tr[data-rollout-id="${rollbackId}"]`, 'data-trigger', 'automatic-rollback');
    await waitForText(page, `#history-list tr[data-rollout-id="${s.second}"] td.outcome`, 'mismatched pulled-digest-mismatch');

    // Nothing verified before: the server cannot roll back and says so on the failed rollout.
    const lone = await promotedService(stage, 'autorb-none', { rolloutPolicy: { autoRollback: { enabled: true } } });
    const other = await openPage(lone.svc.id);
    await report(stage, lone.plan, lone.svc.id, [verifiedReplica(lone.plan, lone.svc.id, 'node-a', 0, { evidence: { resolvedDigest: WRONG } })], ['node-a']);
    await waitForAttribute(other.page, '#rollout-summary .badge', 'data-status', 'mismatched');
    await waitForText(other.page, '#lifecycle-auto-rollback', 'refused: no-verified-release');
    await waitForText(other.page, '#lifecycle-failure', 'pulled-digest-mismatch — mismatched by a report');
  });

  it('a push during a rollout waits behind it: the queued push is shown, and promotes automatically once the rollout settles', async () => {
    const { svc } = await namedService(stage, 'queued', { deployOnPush: true });
    const v1 = await pushRelease(stage.api, stage.releaser, svc, { tag: 'v1', observedAt: Date.now() - 60_000 });
    expect((await promote(stage.api, stage.releaser, svc.id, v1.releaseId, { generation: 0 })).statusCode).toBe(200);
    const first = await currentPlan(stage, svc.id);
    const v2 = await pushRelease(stage.api, stage.releaser, svc, { tag: 'v2' });
    expect(v2.body).toMatchObject({ autoPromotion: { outcome: 'queued' } });
    const { page } = await openPage(svc.id);
    await waitForText(page, '#lifecycle-queued', `v2 (${v2.releaseId}) promotes automatically once this rollout settles`);

    await report(stage, first, svc.id, fullReplicas(first, svc.id, NODES));
    await waitForText(page, '#rollout-trigger', `a push that waited for ${first.rolloutId} to settle`);
    await waitForText(page, '#rollout-summary', v2.releaseId);
    expect(await page.$('#lifecycle-queued')).toBeNull();
    const [promoted] = await history(stage, svc.id);
    expect(promoted).toMatchObject({
      generation: 2, mode: 'automatic', releaseId: v2.releaseId, trigger: { kind: 'deferred-promotion', afterRolloutId: first.rolloutId },
    });
    await waitForText(page, `#history-list tr[data-rollout-id="${first.rolloutId}"] td.outcome`, 'succeeded');
    await waitForAttribute(page, `#history-list tr[data-rollout-id="${String(promoted?.['rolloutId'])}"]`, 'data-trigger', 'deferred-promotion');
  });
});
