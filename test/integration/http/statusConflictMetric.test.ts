/**
 * docs/metrics.md: `cloudly_release_cas_conflicts_total{kind="rollout-status-revision"}` counts "rollout status
 * summary writes that lost to a concurrent report of the same reporter and were retried".
 *
 * No code path counts it: `Telemetry.statusConflict()` (src/operations/telemetry.ts, src/metrics.ts) has no
 * caller, and the summary write's retry loop (src/operations/reportSnapshot.ts applyToStatus, on
 * `version-moved`) retries silently. The series is created at 0 and stays 0.
 *
 * Here the retry is made deterministic: the reporter's report #1 is written (its record) by a process that
 * dies before its summary write (FAULT_INJECTION after-report-record); report #2 of the same reporter and
 * session then reaches a healthy process, whose summary write expects the summary to hold report #1, finds
 * it does not ("version-moved"), and retries from what the summary holds — a summary write that lost and
 * was retried, which the series must count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, httpCaller, promotedService, registerCluster, type Caller } from '../../support/fixtures.js';
import { request, startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

const conflictsOf = (text: string): number => {
  const match = /^cloudly_release_cas_conflicts_total\{kind="rollout-status-revision"\} (\d+)/m.exec(text);
  return match ? Number(match[1]) : Number.NaN;
};

describe('cloudly_release_cas_conflicts_total{kind="rollout-status-revision"}', () => {
  let fleet: Fleet;
  let healthy: Caller;
  let admin: string;
  let api: string;
  let coreflow: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    healthy = httpCaller(fleet.servers[0]!.url);
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    coreflow = await fleet.token('cluster', { clusterId: 'm1', subject: 'coreflow-m1' });
    await registerCluster(healthy, admin, 'm1', ['m1-n1', 'm1-n2']);
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  it('counts a summary write that found the reporter\'s entry moved and was retried', async () => {
    const { svc, plan } = await promotedService(healthy, { admin, api }, { clusterIds: ['m1'], replicasPerNode: 1 });
    const nodes = ['m1-n1', 'm1-n2'];
    const victim = fleet.servers[1]!;
    await victim.restart({ FAULT_INJECTION: 'after-report-record' });
    const first = reportBody(plan, svc.id, { session: 's-m', sequence: 1, nodeNames: nodes, deployments: fullReplicas(plan, svc.id, nodes).slice(0, 1) });
    const crashed = await httpCaller(victim.url).inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: first })
      .then((r) => r.statusCode, () => 'connection lost');
    expect(crashed).toBe('connection lost');

    const before = conflictsOf((await request(fleet.servers[0]!.url, { path: '/metrics' })).text);
    expect(before).toBe(0);
    const second = reportBody(plan, svc.id, { session: 's-m', sequence: 2, nodeNames: nodes, deployments: fullReplicas(plan, svc.id, nodes) });
    const res = await healthy.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(coreflow), payload: second });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().status).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 2 });
    const after = conflictsOf((await request(fleet.servers[0]!.url, { path: '/metrics' })).text);
    expect(after, 'the summary write of report #2 lost (version moved) and was retried').toBeGreaterThan(before);
  }, 90_000);
});
