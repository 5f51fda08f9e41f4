/**
 * Found by an independent acceptance run (each test failed on the code before its fix): the server's own
 * Idempotency-Keys. Automatic promotion uses `\u0001automatic:<eventId>` and automatic rollback
 * `\u0001automatic-rollback:<rolloutId>` (src/operations/observePushEvent.ts,
 * src/operations/lifecycle.ts): the control character keeps them apart from REST keys, which must be
 * visible ASCII. TypedRequest keys were any 1–256 characters, so an `api` caller over TypedRequest could
 * take the server's key first, with a request that is refused and stored, and the automation then met
 * `idempotency-key-reused` and never ran: "at most once per event" / "once per rollout" became "never"
 * (docs/api.md, docs/lifecycle.md). TypedRequest keys now follow the REST rule (1–255 visible ASCII).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { buildTestApp, callTypedRequest, identity, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushEvent, pushRelease, registerCluster, registryHost, type FixtureService } from '../../support/fixtures.js';
import { fullReplicas, reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

describe('the server\'s internal Idempotency-Keys', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let coreflow: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    coreflow = await t.token('cluster', { clusterId: 'ck', subject: 'coreflow-ck' });
    await registerCluster(t.app, admin, 'ck', ['ck1']);
  });
  afterAll(async () => { await t.close(); });

  async function service (extra: Record<string, unknown>): Promise<FixtureService> {
    const repository = `team/keys-${randomBytes(4).toString('hex')}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({ registryTarget: { protocol: 'oci', registryHost, repository }, placement: { clusterIds: ['ck'], replicasPerNode: 1 }, ...extra }),
    });
    expect(res.statusCode, res.body).toBe(201);
    return { id: res.json().service.id as string, repository };
  }

  /** First explicit promotion of a fresh release, reported verified: succeeded, a verified release. */
  async function settledFirstRollout (svc: FixtureService): Promise<IImmutableImageDeploymentPlan> {
    const first = await pushRelease(t.app, api, svc, { tag: 'v1' });
    const res = await promote(t.app, api, svc.id, first.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    const plan = res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const report = await t.app.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(coreflow),
      payload: reportBody(plan, svc.id, { session: `s-${plan.rolloutId}`, sequence: 1, nodeNames: ['ck1'], deployments: fullReplicas(plan, svc.id, ['ck1']) }),
    });
    expect(report.json().status?.status, report.body).toBe('succeeded');
    return plan;
  }

  /**
   * A TypedRequest promotion under `key` that would be refused (wrong generation) — and so stored under
   * that key, if the key were accepted. It is not: keys are visible ASCII, as on REST, so the
   * request is refused before anything is stored.
   */
  async function takeKey (serviceId: string, releaseId: string, key: string): Promise<void> {
    const res = await callTypedRequest(t.app, 'promoteServiceImageRelease', {
      identity: identity(api), serviceId, releaseId, idempotencyKey: key, expectedRolloutGeneration: 999, enableImmutableImage: true,
    });
    expect(res.json().error?.data?.code, res.body).toBe('validation-failed');
    expect(res.json().error?.data?.problems?.[0]?.field, res.body).toBe('/request/idempotencyKey');
  }

  it('automatic promotion (deployOnPush) of a push still happens after a TypedRequest caller used the key "\\u0001automatic:<eventId>"', async () => {
    const svc = await service({ deployOnPush: true });
    await settledFirstRollout(svc);
    const event = pushEvent(svc, { tag: 'v2' });
    await takeKey(svc.id, event['releaseId'] as string, `\u0001automatic:${String(event['eventId'])}`);

    const pushed = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
    expect(pushed.statusCode, pushed.body).toBe(201);
    expect(pushed.json().autoPromotion).toMatchObject({ outcome: 'promoted' });
  });

  it('automatic rollback of a mismatched rollout still happens after a TypedRequest caller used the key "\\u0001automatic-rollback:<rolloutId>"', async () => {
    const svc = await service({ rolloutPolicy: { stabilityWindowSeconds: 0, autoRollback: { enabled: true, triggers: ['mismatched'] } } });
    await settledFirstRollout(svc);
    const second = await pushRelease(t.app, api, svc, { tag: 'v2' });
    const promoted = await promote(t.app, api, svc.id, second.releaseId, { generation: 1 });
    expect(promoted.statusCode, promoted.body).toBe(200);
    const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    await takeKey(svc.id, second.releaseId, `\u0001automatic-rollback:${plan.rolloutId}`);

    // The new digest does not run: the rollout is mismatched, which is a chosen trigger.
    const wrong = verifiedReplica(plan, svc.id, 'ck1', 0, { evidence: { resolvedDigest: `sha256:${'e'.repeat(64)}` } });
    const report = await t.app.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(coreflow),
      payload: reportBody(plan, svc.id, { session: 's-bad', sequence: 1, nodeNames: ['ck1'], deployments: [wrong] }),
    });
    expect(report.statusCode, report.body).toBe(200);

    // Wait until the automatic rollback was decided one way or the other, then look at what it did.
    let outcome = '';
    await eventually('the automatic rollback was attempted', async () => {
      const view = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) });
      const attempted = view.json().lifecycle?.automaticRollback as { outcome: string } | undefined;
      const mode = view.json().plan?.mode as string | undefined;
      if (attempted === undefined && mode !== 'rollback') return false;
      outcome = attempted?.outcome ?? 'issued (the plan is a rollback)';
      return true;
    });
    expect(outcome).toMatch(/^issued/);
  });
});
