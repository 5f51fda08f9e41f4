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
  IRequest_Any_Cloudly_CreateService,
  IRequest_Any_Cloudly_GetServiceById,
  IRequest_Any_Cloudly_UpdateService,
} from '../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../helpers/app.js';

type ServiceData = IRequest_Any_Cloudly_CreateService['request']['serviceData'];

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
    const huge = serviceData({ environment: { BIG: 'x'.repeat(t.config.bodyLimitBytes) } }) as ServiceData;
    const err = await rejection(() => new TypedRequest<IRequest_Any_Cloudly_CreateService>(endpoint, 'createService')
      .fire({ identity: identity(admin), serviceData: huge }));
    expect(err).toBeInstanceOf(TypedResponseError);
    expect((err as TypedResponseError).errorData).toMatchObject({ code: 'payload-too-large' });
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
