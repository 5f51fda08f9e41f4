import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushEvent, registerCluster, registryHost } from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * docs/operations.md: "Bad input of any kind gets a clear 4xx with the offending field, never a 500, and writes
 * nothing." Two inputs are accepted that can never work and break what comes after.
 */
describe('input that is accepted but can never work', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;

  beforeAll(async () => {
    t = await buildTestApp();
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  /**
   * `data.placement.clusterIds` takes any id (`Id`: 1–128 characters), while a cluster id is
   * `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$` (src/contracts/clusters.ts, the JWT `clusterId` claim). A
   * placement on `eu west/1` is saved (201) with the warning "register each with PUT
   * /v1/clusters/:clusterId", which refuses that id (400) — the service can never be promoted, and
   * its promotion keeps saying to register a cluster that cannot be registered.
   */
  it('a service name with a control character or a bidirectional override is refused naming the field (it would spoof in the console)', async () => {
    for (const name of ['shop\u0006', 'pay\u202Eapp', 'tab\tname']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/services',
        headers: bearer(admin),
        payload: serviceData({ name, registryTarget: { protocol: 'oci', registryHost, repository: 'team/x' } }),
      });
      expect(res.statusCode, `${JSON.stringify(name)}: ${res.body.slice(0, 200)}`).toBe(400);
      expect(res.json().problems[0].field).toBe('/body/name');
    }
  });

  it('a placement naming a cluster id that no registration can take is refused naming the field', async () => {
    const create = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository: 'team/unplaceable' },
        placement: { clusterIds: ['eu west/1'], replicasPerNode: 1 },
      }),
    });
    const register = await t.app.inject({
      method: 'PUT', url: `/v1/clusters/${encodeURIComponent('eu west/1')}`, headers: bearer(admin), payload: { nodeNames: ['z1'] },
    });
    expect(register.statusCode, 'the warning\'s advice: PUT /v1/clusters/:clusterId').toBe(400);
    expect(create.statusCode, create.body.slice(-500)).toBe(400);
    expect(create.json()).toMatchObject({ code: 'validation-failed', problems: [expect.objectContaining({ field: '/body/placement/clusterIds/0' })] });
  });

  /**
   * A push event's `observedAt` is taken as given, without a bound (`Timestamp`: up to 2^53 − 1 ms).
   * "Never an older release" compares first observations, so one event stamped in the future — a
   * registry integration that sends microseconds, or a skewed clock — is promoted automatically and
   * then makes every real push "older-than-current": automatic promotion stops for good, silently.
   * (Snapshot reports have a clock tolerance, `clockToleranceSeconds`; push events have none.)
   */
  it('a push event stamped far in the future (microseconds) is refused, not allowed to stop automatic promotion for good', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1, deployOnPush: true });
    const now = Date.now();
    const first = pushEvent(svc, { tag: 'v1', seed: `v1-${svc.id}`, observedAt: now - 60_000 });
    expect((await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: first })).statusCode).toBe(201);
    const initial = await promote(t.app, api, svc.id, first['releaseId'] as string, { generation: 0 });
    await reportVerified(t.app, cluster, initial.json().service.data.imageDeployment, svc.id, ['n1']);

    const micro = pushEvent(svc, { tag: 'v2', seed: `v2-${svc.id}`, observedAt: (now - 30_000) * 1000 });
    const skewed = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: micro });
    const planNow = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service.data.imageDeployment;
    if (skewed.statusCode === 201 && planNow.releaseId === micro['releaseId']) await reportVerified(t.app, cluster, planNow, svc.id, ['n1']);

    // The next real push (now) must still be able to promote automatically.
    const next = pushEvent(svc, { tag: 'v3', seed: `v3-${svc.id}`, observedAt: now });
    const answer = (await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: next })).json();
    expect({ skewedStatus: skewed.statusCode, nextAutoPromotion: answer.autoPromotion?.outcome },
      `skewed event answered ${skewed.statusCode} ${skewed.body.slice(0, 200)}; next push: ${JSON.stringify(answer.autoPromotion)}`)
      .toEqual({ skewedStatus: 400, nextAutoPromotion: 'promoted' });
  });
});
