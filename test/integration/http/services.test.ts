import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, callTypedRequest, identity, serviceData, typedRequest, type TestApp } from '../../support/app.js';

describe('services: create, read, update', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
  });
  afterAll(async () => { await t.close(); });

  const create = (body: unknown) =>
    t.app.inject({ method: 'POST', url: '/v1/services', headers: { authorization: `Bearer ${admin}` }, payload: body as object });
  const count = () => t.db.collection('services').countDocuments();

  it('creates a service (201 + Location) and reads it back over REST and TypedRequest', async () => {
    const data = serviceData({ environment: { LOG_LEVEL: 'debug' }, deployOnPush: true });
    const res = await create(data);
    expect(res.statusCode).toBe(201);
    const { service } = res.json();
    expect(service.id).toMatch(/^svc_/);
    expect(service.data).toEqual(data);
    expect(res.headers.location).toBe(`/v1/services/${service.id}`);

    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${service.id}`, headers: { authorization: `Bearer ${admin}` } });
    expect(read.json()).toEqual({ service });
    const tr = await callTypedRequest(t.app, 'getServiceById', { identity: identity(admin), serviceId: service.id });
    expect(tr.json().response).toEqual({ service });
  });

  it('creates a service over TypedRequest', async () => {
    const data = serviceData();
    const tr = await callTypedRequest(t.app, 'createService', { identity: identity(admin), serviceData: data });
    expect(tr.statusCode).toBe(200);
    expect(tr.json().response.service.data).toEqual(data);
  });

  it('refuses server-managed fields with server-managed-field and writes nothing (REST and TypedRequest)', async () => {
    const before = await count();
    for (const field of ['immutableImageRequired', 'imageDeployment', 'imageRolloutStatus']) {
      const res = await create(serviceData({ [field]: field === 'immutableImageRequired' ? true : {} }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'server-managed-field', fields: [`/body/${field}`] });
      const tr = await t.app.inject({
        method: 'POST',
        url: '/typedrequest',
        payload: typedRequest('createService', { identity: identity(admin), serviceData: serviceData({ [field]: true }) }),
      });
      expect(tr.json().error.data).toMatchObject({ code: 'server-managed-field', fields: [`/request/serviceData/${field}`] });
    }
    expect(await count()).toBe(before);
  });

  it('names the offending field of invalid input and writes nothing', async () => {
    const before = await count();
    const cases: Array<[Record<string, unknown>, string]> = [
      [serviceData({ scaleFactor: 1.5 }), '/body/scaleFactor'],
      [serviceData({ name: '' }), '/body/name'],
      [serviceData({ ports: { web: 70000 } }), '/body/ports/web'],
      [serviceData({ unknownField: 1 }), '/body/unknownField'],
      [serviceData({ environment: { $where: 'x' } }), '/body/environment/$where'],
      [serviceData({ environment: { 'a.b': 'x' } }), '/body/environment/a.b'],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      const problem = res.json();
      expect(problem.code).toBe('validation-failed');
      expect(problem.problems.map((p: { field: string }) => p.field)).toContain(field);
    }
    const missing = serviceData();
    delete missing['imageVersion'];
    const res = await create(missing);
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toContain('imageVersion');
    expect(await count()).toBe(before);
  });

  it('rejects bodies that are not JSON objects, prototype pollution and oversized bodies', async () => {
    const before = await count();
    const raw = (contentType: string, payload: string) => t.app.inject({
      method: 'POST', url: '/v1/services', headers: { authorization: `Bearer ${admin}`, 'content-type': contentType }, payload,
    });
    const badJson = await raw('application/json', '{"name":');
    expect(badJson.statusCode).toBe(400);
    expect(badJson.json().code).toBe('validation-failed');
    const proto = await raw('application/json', `{"__proto__":{"admin":true},${JSON.stringify(serviceData()).slice(1)}`);
    expect(proto.statusCode).toBe(400);
    expect(({} as Record<string, unknown>)['admin']).toBeUndefined();
    const huge = await create(serviceData({ description: 'x'.repeat(2 * 1024 * 1024) }));
    expect(huge.statusCode).toBe(413);
    expect(huge.json().code).toBe('payload-too-large');
    const text = await raw('text/plain', 'hello');
    expect(text.statusCode).toBe(415);
    expect(await count()).toBe(before);
  });

  it('update replaces the writable data, removes omitted optional fields and keeps server-managed ones', async () => {
    const { service } = (await create(serviceData({ deployOnPush: true, secretBundleId: 'b1' }))).json();
    // A promotion (issue 3) writes these; simulate the server-managed state directly.
    await t.db.collection('services').updateOne({ _id: service.id }, { $set: { 'data.immutableImageRequired': true } });
    const next = serviceData({ name: service.data.name, imageVersion: '2.0.0' });
    const res = await t.app.inject({ method: 'PUT', url: `/v1/services/${service.id}`, headers: { authorization: `Bearer ${admin}` }, payload: next });
    expect(res.statusCode).toBe(200);
    expect(res.json().service.data).toEqual({ ...next, immutableImageRequired: true });
  });

  it('update of an unknown service is service-not-found', async () => {
    const res = await t.app.inject({ method: 'PUT', url: '/v1/services/svc_missing', headers: { authorization: `Bearer ${admin}` }, payload: serviceData() });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('service-not-found');
  });

  it('service names are unique: a second create with the same name is service-already-exists', async () => {
    const data = serviceData();
    const first = await create(data);
    expect(first.statusCode).toBe(201);
    const created = first.json().service;
    const again = await create(data);
    expect(again.statusCode).toBe(409);
    // The answer names the service that holds the name, so a lost id can be found again.
    expect(again.json()).toMatchObject({ code: 'service-already-exists', name: data.name, serviceId: created.id });
    expect(again.json().detail).toContain(created.id);
  });
});

describe('services: listing and lookup by name', () => {
  let t: TestApp;
  let reader: string;
  let admin: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    reader = await t.token('user');
  });
  afterAll(async () => { await t.close(); });

  const list = (query: string, token = reader) => t.app.inject({ method: 'GET', url: `/v1/services${query}`, headers: { authorization: `Bearer ${token}` } });

  it('lists services sorted by name in cursor pages, finds one by its exact name, over REST and TypedRequest', async () => {
    const names = ['delta', 'alpha', 'echo', 'charlie', 'bravo'];
    const ids = new Map<string, string>();
    for (const name of names) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/services', headers: { authorization: `Bearer ${admin}` }, payload: serviceData({ name }) });
      ids.set(name, res.json().service.id);
    }
    const first = await list('?limit=2');
    expect(first.statusCode).toBe(200);
    expect(first.json().services.map((s: { name: string }) => s.name)).toEqual(['alpha', 'bravo']);
    expect(first.json().services[0]).toEqual({ id: ids.get('alpha'), name: 'alpha' });
    const second = await list(`?limit=2&cursor=${first.json().nextCursor}`);
    expect(second.json().services.map((s: { name: string }) => s.name)).toEqual(['charlie', 'delta']);
    const third = await list(`?limit=2&cursor=${second.json().nextCursor}`);
    expect(third.json()).toEqual({ services: [{ id: ids.get('echo'), name: 'echo' }] });

    const byName = await list('?name=charlie');
    expect(byName.json()).toEqual({ services: [{ id: ids.get('charlie'), name: 'charlie' }] });
    expect((await list('?name=nope')).json()).toEqual({ services: [] });
    // A name and a cursor: the service of that name only if it comes after the cursor (the second page ended at delta).
    expect((await list(`?name=charlie&cursor=${second.json().nextCursor}`)).json()).toEqual({ services: [] });
    expect((await list(`?name=echo&cursor=${second.json().nextCursor}`)).json()).toEqual({ services: [{ id: ids.get('echo'), name: 'echo' }] });

    const tr = await callTypedRequest(t.app, 'listServices', { identity: identity(reader), name: 'echo' });
    expect(tr.json().response).toEqual({ services: [{ id: ids.get('echo'), name: 'echo' }] });
  });

  it('refuses a cursor it did not issue and bad limits, naming the field', async () => {
    const bad = await list('?cursor=%2B%2B%2B');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().problems).toEqual([expect.objectContaining({ field: '/querystring/cursor' })]);
    const limit = await list('?limit=0');
    expect(limit.statusCode).toBe(400);
    expect(limit.json().problems[0].field).toBe('/querystring/limit');
  });

  it('needs a token', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/services' })).statusCode).toBe(401);
  });
});

describe('TypedRequest dispatcher', () => {
  let t: TestApp;
  beforeAll(async () => { t = await buildTestApp(); });
  afterAll(async () => { await t.close(); });

  it('answers an unknown method with an error envelope, not a crash', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest('dropDatabase', {}, 'c-7') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      method: 'dropDatabase', response: null, error: { data: { code: 'method-not-found' } }, correlation: { id: 'c-7', phase: 'response' },
    });
  });

  it('answers a malformed envelope with a validation error envelope', async () => {
    for (const body of [{ request: {} }, { method: 5, request: {} }, [], 'x']) {
      const res = await t.app.inject({ method: 'POST', url: '/typedrequest', payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(200);
      expect(res.json().error.data.code).toBe('validation-failed');
    }
  });

  it('validates the payload against the method schema, naming the field', async () => {
    const jwt = await t.token('admin');
    const res = await t.app.inject({
      method: 'POST',
      url: '/typedrequest',
      payload: typedRequest('getServiceById', { identity: { jwt }, serviceId: 42 }),
    });
    expect(res.json().error.data).toMatchObject({ code: 'validation-failed', problems: [{ field: '/request/serviceId' }] });
    const extra = await t.app.inject({
      method: 'POST',
      url: '/typedrequest',
      payload: typedRequest('getServiceById', { identity: { jwt }, serviceId: 'a', $where: '1' }),
    });
    expect(extra.json().error.data.code).toBe('validation-failed');
  });

  it('application errors keep their code and text', async () => {
    const jwt = await t.token('user');
    const res = await callTypedRequest(t.app, 'getServiceById', { identity: { jwt }, serviceId: 'svc_nope' });
    expect(res.json().error).toMatchObject({ text: "service 'svc_nope' does not exist", data: { code: 'service-not-found', serviceId: 'svc_nope' } });
  });
});
