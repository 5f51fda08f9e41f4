import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultPoint } from '../../../src/faults.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster, rollback } from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * docs/lifecycle.md "Delivery metrics": `cloudly_release_change_failures_total` counts change failures
 * "with the same definitions" as the REST figures, "each event counted once, by the process whose
 * compare-and-swap decided it"; a promotion rolled back (after succeeding too) is a failed change.
 * docs/api.md: "A crash at any step leaves either nothing or state that [the retry with the same key]
 * completes … answers exactly what a crash-free run answers."
 *
 * A rollback that crashes right after its plan is written (`after-plan-write`) is completed by its
 * retry — but the retry no longer finds the rolled-back promotion as the service's rollout, and the
 * change failure is never counted: /metrics says 0 while GET …/delivery-metrics says 1.
 */
const sample = (text: string, name: string, service: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`service="${service}"`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
};

describe('a rollback completed by its retry after a crash', () => {
  let t: TestApp;
  let armed: FaultPoint | undefined;
  let admin: string;
  let api: string;
  let cluster: string;

  beforeAll(async () => {
    // The crash: the request dies at the armed point (the transient failure path gives the key back at once).
    t = await buildTestApp({}, { fault: (point) => { if (point === armed) { armed = undefined; throw new Error(`injected crash ${point}`); } } });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  /** A verified promotion of a, then of b; then b is rolled back to a (crashing at `point`, when given) and retried with the same key. */
  async function rolledBack (point: FaultPoint | undefined) {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    const b = await pushRelease(t.app, api, svc, { tag: 'b' });
    const p1 = await promote(t.app, api, svc.id, a.releaseId, { generation: 0 });
    await reportVerified(t.app, cluster, p1.json().service.data.imageDeployment, svc.id, ['n1']);
    const p2 = await promote(t.app, api, svc.id, b.releaseId, { generation: 1 });
    const planB = p2.json().service.data.imageDeployment;
    await reportVerified(t.app, cluster, planB, svc.id, ['n1']);
    armed = point;
    const call = { generation: 2, currentRolloutId: planB.rolloutId, key: `rollback-${svc.id}` };
    const first = await rollback(t.app, api, svc.id, a.releaseId, call);
    const answer = point === undefined ? first : await rollback(t.app, api, svc.id, a.releaseId, call);
    expect(answer.statusCode, answer.body).toBe(200);
    const rest = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/delivery-metrics`, headers: bearer(admin) })).json();
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const counted = sample(text, 'cloudly_release_change_failures_total', svc.id);
    return { firstStatus: first.statusCode, restFailed: rest.changeFailureRate.failedChanges, counted };
  }

  it('control: without a crash, /metrics and the REST figures both count the rolled-back promotion once', async () => {
    expect(await rolledBack(undefined)).toMatchObject({ restFailed: 1, counted: 1 });
  });

  it('a crash after the plan write: the retry completes the rollback and the change failure is still counted once', async () => {
    const seen = await rolledBack('after-plan-write');
    expect(seen.firstStatus, 'the crashed request').toBe(500);
    expect(seen.restFailed, 'REST delivery metrics').toBe(1);
    expect(seen.counted, 'cloudly_release_change_failures_total for the service').toBe(1);
  });
});
