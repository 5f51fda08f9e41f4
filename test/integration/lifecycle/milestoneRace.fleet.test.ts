import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import {
  bearer, createFixtureService, fullRolloutHistory, httpCaller, promote, pushRelease, registerCluster, type Caller, type PushedRelease,
} from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually, sleep } from '../../support/wait.js';

/**
 * Found by an independent acceptance run (issue 20): a rollout's success or failure was lost when a
 * promotion replaced that rollout at the same moment. The lifecycle pass counted the milestone and put
 * the release on the verified list only when its compare-and-swap on the (already replaced) status
 * summary won, but wrote the milestone into the history regardless: the history said `succeeded`, REST
 * delivery metrics counted it, `/metrics` did not, and an abort went to an older release than the
 * newest one whose rollout succeeded.
 *
 * Each round: promote x at generation g; send the report that makes x succeed (or fail) and, 0–40 ms
 * later through another process, promote y at g + 1; then abort y. History, REST delivery metrics,
 * `/metrics` (summed over the processes) and the abort's target must agree after every round.
 */
const ROUNDS = 50;

const sample = (text: string, name: string, labels: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
};

describe('a milestone decided while a promotion replaces its rollout', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;
  let cluster: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 3 });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    [admin, api, cluster] = await Promise.all([fleet.token('admin'), fleet.token('api'), fleet.token('cluster')]);
    await registerCluster(callers[0]!, admin, 'c1', ['n1']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const via = (i: number): Caller => callers[i % callers.length]!;

  /** The report of n1 that makes the plan succeed (every replica verified) or fail (a replica failed). */
  async function report (caller: Caller, plan: IImmutableImageDeploymentPlan, serviceId: string, succeed: boolean) {
    const deployments = [verifiedReplica(plan, serviceId, 'n1', 0, succeed ? {} : { status: 'failed' })];
    const payload = reportBody(plan, serviceId, { sequence: 1, session: `s-${plan.rolloutId}`, nodeNames: ['n1'], deployments });
    return await caller.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(cluster), payload });
  }

  /** /metrics of every process, summed, for the service. */
  async function counted (serviceId: string) {
    const texts = await Promise.all(callers.map(async (c) => (await c.inject({ method: 'GET', url: '/metrics' })).body));
    const sum = (name: string, labels: string) => texts.reduce((total, text) => total + sample(text, name, labels), 0);
    return {
      deployments: sum('cloudly_release_deployments_total', `service="${serviceId}"`),
      changeFailures: sum('cloudly_release_change_failures_total', `service="${serviceId}"`),
      succeeded: sum('cloudly_release_rollout_outcomes_total', 'outcome="succeeded"'),
    };
  }

  it(`${ROUNDS} rounds over 3 processes: history, REST delivery metrics, /metrics and the abort target agree in every round`, async () => {
    const svc = await createFixtureService(via(0), admin, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 } });
    const first = await pushRelease(via(0), api, svc, { tag: 'v0' });
    const p0 = (await promote(via(0), api, svc.id, first.releaseId, { generation: 0 })).json().service.data.imageDeployment;
    expect((await report(via(1), p0, svc.id, true)).statusCode).toBe(200);
    const xs: PushedRelease[] = [];
    for (let i = 0; i < ROUNDS; i++) xs.push(await pushRelease(via(i), api, svc, { tag: `x${i}` }));
    const ys = [await pushRelease(via(0), api, svc, { tag: 'ya' }), await pushRelease(via(1), api, svc, { tag: 'yb' })];
    const digestOf = new Map([first, ...xs, ...ys].map((r) => [r.releaseId, r.digest]));
    let generation = 2;
    const races: string[] = [];

    for (let round = 0; round < ROUNDS; round++) {
      const x = xs[round]!;
      const y = ys[round % 2]!;
      const px = await promote(via(round), api, svc.id, x.releaseId, { generation: generation - 1 });
      expect(px.statusCode, px.body).toBe(200);
      const plan: IImmutableImageDeploymentPlan = px.json().service.data.imageDeployment;
      const succeed = round % 3 !== 2;
      const [reported, py] = await Promise.all([
        report(via(round + 1), plan, svc.id, succeed),
        sleep(Math.floor(Math.random() * 40)).then(async () => await promote(via(round + 2), api, svc.id, y.releaseId, { generation })),
      ]);
      expect(py.statusCode, py.body).toBe(200);
      expect([200, 409], reported.body).toContain(reported.statusCode);
      races.push(`${round}:${reported.statusCode}`);
      const py2 = py.json().service.data.imageDeployment;

      const history = await fullRolloutHistory(via(round), admin, svc.id);
      const rest = (await via(round + 1).inject({ method: 'GET', url: `/v1/services/${svc.id}/delivery-metrics?windowDays=7`, headers: bearer(admin) })).json();
      const seen = await counted(svc.id);
      const successes = history.filter((r) => r.succeededAt !== undefined && r.mode !== 'rollback');
      expect(seen.deployments, `round ${round}: deployments on /metrics vs the history`).toBe(successes.length);
      expect(rest.deploymentFrequency.deployments, `round ${round}: REST deployments`).toBe(successes.length);
      expect(seen.succeeded, `round ${round}: rollout_outcomes_total succeeded`).toBe(successes.length);
      expect(seen.changeFailures, `round ${round}: change failures on /metrics vs REST`).toBe(rest.changeFailureRate.failedChanges);

      // The abort returns to the newest release whose rollout succeeded (other than y's digest, deployed now).
      const newest = history.find((r) => r.succeededAt !== undefined && digestOf.get(r.releaseId) !== y.digest);
      const aborted = await via(round + 2).inject({
        method: 'POST',
        url: `/v1/services/${svc.id}/rollout/abort`,
        headers: { ...bearer(api), 'idempotency-key': `abort-${round}` },
        payload: { expectedCurrentRolloutId: py2.rolloutId, expectedRolloutGeneration: generation + 1, reason: `round ${round}` },
      });
      expect(aborted.statusCode, aborted.body).toBe(200);
      expect(aborted.json().service.data.imageDeployment.releaseId, `round ${round}: the abort's target`).toBe(newest?.releaseId);
      generation += 3;
    }
    expect(races).toHaveLength(ROUNDS);
    // Every success — decided by the lifecycle pass or by the promotion that replaced the rollout as it
    // succeeded — has exactly one signed attestation (docs/attestations.md "Issuance"; the sweeper issues
    // what a replacement decided), and nothing else has one.
    const succeeded = (await fullRolloutHistory(via(0), admin, svc.id)).filter((r) => r.succeededAt !== undefined).map((r) => r.rolloutId).sort();
    const attested = async (): Promise<string[]> => {
      const res = await via(1).inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations?limit=500`, headers: bearer(admin) });
      const listed = res.json().attestations as Array<{ rolloutId: string, kind: string }>;
      return listed.filter((a) => a.kind === 'runtime-verification').map((a) => a.rolloutId).sort();
    };
    let seen: string[] = [];
    try {
      await eventually('an attestation per success', async () => JSON.stringify(seen = await attested()) === JSON.stringify(succeeded), 120, 250);
    } catch (err) {
      const logs = fleet.logs().split('\n').filter((l) => l.includes('attestation')).slice(-20).join('\n');
      throw new Error(`${String(err)}\nsucceeded: ${succeeded.join(' ')}\nattested:  ${seen.join(' ')}\n${logs}`);
    }
    const accepted = races.filter((r) => r.endsWith(':200')).length;
    console.log(`[milestone race] ${ROUNDS} rounds: the deciding report accepted in ${accepted},` +
      ` refused as stale (the promotion came first) in ${ROUNDS - accepted}`);
  }, 300_000);
});
