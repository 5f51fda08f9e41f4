import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { serviceData } from '../../support/app.js';
import { bearer, httpCaller, promote, pushRelease, registerCluster, registryHost, rolloutHistory, type Caller } from '../../support/fixtures.js';
import { request, startFleet, type Fleet } from '../../support/fleet.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { openSse } from '../../support/sse.js';
import { eventually } from '../../support/wait.js';

/**
 * The progress deadline across three server processes (each runs the lifecycle sweeper): a
 * rollout one of whose target nodes never reports fails with `required-replica-missing` at the
 * first sweep after its deadline — decided once, by whichever process gets there first — and
 * stays failed after every process is killed and restarted. A rollout that keeps making
 * progress is never failed by the deadline, however long it takes in all.
 */
const SWEEP_MS = 200;
const DEADLINE_S = 3;

/** The value of a counter series in a Prometheus exposition (0 when absent). */
function counterValue (exposition: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = exposition.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `) ? wanted.every((w) => l.includes(w)) : false);
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('progress deadline across 3 server processes', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;
  let c1: string;
  let c3: string;

  const refreshCallers = (): void => { callers = fleet.servers.map((s) => httpCaller(s.url)); };
  const caller = (i: number): Caller => callers[i % callers.length]!;
  const scrape = async (i: number): Promise<string> => (await request(fleet.servers[i]!.url, { path: '/metrics' })).text;
  const sweeps = async (i: number): Promise<number> => counterValue(await scrape(i), 'cloudly_release_lifecycle_sweeps_total');

  /** A barrier: every process has completed `n` more sweeps than it had when this was called. */
  async function everyProcessSwept (n: number): Promise<void> {
    const start = await Promise.all(fleet.servers.map(async (_, i) => await sweeps(i)));
    await eventually(`every process swept ${n} more times`, async () =>
      (await Promise.all(fleet.servers.map(async (_, i) => await sweeps(i)))).every((count, i) => count >= (start[i] ?? 0) + n), 120, 100);
  }

  beforeAll(async () => {
    fleet = await startFleet({ processes: 3, env: { LIFECYCLE_SWEEP_INTERVAL_MS: String(SWEEP_MS) } });
    refreshCallers();
    [admin, api, c1, c3] = await Promise.all([
      fleet.token('admin'), fleet.token('api'), fleet.token('cluster', { clusterId: 'c1' }), fleet.token('cluster', { clusterId: 'c3' }),
    ]);
    await registerCluster(caller(0), admin, 'c1', ['n1', 'n2']);
    await registerCluster(caller(1), admin, 'c2', ['m1']);
    await registerCluster(caller(2), admin, 'c3', ['k1', 'k2', 'k3', 'k4', 'k5', 'k6']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  async function promotedOn (clusterIds: string[], progressDeadlineSeconds: number): Promise<{ serviceId: string, plan: IImmutableImageDeploymentPlan }> {
    const repository = `team/deadline-${Math.random().toString(16).slice(2, 10)}`;
    const created = await caller(0).inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds, replicasPerNode: 1 },
        rolloutPolicy: { stabilityWindowSeconds: 0, progressDeadlineSeconds },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const serviceId = created.json().service.id as string;
    const release = await pushRelease(caller(1), api, { id: serviceId, repository });
    const res = await promote(caller(2), api, serviceId, release.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return { serviceId, plan: res.json().service.data.imageDeployment };
  }

  /** One report by the cluster token: each of `nodes` runs replica 0, verified. */
  const reportVerifiedOn = (via: Caller, token: string, plan: IImmutableImageDeploymentPlan, serviceId: string, sequence: number, nodes: string[]) =>
    via.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(token),
      payload: reportBody(plan, serviceId, { sequence, nodeNames: nodes, deployments: nodes.map((n) => verifiedReplica(plan, serviceId, n, 0)) }),
    });

  const view = async (serviceId: string, i = 0) =>
    (await caller(i).inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(admin) })).json();

  /** Every status event the service's stream holds (read from revision 0 up to the current revision). */
  async function storedEvents (serviceId: string, i: number) {
    const revision = (await view(serviceId, i)).revision as number;
    const sse = await openSse(`${fleet.servers[i]!.url}/v1/services/${serviceId}/rollout/events?after=0`, bearer(admin));
    try {
      await sse.waitFor(`revision ${revision}`, (c) => c.statuses().some((e) => e.revision >= revision));
      return sse.statuses();
    } finally {
      await sse.close();
    }
  }

  it(`a target node that never reports: failed with required-replica-missing after ${DEADLINE_S} s, decided once, and for good`, async () => {
    const { serviceId, plan } = await promotedOn(['c1', 'c2'], DEADLINE_S);
    // c1 reports both its nodes; c2's node m1 never does.
    const nodes = ['n1', 'n2'];
    const sent = await reportVerifiedOn(caller(0), c1, plan, serviceId, 1, nodes);
    expect(sent.json().status).toMatchObject({ status: 'deploying', observedReplicaCount: 2, requiredReplicaCount: 3 });

    await eventually('the rollout failed by its deadline', async () => (await view(serviceId, 1)).status.status === 'failed', 200, 100);
    const failed = await view(serviceId, 2);
    expect(failed.status).toMatchObject({ status: 'failed', mismatchReason: 'required-replica-missing', observedReplicaCount: 2 });
    const decision = failed.lifecycle.deadlineExceeded;
    expect(decision).toMatchObject({ reason: 'required-replica-missing', deadlineSeconds: DEADLINE_S });
    const due = decision.lastProgressAt + DEADLINE_S * 1000;
    // Never before the deadline; the first sweep after it decides (a generous bound: the machine may be busy).
    expect(decision.at).toBeGreaterThanOrEqual(due);
    expect(decision.at - due, `decided ${decision.at - due} ms after the deadline`).toBeLessThan(SWEEP_MS + 5_000);
    console.log(`[deadline] decided ${decision.at - due} ms after the deadline (sweep interval ${SWEEP_MS} ms)`);
    expect(failed.blocking[0]).toMatchObject({ kind: 'progress-deadline-exceeded', reason: 'required-replica-missing' });
    expect(failed.blocking).toContainEqual(expect.objectContaining({ kind: 'node-not-reported', nodeName: 'm1' }));

    // Every process keeps sweeping: nothing decides it a second time.
    await everyProcessSwept(3);
    const outcomes = await Promise.all(fleet.servers.map(async (_, i) =>
      counterValue(await scrape(i), 'cloudly_release_rollout_outcomes_total', { mode: 'promotion', outcome: 'deadline-exceeded' })));
    expect(outcomes.reduce((a, b) => a + b, 0), `per process: ${outcomes.join(', ')}`).toBe(1);
    const events = await storedEvents(serviceId, 0);
    expect(events.filter((e) => e.status === 'failed')).toHaveLength(1);
    const [entry] = await rolloutHistory(caller(1), admin, serviceId);
    expect(entry).toMatchObject({
      rolloutId: plan.rolloutId, outcome: 'failed', failedBy: 'deadline', failureReason: 'required-replica-missing', failedAt: decision.at,
    });

    // Every process killed and started again: still failed, still one transition.
    await Promise.all(fleet.servers.map(async (s) => { await s.kill('SIGKILL'); }));
    await Promise.all(fleet.servers.map(async (s) => { await s.restart(); }));
    refreshCallers();
    await everyProcessSwept(3);
    const after = await view(serviceId, 1);
    expect(after.status).toMatchObject({ status: 'failed', mismatchReason: 'required-replica-missing' });
    expect(after.lifecycle.deadlineExceeded).toEqual(decision);
    expect((await storedEvents(serviceId, 2)).filter((e) => e.status === 'failed')).toHaveLength(1);
    expect((await rolloutHistory(caller(0), admin, serviceId))[0]).toEqual(entry);

    // A report after the decision is recorded, but the verdict stands (sticky).
    const late = await reportVerifiedOn(caller(2), c1, plan, serviceId, 2, nodes);
    expect(late.statusCode, late.body).toBe(200);
    expect(late.json().status).toMatchObject({ status: 'failed', mismatchReason: 'required-replica-missing' });
  }, 180_000);

  it('a rollout that keeps making progress is never failed by the deadline, though it takes longer than the deadline in all', async () => {
    const deadline = 4;
    const { serviceId, plan } = await promotedOn(['c3'], deadline);
    const nodes = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
    const sse = await openSse(`${fleet.servers[1]!.url}/v1/services/${serviceId}/rollout/events?after=0`, bearer(admin));
    const started = Date.now();
    const statuses: string[] = [];
    try {
      // One more node every second: progress each time, 6 s in all (longer than the 4 s deadline).
      for (let j = 1; j <= nodes.length; j++) {
        if (j > 1) await new Promise((resolve) => setTimeout(resolve, 1_000));
        const scope = nodes.slice(0, j);
        const res = await reportVerifiedOn(caller(j), c3, plan, serviceId, j, scope);
        expect(res.statusCode, res.body).toBe(200);
        statuses.push(res.json().status.status);
      }
      expect(Date.now() - started).toBeGreaterThan(deadline * 1000);
      expect(statuses).toEqual(['deploying', 'deploying', 'deploying', 'deploying', 'deploying', 'succeeded']);
      await sse.waitFor('succeeded', (c) => c.statuses().some((e) => e.status === 'succeeded'));
      expect(sse.statuses().map((e) => e.status)).not.toContain('failed');
    } finally {
      await sse.close();
    }
    const [entry] = await rolloutHistory(caller(0), admin, serviceId);
    expect(entry).toMatchObject({ outcome: 'succeeded' });
    expect(entry?.failedAt).toBeUndefined();
  }, 120_000);

  it('the process that decides the deadline is killed right after writing the decision: the failure still reaches the stream, once', async () => {
    // Every process dies at the deadline decision; whichever decides is killed before it published anything.
    await Promise.all(fleet.servers.map(async (s) => { await s.restart({ FAULT_INJECTION: 'after-deadline-decision' }); }));
    refreshCallers();
    const { serviceId, plan } = await promotedOn(['c1', 'c2'], 2);
    const nodes = ['n1', 'n2'];
    const sent = await reportVerifiedOn(caller(0), c1, plan, serviceId, 1, nodes);
    expect(sent.json().status).toMatchObject({ status: 'deploying' });
    const victim = await Promise.race(fleet.servers.map(async (s) => { await s.exited; return s; }));
    expect(victim.logs.join('\n')).toContain('FAULT_INJECTION: crashing at after-deadline-decision');

    await Promise.all(fleet.servers.map(async (s) => { await s.restart(); }));
    refreshCallers();
    await everyProcessSwept(2);
    expect((await view(serviceId, 1)).status).toMatchObject({ status: 'failed', mismatchReason: 'required-replica-missing' });
    const events = await storedEvents(serviceId, 2);
    expect(events.at(-1)).toMatchObject({ status: 'failed', mismatchReason: 'required-replica-missing' });
    expect(events.filter((e) => e.status === 'failed')).toHaveLength(1);
  }, 180_000);
});
