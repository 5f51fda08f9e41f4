/**
 * docs/lifecycle.md "Stability window": `deployedAt` counts only "for a replica the server sees for the
 * first time (on a node its reporter has not reported before in the rollout)"; "Once the server has seen
 * the replica's node, its own verdicts decide: a replica an earlier report showed not running (not
 * verified), or left out, starts its run at the first report that shows it running (verified), however
 * old its deployedAt — a task that was just mismatched is not 'verified for an hour' because it started
 * an hour ago."
 *
 * The earlier fix (test/integration/http/stabilityAfterOmission.test.ts) covers a replica left out of a
 * report that still names its node. Here the reporter's FULL report (no top-level `reporterNodeNames`:
 * "replaces everything the reporter stated") names only n2 for one report, so n1 drops out of the
 * record's `nodeNames` — and "seen before" is judged from the previous record's `nodeNames` alone
 * (src/operations/reportSnapshot.ts nextRecord → `previousNodes: previous?.nodeNames`). When n1 comes
 * back, its task that was mismatched a second ago is "seen for the first time" again and its hour-old
 * deployedAt makes it stable at once: the rollout succeeds after a 60 s window that never ran.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushRelease, registerCluster, registryHost } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

const SECOND = 1000;

describe('stability window: a node the reporter left out of one full report', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({}, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
  });
  afterAll(async () => { await t.close(); });

  it('mismatched on n1, n1 left out of one full report, then verified with an hour-old deployedAt: not stable at once', async () => {
    const repository = `team/omit-node-${Math.random().toString(16).slice(2, 10)}`;
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
    /** A full report (no top-level reporterNodeNames): it replaces everything the reporter stated. */
    const send = async (nodeNames: string[], deployments: Record<string, unknown>[]) => {
      const body = reportBody(plan, svc.id, { session: 's-omit-node', sequence: ++sequence, nodeNames, deployments, reportedAt: clock });
      delete body['reporterNodeNames'];
      const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(cluster), payload: body });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().status as { status: string, verifiedReplicaCount: number };
    };

    const n2 = verifiedReplica(plan, svc.id, 'n2', 0, { deployment: { deployedAt } });
    // n1's task runs the wrong image: mismatched (n2 is fine and stable by its deployedAt, seen first here).
    const wrong = verifiedReplica(plan, svc.id, 'n1', 0, { deployment: { deployedAt }, evidence: { taskReportedDigest: `sha256:${'2'.repeat(64)}` } });
    expect((await send(['n1', 'n2'], [wrong, n2])).status).toBe('mismatched');
    clock += SECOND;
    // One full report that names only n2 (the agent did not list n1 this time).
    expect((await send(['n2'], [n2])).status).not.toBe('succeeded');
    clock += SECOND;
    // The same n1 task, now verified, 2 s after the server saw it mismatched.
    const right = verifiedReplica(plan, svc.id, 'n1', 0, { deployment: { deployedAt } });
    const after = await send(['n1', 'n2'], [right, n2]);
    expect(after, 'the server saw n1\'s task mismatched 2 s ago: it has not run verified for the 60 s window')
      .toMatchObject({ verifiedReplicaCount: 1 });
    expect(after.status).not.toBe('succeeded');
  });
});
