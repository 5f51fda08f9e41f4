import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { bearer, createFixtureService, httpCaller, promote, pushRelease, registerCluster, type Caller } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

/**
 * Found by an independent acceptance run (issue 20): docs/api.md says the status's `updatedAt` is when
 * the status last changed, yet 8 clusters reporting one rollout through 2 processes while the service
 * was polled saw `data.imageRolloutStatus.updatedAt` go backwards (reports of different reporters never
 * conflict with each other, and each wrote its own receipt time over the other's).
 */
const CLUSTERS = 8;
const ROUNDS = 20;

describe('the rollout status updatedAt under concurrent reporters', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    [admin, api] = await Promise.all([fleet.token('admin'), fleet.token('api')]);
    for (let c = 0; c < CLUSTERS; c++) await registerCluster(callers[0]!, admin, `c${c}`, [`n${c}`]);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  it(`${ROUNDS} rounds of ${CLUSTERS} concurrent reporters through 2 processes: updatedAt never decreases`, async () => {
    const clusterIds = Array.from({ length: CLUSTERS }, (_, c) => `c${c}`);
    const svc = await createFixtureService(callers[0]!, admin, { clusterIds, replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 } });
    const release = await pushRelease(callers[0]!, api, svc, { tag: 'v1' });
    const plan: IImmutableImageDeploymentPlan = (await promote(callers[0]!, api, svc.id, release.releaseId, { generation: 0 })).json()
      .service.data.imageDeployment;
    const tokens = await Promise.all(clusterIds.map(async (clusterId) => await fleet.token('cluster', { clusterId, subject: `agent-${clusterId}` })));

    const seen: number[] = [];
    const polling = { on: true };
    const poll = (async () => {
      for (let i = 0; polling.on; i++) {
        const res = await callers[i % 2]!.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) });
        const updatedAt = res.json().service.data.imageRolloutStatus?.updatedAt;
        if (typeof updatedAt === 'number') seen.push(updatedAt);
      }
    })();
    for (let round = 0; round < ROUNDS; round++) {
      // Every round changes each reporter's contribution (running and verified, or still starting).
      const status = round % 2 === 0 ? 'running' : 'starting';
      const answers = await Promise.all(clusterIds.map(async (clusterId, c) => {
        const pending = status === 'starting' ? { evidence: { verificationStatus: 'pending' } } : {};
        const deployments = [verifiedReplica(plan, svc.id, `n${c}`, 0, { status, ...pending })];
        const payload = reportBody(plan, svc.id, { sequence: round + 1, session: `s-${clusterId}`, nodeNames: [`n${c}`], deployments });
        return await callers[c % 2]!.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(tokens[c]!), payload });
      }));
      for (const answer of answers) expect(answer.statusCode, answer.body).toBe(200);
    }
    polling.on = false;
    await poll;
    const decreases = seen.flatMap((value, i) => (i > 0 && value < seen[i - 1]! ? [`${seen[i - 1]} → ${value} (observation ${i})`] : []));
    expect(seen.length).toBeGreaterThan(ROUNDS);
    expect(decreases, `${seen.length} observations`).toEqual([]);
  }, 180_000);
});
