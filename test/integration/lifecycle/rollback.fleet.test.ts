import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { serviceData } from '../../support/app.js';
import {
  bearer, fullRolloutHistory, httpCaller, promote, pushRelease, registerCluster, registryHost, type Caller, type CallerResponse, type FixtureService,
} from '../../support/fixtures.js';
import { request, startFleet, type Fleet } from '../../support/fleet.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

/**
 * Abort and automatic rollback across three server processes. An automatic rollback fires once
 * per rollout however many reports see the failure, never for a rollback, and sets the
 * automation hold; it loses cleanly to a concurrent human action — with an abort and a
 * promotion racing it, exactly one new rollout is made.
 */
const SWEEP_MS = 200;
const CLUSTERS = 50;

function counterValue (exposition: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return exposition.split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && wanted.every((w) => l.includes(w)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe('abort and automatic rollback across 3 server processes', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;
  const clusterTokens = new Map<string, string>();

  const caller = (i: number): Caller => callers[i % callers.length]!;
  const scrapeAll = async (): Promise<string[]> => await Promise.all(fleet.servers.map(async (s) => (await request(s.url, { path: '/metrics' })).text));
  const sum = (texts: string[], name: string, labels: Record<string, string> = {}): number =>
    texts.reduce((total, text) => total + counterValue(text, name, labels), 0);

  /** A barrier: every process has completed `n` more lifecycle sweeps than it had when this was called. */
  async function everyProcessSwept (n: number): Promise<void> {
    const sweeps = async (): Promise<number[]> => (await scrapeAll()).map((t) => counterValue(t, 'cloudly_release_lifecycle_sweeps_total'));
    const start = await sweeps();
    await eventually(`every process swept ${n} more times`, async () => (await sweeps()).every((c, i) => c >= (start[i] ?? 0) + n), 120, 100);
  }

  beforeAll(async () => {
    fleet = await startFleet({ processes: 3, env: { LIFECYCLE_SWEEP_INTERVAL_MS: String(SWEEP_MS) } });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    [admin, api] = await Promise.all([fleet.token('admin'), fleet.token('api')]);
    for (let k = 0; k < CLUSTERS; k++) {
      const id = `k${k}`;
      await registerCluster(caller(k), admin, id, [`${id}-n1`]);
      clusterTokens.set(id, await fleet.token('cluster', { clusterId: id }));
    }
  }, 180_000);
  afterAll(async () => { await fleet?.close(); });

  async function createService (clusterIds: string[]): Promise<FixtureService> {
    const repository = `team/rb-${randomBytes(4).toString('hex')}`;
    const created = await caller(0).inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds, replicasPerNode: 1 },
        rolloutPolicy: { stabilityWindowSeconds: 0, autoRollback: { enabled: true, triggers: ['failed'] } },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    return { id: created.json().service.id as string, repository };
  }

  /** Each cluster's report of its node: the replica running and verified, or failed. */
  function clusterReport (cluster: string, plan: IImmutableImageDeploymentPlan, serviceId: string, sequence: number, status: 'running' | 'failed', i: number) {
    const node = `${cluster}-n1`;
    return caller(i).inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(clusterTokens.get(cluster)!),
      payload: reportBody(plan, serviceId, { sequence, nodeNames: [node], deployments: [verifiedReplica(plan, serviceId, node, 0, { status })] }),
    });
  }

  const current = async (serviceId: string): Promise<IImmutableImageDeploymentPlan> =>
    (await caller(1).inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageDeployment;

  it(`${CLUSTERS} concurrent reports of a failure: one automatic rollback, to the last verified release, with the hold; never a rollback of it`, async () => {
    const clusters = Array.from({ length: CLUSTERS }, (_, k) => `k${k}`);
    const svc = await createService(clusters);
    const a = await pushRelease(caller(0), api, svc, { tag: 'a' });
    const b = await pushRelease(caller(1), api, svc, { tag: 'b' });
    const first = (await promote(caller(2), api, svc.id, a.releaseId, { generation: 0 })).json().service.data.imageDeployment;
    await Promise.all(clusters.map(async (c, k) => { expect((await clusterReport(c, first, svc.id, 1, 'running', k)).statusCode).toBe(200); }));
    await eventually('release a verified', async () => (await caller(0).inject({
      method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin),
    })).json().lifecycle?.succeededAt !== undefined);
    const second = (await promote(caller(0), api, svc.id, b.releaseId, { generation: 1 })).json().service.data.imageDeployment;

    // Every cluster's replica fails, all at once, through all three processes: every answer sees the failure.
    const before = await scrapeAll();
    const answers = await Promise.all(clusters.map(async (c, k) => await clusterReport(c, second, svc.id, 1, 'failed', k)));
    // Each is applied (and sees the failure), or comes after the automatic rollback replaced the rollout: stale.
    for (const res of answers) {
      if (res.statusCode === 200) expect(res.json().status.status).toBe('failed');
      else expect(res.json(), res.body).toMatchObject({ code: 'stale-rollout-report', currentGeneration: 3 });
    }
    expect(answers.filter((r) => r.statusCode === 200).length).toBeGreaterThan(0);

    await eventually('the automatic rollback', async () => (await current(svc.id)).rolloutGeneration === 3);
    await everyProcessSwept(3);
    const history = await fullRolloutHistory(caller(2), admin, svc.id);
    expect(history.map((h) => h.generation)).toEqual([3, 2, 1]);
    expect(history[0]).toMatchObject({
      mode: 'rollback',
      releaseId: a.releaseId,
      rollbackOfRolloutId: second.rolloutId,
      issuedBy: { role: 'system' },
      automationHold: 'set',
      trigger: { kind: 'automatic-rollback', cause: 'failed', ofRolloutId: second.rolloutId },
    });
    expect(history[1]).toMatchObject({
      outcome: 'failed', failureReason: 'replica-failed', endedBy: { kind: 'rolled-back', rolloutId: history[0]!.rolloutId },
    });
    const service = (await caller(0).inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json();
    expect(service.automationHold).toMatchObject({ rolloutId: history[0]!.rolloutId });
    const after = await scrapeAll();
    const issued = sum(after, 'cloudly_release_automatic_rollbacks_total', { trigger: 'failed', outcome: 'issued' }) -
      sum(before, 'cloudly_release_automatic_rollbacks_total', { trigger: 'failed', outcome: 'issued' });
    expect(issued).toBe(1);

    // The rollback fails too: no automatic rollback of a rollback.
    const rollbackPlan = await current(svc.id);
    await Promise.all(clusters.slice(0, 5).map(async (c, k) => {
      expect((await clusterReport(c, rollbackPlan, svc.id, 1, 'failed', k)).statusCode).toBe(200);
    }));
    await eventually('the rollback failed', async () => (await caller(1).inject({
      method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin),
    })).json().lifecycle?.failure !== undefined);
    await everyProcessSwept(3);
    expect((await fullRolloutHistory(caller(0), admin, svc.id)).map((h) => h.generation)).toEqual([3, 2, 1]);
    const view = (await caller(2).inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) })).json();
    expect(view.status.status).toBe('failed');
    expect(view.lifecycle.automaticRollback).toBeUndefined();
  }, 240_000);

  it('an abort, a promotion and an automatic rollback racing from different processes: exactly one new rollout (5 rounds)', async () => {
    const cluster = 'k0';
    const svc = await createService([cluster]);
    const a = await pushRelease(caller(0), api, svc, { tag: 'a' });
    const first = (await promote(caller(1), api, svc.id, a.releaseId, { generation: 0 })).json().service.data.imageDeployment;
    expect((await clusterReport(cluster, first, svc.id, 1, 'running', 2)).statusCode).toBe(200);
    const winners: string[] = [];
    for (let round = 0; round < 5; round++) {
      // A fresh promotion (an explicit one also lifts the hold a previous round's rollback set), not yet reported on.
      const start = await current(svc.id);
      const next = await pushRelease(caller(round), api, svc, { tag: `r${round}` });
      const promoted = await promote(caller(round + 1), api, svc.id, next.releaseId, {
        generation: start.rolloutGeneration, currentRolloutId: start.rolloutId,
      });
      expect(promoted.statusCode, promoted.body).toBe(200);
      const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
      const other = await pushRelease(caller(round + 2), api, svc, { tag: `s${round}` });
      const expected = { generation: plan.rolloutGeneration, currentRolloutId: plan.rolloutId };

      const [aborted, promotedAgain, failing] = await Promise.all([
        caller(0).inject({
          method: 'POST',
          url: `/v1/services/${svc.id}/rollout/abort`,
          headers: { ...bearer(api), 'idempotency-key': `abort-${round}` },
          payload: { expectedRolloutGeneration: expected.generation, expectedCurrentRolloutId: expected.currentRolloutId },
        }),
        promote(caller(1), api, svc.id, other.releaseId, expected),
        clusterReport(cluster, plan, svc.id, 1, 'failed', 2),
      ]);
      // The failure report itself may come after the promotion or abort replaced its rollout: then it is stale.
      if (failing.statusCode !== 200) expect(failing.json().code, failing.body).toBe('stale-rollout-report');
      await everyProcessSwept(3);
      const history = await fullRolloutHistory(caller(round), admin, svc.id);
      const made = history.filter((h) => h.generation > plan.rolloutGeneration);
      expect(made, JSON.stringify(made)).toHaveLength(1);
      const winner = made[0]!;
      const human = [aborted, promotedAgain].filter((r: CallerResponse) => r.statusCode === 200);
      if (winner.trigger?.kind === 'automatic-rollback') {
        expect(human).toHaveLength(0);
        winners.push('automatic rollback');
      } else {
        expect(human).toHaveLength(1);
        winners.push(winner.trigger?.kind === 'abort' ? 'abort' : 'promotion');
      }
      for (const r of [aborted, promotedAgain].filter((x) => x.statusCode !== 200)) {
        expect(r.statusCode, r.body).toBe(409);
        expect(['rollout-generation-conflict', 'current-rollout-mismatch']).toContain(r.json().code);
      }
      if (winner.mode === 'rollback') expect(winner.releaseId).toBe(a.releaseId);
    }
    console.log(`[race] winners by round: ${winners.join(', ')}`);
  }, 240_000);
});
