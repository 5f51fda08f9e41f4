/**
 * docs/api.md: "Every API answer carries `Cache-Control: no-store`: the real TypedRequest client caches
 * successful answers per URL and replays them when the network fails, which would hand a caller
 * another request's answer."
 *
 * What the client does (read from node_modules): `@api.global/typedrequest` 3.3.0 posts through one
 * module-wide `WebrequestClient` of `@push.rocks/webrequest` 4.0.5, whose default strategy is
 * network-first: every 2xx answer is stored under `POST:<url>` (one entry per endpoint, whatever the
 * method in the envelope) unless the answer says `Cache-Control: no-store`, and when the network
 * fails the stored answer is returned instead of the error. So every TypedRequest call to one
 * endpoint shares one cache slot, and after a failed connection a promotion "succeeds" with whatever
 * the last successful call answered.
 */
import { randomBytes } from 'node:crypto';
import { TypedRequest } from '@api.global/typedrequest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  IImmutableImageDeploymentPlan, IRequest_Any_Cloudly_GetServiceById, IRequest_Any_Cloudly_PromoteServiceImageRelease,
} from '../../../src/contracts/index.js';
import { buildTestApp, typedRequest, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, httpCaller, pushEvent, pushRelease, registerCluster, type Caller, type CallerResponse } from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

const identity = (jwt: string) => ({ name: 'ci', userId: 'ci-1', expiresAt: 4_102_444_800_000, jwt });

describe('the real TypedRequest client never hands a caller another request\'s answer', () => {
  let fleet: Fleet;

  beforeAll(async () => { fleet = await startFleet({ processes: 1 }); }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  it('a promotion sent after the server died rejects (network error) instead of resolving with an earlier getServiceById answer', async () => {
    const server = fleet.servers[0]!;
    const caller = httpCaller(server.url);
    const admin = await fleet.token('admin');
    await registerCluster(caller, admin, 'c1', ['n1']);
    const svc = await createFixtureService(caller, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const { releaseId } = await pushRelease(caller, admin, svc);
    const endpoint = `${server.url}/typedrequest`;

    const read = await new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById').fire({ identity: identity(admin), serviceId: svc.id });
    expect(read.service.id).toBe(svc.id);

    await server.kill('SIGKILL');
    const promotion = new TypedRequest<IRequest_Any_Cloudly_PromoteServiceImageRelease>(endpoint, 'promoteServiceImageRelease').fire({
      identity: identity(admin),
      serviceId: svc.id,
      releaseId,
      idempotencyKey: `ci-${randomBytes(6).toString('hex')}`,
      expectedRolloutGeneration: 0,
      enableImmutableImage: true,
    });
    const outcome = await promotion.then((value) => ({ resolvedWith: value }), (err: unknown) => ({ rejectedWith: err }));
    expect('rejectedWith' in outcome ? 'rejected' : outcome).toBe('rejected');
    expect((outcome as { rejectedWith: unknown }).rejectedWith).toBeInstanceOf(Error);
  });
});

describe('every API answer carries Cache-Control: no-store (REST and /typedrequest, success and error)', () => {
  let t: TestApp;
  let base: string;
  let caller: Caller;
  let admin: string;
  let clusterToken: string;

  beforeAll(async () => {
    t = await buildTestApp();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    caller = httpCaller(base);
    admin = await t.token('admin');
    clusterToken = await t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
  });
  afterAll(async () => { await t.close(); });

  /** `<what> → <status>` for every answer without no-store. */
  const missing: string[] = [];
  let checked = 0;
  const check = (what: string, res: { statusCode: number, headers: CallerResponse['headers'] }): void => {
    checked++;
    const value = String(res.headers['cache-control'] ?? '');
    if (!/(^|,)\s*no-store\s*(,|$)/i.test(value)) missing.push(`${what} → ${res.statusCode} (cache-control: ${value === '' ? 'absent' : value})`);
  };
  const call = async (
    what: string, method: 'GET' | 'POST' | 'PUT', url: string, token?: string, payload?: object, headers: Record<string, string> = {},
  ): Promise<CallerResponse> => {
    const res = await caller.inject({ method, url, headers: { ...(token ? bearer(token) : {}), ...headers }, ...(payload ? { payload } : {}) });
    check(what, res);
    return res;
  };
  /** Raw fetch, for answers the JSON helper cannot produce (bad JSON, other content types, big bodies, streams). */
  const raw = async (what: string, url: string, init: RequestInit): Promise<void> => {
    const controller = new AbortController();
    const res = await fetch(`${base}${url}`, { ...init, signal: controller.signal });
    check(what, { statusCode: res.status, headers: Object.fromEntries(res.headers) });
    controller.abort();
    await res.body?.cancel().catch(() => undefined);
  };

  it('on every route of the OpenAPI document, answered with and without a token, and on the error paths', async () => {
    // Successes of every write, in the order a real rollout takes.
    expect((await call('PUT cluster', 'PUT', '/v1/clusters/c1', admin, { nodeNames: ['n1'] })).statusCode).toBe(200);
    const svc = await createFixtureService(caller, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const created = await call('POST service', 'POST', '/v1/services', admin, {
      name: `svc-${randomBytes(4).toString('hex')}`,
      description: '',
      imageId: 'img-1',
      imageVersion: '1',
      environment: {},
      scaleFactor: 1,
      balancingStrategy: 'round-robin',
      ports: { web: 80 },
      domains: [],
      deploymentIds: [],
    });
    expect(created.statusCode).toBe(201);
    const read = await call('GET service', 'GET', `/v1/services/${svc.id}`, admin);
    expect((await call('PUT service', 'PUT', `/v1/services/${svc.id}`, admin, read.json().service.data)).statusCode).toBe(200);
    const events = [pushEvent(svc, { tag: 'a' }), pushEvent(svc, { tag: 'b' })];
    for (const event of events) expect((await call('POST push event', 'POST', '/v1/registry/push-events', admin, event)).statusCode).toBe(201);
    const [a, b] = events.map((e) => String(e['releaseId'])) as [string, string];
    const promote = (releaseId: string, generation: number, current?: string) =>
      call('POST promote', 'POST', `/v1/services/${svc.id}/image-releases/${releaseId}/promote`, admin,
        { expectedRolloutGeneration: generation, ...(current ? { expectedCurrentRolloutId: current } : {}), enableImmutableImage: true },
        { 'idempotency-key': randomBytes(8).toString('hex') });
    const first = await promote(a, 0);
    expect(first.statusCode).toBe(200);
    const plan1 = first.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const second = await promote(b, 1, plan1.rolloutId);
    const plan2 = second.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const report = await call('POST deployment snapshot', 'POST', '/v1/deployment-snapshots', clusterToken,
      reportBody(plan2, svc.id, { sequence: 1, nodeNames: ['n1'], deployments: fullReplicas(plan2, svc.id, ['n1']) }));
    expect(report.statusCode, report.body).toBe(200);
    const rolledBack = await call('POST rollback', 'POST', `/v1/services/${svc.id}/image-releases/${a}/rollback`, admin,
      { expectedRolloutGeneration: 2, expectedCurrentRolloutId: plan2.rolloutId }, { 'idempotency-key': randomBytes(8).toString('hex') });
    expect(rolledBack.statusCode, rolledBack.body).toBe(200);
    // The replay of an idempotent write is an answer too.
    const replayKey = randomBytes(8).toString('hex');
    for (const attempt of ['first', 'replay']) {
      await call(`POST promote (${attempt})`, 'POST', `/v1/services/${svc.id}/image-releases/${b}/promote`, admin,
        { expectedRolloutGeneration: 3, enableImmutableImage: true }, { 'idempotency-key': replayKey });
    }

    // Every route of the OpenAPI document: without a token, and with an admin token (an empty body where one is expected).
    const doc = (await caller.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    const params: Record<string, string> = { serviceId: svc.id, releaseId: a, clusterId: 'c1', tag: 'a' };
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, hasBody: op.requestBody !== undefined })));
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) {
      const url = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? 'x'));
      for (const [who, token] of [['no token', undefined], ['admin', admin]] as const) {
        const headers: Record<string, string> = {
          ...(token ? bearer(token) : {}),
          ...(route.hasBody ? { 'content-type': 'application/json' } : {}),
          'idempotency-key': randomBytes(8).toString('hex'),
        };
        await raw(`${route.method} ${route.path} (${who})`, url, { method: route.method, headers, ...(route.hasBody ? { body: '{}' } : {}) });
      }
    }

    // TypedRequest: a success, an application error, an unknown method, an invalid envelope.
    const typed = (what: string, envelope: object) => call(`/typedrequest ${what}`, 'POST', '/typedrequest', undefined, envelope);
    const ok = await typed('getServiceById', typedRequest('getServiceById', { identity: identity(admin), serviceId: svc.id }));
    expect(ok.json().response?.service?.id).toBe(svc.id);
    const notFound = await typed('service-not-found', typedRequest('getServiceById', { identity: identity(admin), serviceId: 'svc_missing' }));
    expect(notFound.json().error?.data?.code).toBe('service-not-found');
    await typed('method-not-found', typedRequest('noSuchMethod', { identity: identity(admin) }));
    await typed('invalid envelope', { method: 42 });

    // Error paths the router and the body parser answer by themselves.
    await call('no such route', 'GET', '/v1/no-such-route', admin);
    await raw('malformed %-escape', '/v1/services/%E0%A4%A', { headers: bearer(admin) });
    await raw('invalid JSON', '/v1/services', { method: 'POST', headers: { ...bearer(admin), 'content-type': 'application/json' }, body: '{"name":' });
    await raw('unsupported media type', '/v1/services', { method: 'POST', headers: { ...bearer(admin), 'content-type': 'text/plain' }, body: 'x' });
    await raw('body too large', '/v1/services', {
      method: 'POST', headers: { ...bearer(admin), 'content-type': 'application/json' }, body: JSON.stringify({ x: 'y'.repeat(t.config.BODY_LIMIT_BYTES) }),
    });
    await raw('unknown service (REST)', '/v1/services/svc_missing', { headers: bearer(admin) });
    await raw('bad token (REST)', `/v1/services/${svc.id}`, { headers: bearer('not.a.jwt') });

    expect(checked).toBeGreaterThan(50);
    expect(missing, `${missing.length} of ${checked} answers lack Cache-Control: no-store`).toEqual([]);
  }, 60_000);
});
