import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, identity, serviceData, typedRequest, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushEvent, pushRelease, registerCluster, rollback, rolloutHistory } from '../../support/fixtures.js';

// Errors a person can act on: each refusal says what to change, names what it refers to, and
// never echoes unbounded input.

describe('errors a person can act on', () => {
  let t: TestApp;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    t = await buildTestApp({ BODY_LIMIT_BYTES: 2048, REPORT_BODY_LIMIT_BYTES: 8192 });
    admin = await t.token('admin');
    api = await t.token('api');
  });
  afterAll(async () => { await t.close(); });

  const createService = (payload: object) => t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload });
  const problems = (res: { json(): unknown }) => (res.json() as { problems: Array<{ field: string, message: string }> }).problems;

  it('415 tells to send content-type: application/json', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/services', headers: { ...bearer(admin), 'content-type': 'text/plain' }, payload: 'name=x' });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'unsupported-media-type', detail: expect.stringContaining("'content-type: application/json'") });
  });

  it('a wrong enum value names the accepted values (REST and TypedRequest), not "Expected union value"', async () => {
    const res = await createService(serviceData({ balancingStrategy: 'fastest' }));
    expect(res.statusCode).toBe(400);
    expect(problems(res)).toEqual([{ field: '/body/balancingStrategy', message: "must be one of 'round-robin', 'least-connections' (got 'fastest')" }]);
    expect(res.json().detail).toContain("'round-robin', 'least-connections'");
    const viaTr = await t.app.inject({
      method: 'POST',
      url: '/typedrequest',
      payload: typedRequest('createService', { identity: identity(admin), serviceData: serviceData({ balancingStrategy: 'fastest' }) }),
    });
    expect(viaTr.json().error.data.problems).toEqual([
      { field: '/request/serviceData/balancingStrategy', message: "must be one of 'round-robin', 'least-connections' (got 'fastest')" },
    ]);
  });

  it('reports each missing field once', async () => {
    const res = await createService({ name: 'only-a-name' });
    expect(res.statusCode).toBe(400);
    const fields = problems(res).map((p) => p.field);
    expect(fields).toEqual([...new Set(fields)]);
    expect(problems(res)).toEqual(expect.arrayContaining([
      { field: '/body/imageId', message: 'is required' },
      { field: '/body/balancingStrategy', message: 'is required' },
    ]));
    expect(problems(res).filter((p) => p.field === '/body/ports')).toEqual([{ field: '/body/ports', message: 'is required' }]);
  });

  it('413 states the limit of the route: BODY_LIMIT_BYTES, or REPORT_BODY_LIMIT_BYTES on snapshot reports', async () => {
    const general = await createService(serviceData({ description: 'x'.repeat(3000) }));
    expect(general.statusCode).toBe(413);
    expect(general.json()).toMatchObject({ code: 'payload-too-large', limitBytes: 2048, detail: expect.stringContaining('2048 bytes') });
    const cluster = await t.token('cluster', { clusterId: 'c1' });
    const report = await t.app.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(cluster),
      payload: { serviceId: 'svc', deployments: [], reportedAt: 1, padding: 'x'.repeat(10_000) },
    });
    expect(report.statusCode).toBe(413);
    expect(report.json()).toMatchObject({ code: 'payload-too-large', limitBytes: 8192, detail: expect.stringContaining('8192 bytes') });
  });

  it('invalid-deployment-plan says "no placement" apart from "clusters not registered" (named) and "clusters without nodes"', async () => {
    const unplaced = await createFixtureService(t.app, admin, { withPlacement: false });
    const r1 = await pushRelease(t.app, api, unplaced);
    const noPlacement = await promote(t.app, api, unplaced.id, r1.releaseId, { generation: 0 });
    expect(noPlacement.statusCode).toBe(422);
    expect(noPlacement.json()).toMatchObject({
      code: 'invalid-deployment-plan',
      placementProblem: 'no-placement',
      detail: expect.stringContaining('has no placement'),
      problems: ['immutable rollout target scope must contain clusters and nodes'],
    });
    expect(noPlacement.json().clusterIds).toBeUndefined();

    const nowhere = await createFixtureService(t.app, admin, { clusterIds: ['nowhere-1'] });
    const r2 = await pushRelease(t.app, api, nowhere);
    const unregistered = await promote(t.app, api, nowhere.id, r2.releaseId, { generation: 0 });
    expect(unregistered.statusCode).toBe(422);
    expect(unregistered.json()).toMatchObject({
      code: 'invalid-deployment-plan',
      placementProblem: 'unregistered-clusters',
      clusterIds: ['nowhere-1'],
      detail: expect.stringContaining("not registered: 'nowhere-1'"),
    });

    // One placed cluster registered, one not (docs/errors.md: "register each … or a promotion is refused"):
    // the promotion would call `succeeded` a rollout that never reached a cluster the placement names.
    await registerCluster(t.app, admin, 'partly-1', ['partly-node-1']);
    const partly = await createFixtureService(t.app, admin, { clusterIds: ['nowhere-2', 'partly-1'] });
    const r4 = await pushRelease(t.app, api, partly);
    const partial = await promote(t.app, api, partly.id, r4.releaseId, { generation: 0 });
    expect(partial.statusCode, partial.body).toBe(422);
    expect(partial.json()).toMatchObject({
      code: 'invalid-deployment-plan', placementProblem: 'unregistered-clusters', clusterIds: ['nowhere-2'],
    });
    expect((await rolloutHistory(t.app, admin, partly.id))).toEqual([]);
    // A rollback is not held up by it (an emergency): v1 promoted while only partly-1 was placed, v2 on top; then the
    // placement gains the unregistered cluster, and the rollback to v1 goes to the registered one.
    const rolled = await createFixtureService(t.app, admin, { clusterIds: ['partly-1'] });
    const v1 = await pushRelease(t.app, api, rolled, { tag: 'v1' });
    const v2 = await pushRelease(t.app, api, rolled, { tag: 'v2' });
    expect((await promote(t.app, api, rolled.id, v1.releaseId, { generation: 0 })).statusCode).toBe(200);
    const second = await promote(t.app, api, rolled.id, v2.releaseId, { generation: 1 });
    expect(second.statusCode).toBe(200);
    const current = (await t.app.inject({ method: 'GET', url: `/v1/services/${rolled.id}`, headers: bearer(admin) })).json().service.data;
    const widened = await t.app.inject({
      method: 'PUT',
      url: `/v1/services/${rolled.id}`,
      headers: bearer(admin),
      payload: {
        ...serviceData({ name: current.name, registryTarget: current.registryTarget }),
        placement: { clusterIds: ['partly-1', 'nowhere-3'], replicasPerNode: 1 },
      },
    });
    expect(widened.statusCode, widened.body).toBe(200);
    const back = await rollback(t.app, api, rolled.id, v1.releaseId, { generation: 2, currentRolloutId: second.json().service.data.imageDeployment.rolloutId });
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json().service.data.imageDeployment.targetScope.targetClusterIds).toEqual(['partly-1']);

    await registerCluster(t.app, admin, 'empty-1', []);
    const empty = await createFixtureService(t.app, admin, { clusterIds: ['empty-1'] });
    const r3 = await pushRelease(t.app, api, empty);
    const noNodes = await promote(t.app, api, empty.id, r3.releaseId, { generation: 0 });
    expect(noNodes.json()).toMatchObject({ code: 'invalid-deployment-plan', placementProblem: 'clusters-without-nodes', clusterIds: ['empty-1'] });
    expect(noNodes.json().detail).toContain("no registered nodes: 'empty-1'");
  });

  it('a service write whose placement names an unregistered cluster is saved with a warning naming it', async () => {
    const created = await createService(serviceData({ placement: { clusterIds: ['later-1', 'c-known'], replicasPerNode: 1 } }));
    expect(created.statusCode).toBe(201);
    expect(created.json().warnings).toEqual([
      { code: 'placement-clusters-unregistered', clusterIds: ['later-1', 'c-known'], message: expect.any(String) },
    ]);
    await registerCluster(t.app, admin, 'c-known', ['node-known-1']);
    const id = created.json().service.id as string;
    const body = serviceData({ name: created.json().service.data.name, placement: { clusterIds: ['later-1', 'c-known'], replicasPerNode: 1 } });
    const updated = await t.app.inject({ method: 'PUT', url: `/v1/services/${id}`, headers: bearer(admin), payload: body });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().warnings).toEqual([
      { code: 'placement-clusters-unregistered', clusterIds: ['later-1'], message: expect.stringContaining("'later-1'") },
    ]);
    expect(updated.json().warnings[0].message).toContain('PUT /v1/clusters/:clusterId');
    await registerCluster(t.app, admin, 'later-1', ['node-later-1']);
    const clean = await t.app.inject({ method: 'PUT', url: `/v1/services/${id}`, headers: bearer(admin), payload: body });
    expect(clean.statusCode).toBe(200);
    expect(clean.json().warnings).toBeUndefined();
  });

  it('a rollout request without its idempotency key is idempotency-key-missing in both dialects (docs/api.md: the same code)', async () => {
    const svc = await createFixtureService(t.app, admin);
    const release = await pushRelease(t.app, api, svc);
    const rest = await t.app.inject({
      method: 'POST',
      url: `/v1/services/${svc.id}/image-releases/${release.releaseId}/promote`,
      headers: bearer(api),
      payload: { expectedRolloutGeneration: 0, enableImmutableImage: true },
    });
    expect(rest.statusCode).toBe(400);
    expect(rest.json().code).toBe('idempotency-key-missing');
    const requests: Array<[string, Record<string, unknown>]> = [
      ['promoteServiceImageRelease', { serviceId: svc.id, releaseId: release.releaseId, expectedRolloutGeneration: 0, enableImmutableImage: true }],
      ['rollbackServiceImageRelease', {
        serviceId: svc.id, releaseId: release.releaseId, expectedCurrentRolloutId: 'ro_x', expectedRolloutGeneration: 1,
      }],
      ['abortServiceRollout', { serviceId: svc.id, expectedCurrentRolloutId: 'ro_x', expectedRolloutGeneration: 1 }],
    ];
    for (const [method, request] of requests) {
      for (const key of [{}, { idempotencyKey: '' }]) {
        const payload = typedRequest(method, { identity: identity(api), ...request, ...key });
        const res = await t.app.inject({ method: 'POST', url: '/typedrequest', payload });
        expect(res.json().error?.data?.code, `${method} ${JSON.stringify(key)}: ${res.body.slice(0, 300)}`).toBe('idempotency-key-missing');
        expect(res.json().error.text).toContain('request.idempotencyKey');
      }
    }
    expect(await rolloutHistory(t.app, admin, svc.id)).toEqual([]);
  });

  it('409 push-event-conflict names the field that differs and both values', async () => {
    const svc = await createFixtureService(t.app, admin);
    const event = pushEvent(svc, { tag: '1.4.2' });
    expect((await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event })).statusCode).toBe(201);
    const changed = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: { ...event, tag: '1.4.3' } });
    expect(changed.statusCode).toBe(409);
    expect(changed.json()).toMatchObject({ code: 'push-event-conflict', eventId: event['eventId'], differingFields: ['tag'] });
    expect(changed.json().detail).toContain("tag differs (tag: recorded '1.4.2', sent '1.4.3')");
    const twoFields = { ...event, tag: '2.0.0', imageId: 'img-2' };
    const two = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: twoFields });
    expect(two.json()).toMatchObject({ code: 'push-event-conflict', differingFields: ['imageId', 'tag'] });
  });

  it('409 service-already-exists carries the id of the service that holds the name', async () => {
    const first = await createService(serviceData({ name: 'taken-name' }));
    const second = await createService(serviceData({ name: 'taken-name' }));
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ code: 'service-already-exists', name: 'taken-name', serviceId: first.json().service.id });
  });

  it('no error answer echoes unbounded input', async () => {
    const huge = 'q'.repeat(1500);
    const answers = await Promise.all([
      createService(serviceData({ balancingStrategy: huge })),
      createService({ ...serviceData(), [huge]: 1 }),
      t.app.inject({ method: 'GET', url: `/v1/services/${huge}`, headers: bearer(admin) }),
      t.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest(huge, { identity: identity(admin) }) }),
    ]);
    for (const res of answers) {
      expect(res.statusCode, res.body.slice(0, 200)).toBeLessThan(500);
      expect(res.body.length, res.body.slice(0, 200)).toBeLessThan(1500);
    }
  });
});
