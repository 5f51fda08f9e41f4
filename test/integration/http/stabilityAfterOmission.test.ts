/**
 * Found by an independent acceptance run (each test failed on the code before its fix): docs/lifecycle.md
 * "Stability window" — `deployedAt` counts only "for a replica the server sees for the first time"; "Once
 * the server has seen the replica, its own verdicts decide: a replica an earlier report showed not running
 * (not verified) starts its run at the first report that shows it running (verified), however old its
 * deployedAt — a task that was just mismatched is not 'verified for an hour' because it started an hour
 * ago."  The server looks only at the reporter's immediately previous report: a replica that an earlier
 * report showed mismatched, left out of one report, counts as "seen for the first time" again, and its
 * hour-old deployedAt makes it stable at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushRelease, registerCluster, registryHost } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

const SECOND = 1000;

describe('stability window: a replica the server has seen before', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({}, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  it('mismatched, then left out of one report, then verified with an hour-old deployedAt: not stable at once', async () => {
    const repository = `team/omit-${Math.random().toString(16).slice(2, 10)}`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        rolloutPolicy: { stabilityWindowSeconds: 60, clockToleranceSeconds: 5 },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const svc = { id: created.json().service.id as string, repository };
    const release = await pushRelease(t.app, api, svc);
    const plan = (await promote(t.app, api, svc.id, release.releaseId, { generation: 0 })).json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const deployedAt = clock - 3600 * SECOND;
    let sequence = 0;
    const send = async (deployments: Record<string, unknown>[]) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/deployment-snapshots',
        headers: bearer(cluster),
        payload: reportBody(plan, svc.id, { session: 's-omit', sequence: ++sequence, nodeNames: ['n1'], deployments, reportedAt: clock }),
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().status as { status: string, verifiedReplicaCount: number };
    };

    // The task runs the wrong image: mismatched.
    const wrong = verifiedReplica(plan, svc.id, 'n1', 0, { deployment: { deployedAt }, evidence: { taskReportedDigest: `sha256:${'2'.repeat(64)}` } });
    expect((await send([wrong])).status).toBe('mismatched');
    clock += SECOND;
    // One report without it (the agent did not list it this time).
    expect((await send([])).status).toBe('pending');
    clock += SECOND;
    // The same task, now verified, 2 s after the server saw it mismatched.
    const right = verifiedReplica(plan, svc.id, 'n1', 0, { deployment: { deployedAt } });
    const after = await send([right]);
    expect(after, 'the server saw this task mismatched 2 s ago: it has not run verified for the 60 s window').toMatchObject({ verifiedReplicaCount: 0 });
    expect(after.status).not.toBe('succeeded');
  });
});
