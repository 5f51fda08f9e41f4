/**
 * The real `@api.global/typedrequest` client (3.3.0, a devDependency) against a listening server.
 *
 * What the client does (read from node_modules/@api.global/typedrequest/dist_ts/classes.typedrequest.js
 * and @push.rocks/webrequest 4.0.5):
 * - `new TypedRequest<T>(url, method).fire(request)` POSTs JSON (`Content-Type` and `Accept:
 *   application/json`) to `url` as given — the client adds no path — with the envelope
 *   `{ method, request, response: null, correlation: { id: isounique.uni(), phase: 'request' } }`.
 *   No `authInfo`, `localData` or `serverData`: the JWT travels in `request.identity.jwt`.
 *   No client-side retry on network errors; 60 s fetch timeout.
 * - A non-2xx status throws a plain `Error('HTTP <status>: <statusText>')`: the body, and so
 *   `text` and `data`, are lost. Hence application errors must be HTTP 200 envelopes.
 * - A reply with `error` (and no `retry`) throws `TypedResponseError` (exported from the package
 *   index; NOT an `Error` subclass: no `message`, no stack) with `errorText = error.text` and
 *   `errorData = error.data`. It also `console.error`s the text and data first.
 * - A reply with `retry: { waitForMs, reason }` (and no `error`): the client `console.log`s the reason,
 *   waits `waitForMs`, and re-POSTs the identical envelope (same correlation id) — without limit.
 *   A reply with both `error` and `retry` makes `fire` crash with a TypeError (it reads
 *   `.response` of null): never send both.
 * - `fire` resolves with `reply.response` only. It reads nothing else of the reply: not
 *   `correlation` (neither id nor phase is checked), not `method`, not the echoed `request`.
 *   Objects marked `_isVirtualStream` anywhere in the reply would be turned into streams.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TypedRequest, TypedResponseError } from '@api.global/typedrequest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type {
  IRequest_Admin_Cloudly_RegisterCluster,
  IRequest_Any_Cloudly_CreateService,
  IRequest_Any_Cloudly_GetServiceById,
  IRequest_Any_Cloudly_GetServiceImageReleases,
  IRequest_Any_Cloudly_PromoteServiceImageRelease,
  IRequest_Any_Cloudly_ReportImmutableRegistryPushEvent,
  IRequest_Any_Cloudly_RollbackServiceImageRelease,
  IRequest_Any_Cloudly_UpdateService,
  TypedRequestShape,
} from '../../../src/contracts/index.js';
import type { FaultPoint } from '../../../src/faults.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { pushEvent, registryHost, rolloutHistory, type FixtureService } from '../../support/fixtures.js';

type ServiceData = IRequest_Any_Cloudly_CreateService['request']['serviceData'];
type ReportPushEvent = TypedRequestShape<typeof IRequest_Any_Cloudly_ReportImmutableRegistryPushEvent>;
type PushEvent = ReportPushEvent['request']['event'];
type Promote = IRequest_Any_Cloudly_PromoteServiceImageRelease;
type Rollback = IRequest_Any_Cloudly_RollbackServiceImageRelease;

/** A full IIdentity-like object; only `jwt` counts on the server. */
const identity = (jwt: string) => ({ name: 'ui-user', userId: 'user-1', expiresAt: Date.now() + 3_600_000, jwt });

afterEach(() => { vi.restoreAllMocks(); });

/** Runs `fire` and returns what it rejected with; fails the test when it resolves. */
async function rejection (fire: () => Promise<unknown>): Promise<unknown> {
  try {
    await fire();
  } catch (err) {
    return err;
  }
  throw new Error('expected the request to be rejected');
}

describe('the real TypedRequest client against the server', () => {
  let t: TestApp;
  let endpoint: string;
  let admin: string;

  beforeAll(async () => {
    t = await buildTestApp();
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    endpoint = `${base}/typedrequest`;
    admin = await t.token('admin');
  });
  afterAll(async () => { await t.close(); });

  // The client console.errors every error reply before throwing: keep the test output clean.
  const quiet = () => vi.spyOn(console, 'error').mockImplementation(() => undefined);

  it('createService then getServiceById resolve with the response shapes', async () => {
    const data = serviceData({ environment: { LOG_LEVEL: 'info' } }) as ServiceData;
    const created = await new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService')
      .fire({ identity: identity(admin), serviceData: data });
    expect(Object.keys(created)).toEqual(['service']);
    expect(created.service.id).toMatch(/^svc_/);
    expect(created.service.data).toEqual(data);

    const read = await new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById')
      .fire({ identity: identity(await t.token('user')), serviceId: created.service.id });
    expect(read).toEqual({ service: created.service });

    const updated = await new TypedRequest<IRequest_Any_Cloudly_UpdateService>(endpoint, 'updateService')
      .fire({ identity: identity(admin), serviceId: created.service.id, serviceData: { ...data, scaleFactor: 3 } });
    expect(updated.service.data.scaleFactor).toBe(3);
    expect(updated.service.id).toBe(created.service.id);
  });

  it('an unknown service id rejects with TypedResponseError service-not-found', async () => {
    const spy = quiet();
    const err = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById')
      .fire({ identity: identity(admin), serviceId: 'svc_does_not_exist' }));
    expect(err).toBeInstanceOf(TypedResponseError);
    expect(err).not.toBeInstanceOf(Error);
    const { errorText, errorData } = err as TypedResponseError;
    expect(errorData).toMatchObject({ code: 'service-not-found' });
    expect(typeof errorData.requestId).toBe('string');
    expect(errorText).toContain('svc_does_not_exist');
    expect(spy).toHaveBeenCalled();
  });

  it('an unknown method rejects with method-not-found', async () => {
    quiet();
    const err = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'noSuchMethod' as 'getServiceById')
      .fire({ identity: identity(admin), serviceId: 'svc_x' }));
    expect(err).toBeInstanceOf(TypedResponseError);
    expect((err as TypedResponseError).errorData).toMatchObject({ code: 'method-not-found', method: 'noSuchMethod' });
  });

  it('a role that may not act rejects with forbidden, a bad token with unauthenticated', async () => {
    quiet();
    const user = await t.token('user');
    const asUser = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService')
      .fire({ identity: identity(user), serviceData: serviceData() as ServiceData }));
    expect(asUser).toBeInstanceOf(TypedResponseError);
    expect((asUser as TypedResponseError).errorData).toMatchObject({ code: 'forbidden' });

    const badToken = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById')
      .fire({ identity: identity('not.a.jwt'), serviceId: 'svc_x' }));
    expect((badToken as TypedResponseError).errorData).toMatchObject({ code: 'unauthenticated' });
  });

  it('invalid input rejects with validation-failed and the list of problems', async () => {
    quiet();
    const bad = serviceData({ scaleFactor: 1.5, ports: { web: 70000 } }) as ServiceData;
    const err = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService')
      .fire({ identity: identity(admin), serviceData: bad }));
    expect(err).toBeInstanceOf(TypedResponseError);
    const { errorData, errorText } = err as TypedResponseError;
    expect(errorData.code).toBe('validation-failed');
    const fields = (errorData.problems as Array<{ field: string, message: string }>).map((p) => p.field);
    expect(fields).toEqual(expect.arrayContaining(['/request/serviceData/scaleFactor', '/request/serviceData/ports/web']));
    expect(errorText).toContain('/request/serviceData/');
  });

  it('an oversized body still arrives as a coded error, not a bare HTTP 413', async () => {
    quiet();
    const huge = serviceData({ environment: { BIG: 'x'.repeat(t.config.REPORT_BODY_LIMIT_BYTES) } }) as ServiceData;
    const err = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService')
      .fire({ identity: identity(admin), serviceData: huge }));
    expect(err).toBeInstanceOf(TypedResponseError);
    expect((err as TypedResponseError).errorData).toMatchObject({ code: 'payload-too-large' });
  });
});

/**
 * Releases, promotion and rollback driven end to end by the real client over HTTP:
 * register a cluster, create a service, report two pushes, list, promote twice, roll back —
 * and the coded errors arrive as TypedResponseError with `errorData.code`.
 */
describe('the real TypedRequest client: list → promote → rollback', () => {
  let t: TestApp;
  let endpoint: string;
  let admin: string;
  let api: string;
  let user: string;

  beforeAll(async () => {
    t = await buildTestApp();
    endpoint = `${await t.app.listen({ port: 0, host: '127.0.0.1' })}/typedrequest`;
    [admin, api, user] = await Promise.all([t.token('admin'), t.token('api'), t.token('user')]);
  });
  afterAll(async () => { await t.close(); });

  const quiet = () => vi.spyOn(console, 'error').mockImplementation(() => undefined);
  const promote = (request: Omit<Promote['request'], 'identity'>) =>
    new TypedRequest<Promote>(endpoint, 'promoteServiceImageRelease').fire({ identity: identity(api), ...request });
  const rollback = (request: Omit<Rollback['request'], 'identity'>) =>
    new TypedRequest<Rollback>(endpoint, 'rollbackServiceImageRelease').fire({ identity: identity(api), ...request });
  const report = (event: Record<string, unknown>) =>
    new TypedRequest<ReportPushEvent>(endpoint, 'reportImmutableRegistryPushEvent').fire({ identity: identity(api), event: event as PushEvent });
  const list = (serviceId: string) =>
    new TypedRequest<IRequest_Any_Cloudly_GetServiceImageReleases>(endpoint, 'getServiceImageReleases').fire({ identity: identity(user), serviceId });
  /** A promotion request of the client's own service (`svc` of the test). */
  const promotionOf = (serviceId: string) => (releaseId: string, idempotencyKey: string, expectedRolloutGeneration: number) =>
    ({ serviceId, releaseId, idempotencyKey, expectedRolloutGeneration, enableImmutableImage: true as const });
  const codeOf = (err: unknown) => {
    expect(err).toBeInstanceOf(TypedResponseError);
    return (err as TypedResponseError).errorData as Record<string, unknown> & { code: string };
  };

  /** A registered cluster and a service placed on it, with a registry target; all through the client. */
  async function serviceOnCluster (clusterId: string, nodeNames: string[]): Promise<FixtureService> {
    const registered = await new TypedRequest<IRequest_Admin_Cloudly_RegisterCluster>(endpoint, 'registerCluster')
      .fire({ identity: identity(admin), clusterId, name: `cluster ${clusterId}`, nodeNames });
    expect(registered.cluster).toMatchObject({ id: clusterId, nodeNames: [...nodeNames].sort() });
    const repository = `team/client-${clusterId}`;
    const created = await new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService').fire({
      identity: identity(admin),
      serviceData: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: [clusterId], replicasPerNode: 2 },
      }) as ServiceData,
    });
    return { id: created.service.id, repository };
  }

  it('registers, creates, reports, lists newest first, promotes 0 → 1 → 2 and rolls back to the first', async () => {
    const svc = await serviceOnCluster('tc-flow', ['tn2', 'tn1']);
    const now = Date.now();
    const firstEvent = pushEvent(svc, { tag: 'v1', observedAt: now - 2_000 });
    const secondEvent = pushEvent(svc, { tag: 'v2', observedAt: now - 1_000 });
    const first = await report(firstEvent);
    expect(first).toMatchObject({
      duplicate: false,
      release: { id: firstEvent['releaseId'], data: { serviceId: svc.id, registryRootDigest: firstEvent['registryRootDigest'] } },
    });
    const second = await report(secondEvent);
    expect(second.release.id).toBe(secondEvent['releaseId']);

    const listed = await list(svc.id);
    expect(Object.keys(listed)).toEqual(['releases']);
    expect(listed.releases.map((r) => r.id)).toEqual([second.release.id, first.release.id]);
    expect(listed.releases.every((r) => r.data.acceptedAt === undefined)).toBe(true);

    const p1 = (await promote({
      serviceId: svc.id,
      releaseId: first.release.id,
      idempotencyKey: 'flow-1',
      expectedRolloutGeneration: 0,
      enableImmutableImage: true,
    })).service.data;
    expect(p1.immutableImageRequired).toBe(true);
    expect(p1.imageDeployment).toMatchObject({
      policy: 'immutable-digest',
      rolloutGeneration: 1,
      mode: 'promotion',
      releaseId: first.release.id,
      requestedDigest: firstEvent['registryRootDigest'],
      targetScope: { targetClusterIds: ['tc-flow'], targetNodeNames: ['tn1', 'tn2'], replicasPerNode: 2, requiredReplicaCount: 4 },
    });
    expect(p1.imageRolloutStatus).toMatchObject({ status: 'pending', rolloutId: p1.imageDeployment?.rolloutId });

    const p2 = (await promote({
      serviceId: svc.id,
      releaseId: second.release.id,
      idempotencyKey: 'flow-2',
      expectedRolloutGeneration: 1,
      expectedCurrentRolloutId: p1.imageDeployment?.rolloutId,
      enableImmutableImage: true,
    })).service.data;
    expect(p2.imageDeployment).toMatchObject({
      rolloutGeneration: 2,
      mode: 'promotion',
      releaseId: second.release.id,
      requestedDigest: secondEvent['registryRootDigest'],
    });
    const secondRolloutId = p2.imageDeployment?.rolloutId;

    const rolledBack = (await rollback({
      serviceId: svc.id,
      releaseId: first.release.id,
      idempotencyKey: 'flow-3',
      expectedRolloutGeneration: 2,
      expectedCurrentRolloutId: secondRolloutId as string,
    })).service.data;
    expect(rolledBack.imageDeployment).toMatchObject({
      rolloutGeneration: 3,
      mode: 'rollback',
      rollbackOfRolloutId: secondRolloutId,
      releaseId: first.release.id,
      requestedDigest: firstEvent['registryRootDigest'],
    });
    expect(rolledBack.imageRolloutStatus).toMatchObject({ status: 'rolling-back', rolloutGeneration: 3, expectedDigest: firstEvent['registryRootDigest'] });

    // The same request again (the client's own retry after a lost reply) is the same answer.
    const again = await rollback({
      serviceId: svc.id,
      releaseId: first.release.id,
      idempotencyKey: 'flow-3',
      expectedRolloutGeneration: 2,
      expectedCurrentRolloutId: secondRolloutId as string,
    });
    expect(again.service.data).toEqual(rolledBack);

    const after = await list(svc.id);
    const accepted = Object.fromEntries(after.releases.map((r) => [r.id, r.data.promotionCount]));
    expect(accepted).toEqual({ [first.release.id]: 1, [second.release.id]: 1 });
  });

  it('errors arrive as TypedResponseError with the stable code and its details', async () => {
    const spy = quiet();
    const svc = await serviceOnCluster('tc-errors', ['te1']);
    const a = await report(pushEvent(svc, { tag: 'a' }));
    const b = await report(pushEvent(svc, { tag: 'b' }));
    const never = await report(pushEvent(svc, { tag: 'never' }));
    const promotion = promotionOf(svc.id);
    const g1 = (await promote(promotion(a.release.id, 'err-1', 0))).service.data.imageDeployment;
    const g2 = (await promote(promotion(b.release.id, 'err-2', 1))).service.data.imageDeployment;

    const stale = codeOf(await rejection(() => promote(promotion(a.release.id, 'err-3', 1))));
    expect(stale).toMatchObject({ code: 'rollout-generation-conflict', currentGeneration: 2, currentRolloutId: g2?.rolloutId });
    expect(typeof stale['requestId']).toBe('string');

    const reused = codeOf(await rejection(() => promote(promotion(b.release.id, 'err-1', 0))));
    expect(reused.code).toBe('idempotency-key-reused');

    const notAccepted = codeOf(await rejection(() => rollback({
      serviceId: svc.id, releaseId: never.release.id, idempotencyKey: 'err-4', expectedRolloutGeneration: 2, expectedCurrentRolloutId: g2?.rolloutId as string,
    })));
    expect(notAccepted.code).toBe('rollback-target-not-accepted');

    const wrongCurrent = codeOf(await rejection(() => rollback({
      serviceId: svc.id, releaseId: a.release.id, idempotencyKey: 'err-5', expectedRolloutGeneration: 2, expectedCurrentRolloutId: g1?.rolloutId as string,
    })));
    expect(wrongCurrent).toMatchObject({ code: 'current-rollout-mismatch', currentGeneration: 2, currentRolloutId: g2?.rolloutId });

    const forbidden = codeOf(await rejection(() => new TypedRequest<Promote>(endpoint, 'promoteServiceImageRelease').fire({
      identity: identity(user), serviceId: svc.id, releaseId: a.release.id, idempotencyKey: 'err-6', expectedRolloutGeneration: 2, enableImmutableImage: true,
    })));
    expect(forbidden.code).toBe('forbidden');

    // None of the refused requests moved the service.
    const read = await new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById').fire({ identity: identity(user), serviceId: svc.id });
    expect(read.service.data.imageDeployment).toEqual(g2);
    expect(spy).toHaveBeenCalled();
  });

  it('ten concurrent requests with one idempotency key all resolve to the same rollout (the client waits out `retry`)', async () => {
    const svc = await serviceOnCluster('tc-race', ['tr1', 'tr2']);
    const release = await report(pushEvent(svc, { tag: 'race' }));
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const request = {
      serviceId: svc.id,
      releaseId: release.release.id,
      idempotencyKey: 'race-key',
      expectedRolloutGeneration: 0,
      enableImmutableImage: true as const,
    };
    const results = await Promise.all(Array.from({ length: 10 }, () => promote(request)));
    const rolloutIds = new Set(results.map((r) => r.service.data.imageDeployment?.rolloutId));
    expect(rolloutIds.size).toBe(1);
    for (const result of results) expect(result).toEqual(results[0]);
    expect(results[0]?.service.data.imageDeployment?.rolloutGeneration).toBe(1);
    // Exactly one rollout was issued.
    expect(await rolloutHistory(t.app, admin, svc.id)).toHaveLength(1);
    // How many duplicates met the first request in flight (and got `retry`) depends on timing, so
    // it is not asserted here; the next describe makes a `retry` certain. Whatever the client
    // logged was only that.
    expect(log.mock.calls.filter(([line]) => !String(line).includes('server requested retry'))).toEqual([]);
  });
});

/**
 * The same with a request that is certainly in flight: a first attempt "crashes" right after
 * claiming the key (in-process fault), so the key stays held until its lease runs out. Ten
 * clients sending the same request each get `retry: { waitForMs }`, wait, re-send, and one of
 * them takes the abandoned request over; all end with the same rollout.
 */
describe('the real TypedRequest client waits out idempotency-request-in-progress', () => {
  let t: TestApp;
  let endpoint: string;
  let crash = false;

  beforeAll(async () => {
    t = await buildTestApp({ IDEMPOTENCY_LEASE_MS: 1_000 }, {
      fault: (point: FaultPoint) => {
        if (crash && point === 'after-idempotency-record') {
          crash = false;
          throw new Error('injected crash after claiming the idempotency key');
        }
      },
    });
    endpoint = `${await t.app.listen({ port: 0, host: '127.0.0.1' })}/typedrequest`;
  });
  afterAll(async () => { await t.close(); });

  it('every concurrent duplicate is told to retry, the client waits and re-sends, and all get the same success', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const admin = await t.token('admin');
    await new TypedRequest<IRequest_Admin_Cloudly_RegisterCluster>(endpoint, 'registerCluster').fire({
      identity: identity(admin),
      clusterId: 'tc-lease',
      nodeNames: ['tl1'],
    });
    const repository = 'team/client-lease';
    const created = await new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService').fire({
      identity: identity(admin),
      serviceData: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['tc-lease'], replicasPerNode: 1 },
      }) as ServiceData,
    });
    const svc = { id: created.service.id, repository };
    const release = await new TypedRequest<ReportPushEvent>(endpoint, 'reportImmutableRegistryPushEvent').fire({
      identity: identity(admin),
      event: pushEvent(svc) as PushEvent,
    });
    const request = {
      identity: identity(admin),
      serviceId: svc.id,
      releaseId: release.release.id,
      idempotencyKey: 'lease-key',
      expectedRolloutGeneration: 0,
      enableImmutableImage: true as const,
    };
    const fire = () => new TypedRequest<Promote>(endpoint, 'promoteServiceImageRelease').fire(request);

    crash = true;
    const crashed = await rejection(fire);
    expect(crashed).toBeInstanceOf(TypedResponseError);
    expect((crashed as TypedResponseError).errorData).toMatchObject({ code: 'internal-error' });

    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const results = await Promise.all(Array.from({ length: 10 }, fire));
    const retries = log.mock.calls.filter(([line]) => String(line).includes('server requested retry')).length;
    expect(retries).toBeGreaterThanOrEqual(10);
    expect(log).toHaveBeenCalledWith(expect.stringContaining('still being processed'));
    expect(new Set(results.map((r) => r.service.data.imageDeployment?.rolloutId)).size).toBe(1);
    for (const result of results) expect(result).toEqual(results[0]);
    expect(results[0]?.service.data.imageDeployment).toMatchObject({ rolloutGeneration: 1, releaseId: release.release.id });
  });
});

/**
 * The client's side of the protocol the server relies on, pinned against a stub endpoint:
 * `retry` makes the client wait and re-send the same envelope by itself, a non-2xx loses the body.
 */
describe('the real TypedRequest client: retry and non-2xx (stub endpoint)', () => {
  let server: Server;
  let endpoint: string;
  const received: Array<Record<string, unknown>> = [];
  let replies: Array<{ status: number, body: Record<string, unknown> }> = [];

  const readJson = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      void readJson(req).then((body) => {
        received.push({ ...body, headers: req.headers, url: req.url });
        const reply = replies.shift() ?? { status: 500, body: {} };
        res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify({ ...body, ...reply.body }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/typedrequest`;
  });
  afterAll(async () => { await new Promise((resolve) => server.close(resolve)); });

  it('sends the documented envelope and, on retry, waits and re-sends it unchanged', async () => {
    received.length = 0;
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    replies = [
      { status: 200, body: { retry: { waitForMs: 50, reason: 'idempotency-request-in-progress' } } },
      { status: 200, body: { response: { service: { id: 'svc_1' } }, correlation: { id: 'not-the-same', phase: 'response' } } },
    ];
    const sent = { identity: identity('jwt'), serviceId: 'svc_1' };
    const started = Date.now();
    const response = await new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById').fire(sent);
    expect(response).toEqual({ service: { id: 'svc_1' } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(log).toHaveBeenCalledWith(expect.stringContaining('idempotency-request-in-progress'));

    expect(received).toHaveLength(2);
    const [first, second] = received as [Record<string, unknown>, Record<string, unknown>];
    expect(first).toMatchObject({
      method: 'getServiceById',
      request: sent,
      response: null,
      correlation: { id: expect.any(String), phase: 'request' },
      url: '/typedrequest',
    });
    expect(Object.keys(first).sort()).toEqual(['correlation', 'headers', 'method', 'request', 'response', 'url']);
    expect(first['headers']).toMatchObject({ 'content-type': 'application/json', accept: 'application/json' });
    const { headers: _h1, ...firstEnvelope } = first;
    const { headers: _h2, ...secondEnvelope } = second;
    expect(secondEnvelope).toEqual(firstEnvelope);
  });

  it('turns a non-2xx reply into a bare Error: text and data are lost', async () => {
    replies = [{ status: 409, body: { error: { text: 'lost', data: { code: 'rollout-generation-conflict' } } } }];
    const err = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById')
      .fire({ identity: identity('jwt'), serviceId: 'svc_1' }));
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(TypedResponseError);
    expect((err as Error).message).toBe('HTTP 409: Conflict');
  });
});
