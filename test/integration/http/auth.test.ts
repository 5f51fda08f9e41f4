import { randomBytes } from 'node:crypto';
import { SignJWT, exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../../src/domain/tokens.js';
import { buildTestApp, identity, serviceData, typedRequest, type TestApp } from '../../support/app.js';

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const inOneHour = (): number => Math.floor(Date.now() / 1000) + 3600;

describe('authentication and roles (REST and TypedRequest alike)', () => {
  let t: TestApp;
  let serviceId: string;

  beforeAll(async () => {
    t = await buildTestApp();
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: { authorization: `Bearer ${await t.token('admin')}` },
      payload: serviceData(),
    });
    expect(created.statusCode).toBe(201);
    serviceId = created.json().service.id;
  });
  afterAll(async () => { await t.close(); });

  const secret = (): string => t.config.AUTH_JWT_SECRET ?? '';

  /** Tokens that must be refused, built fresh per test (expiry is relative to now). */
  const badTokens: Array<[string, () => Promise<string>]> = [
    ['malformed (not a JWT)', async () => 'not-a-jwt'],
    ['malformed (three garbage parts)', async () => 'abc.def.ghi'],
    ['alg: none (unsigned)', async () => `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: 'x', role: 'admin', type: 'human', exp: inOneHour() })}.`],
    ['expired', async () => new SignJWT({ role: 'admin', type: 'human' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200).setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(new TextEncoder().encode(secret()))],
    ['wrongly signed (other secret)', async () => mintToken({ kind: 'secret', secret: randomBytes(32).toString('hex') }, { subject: 'x', role: 'admin' })],
    ['wrong algorithm (HS512 with the right secret)', async () => new SignJWT({ role: 'admin', type: 'human' })
      .setProtectedHeader({ alg: 'HS512' }).setSubject('x').setExpirationTime(inOneHour()).sign(new TextEncoder().encode(secret()))],
    ['no exp claim', async () => new SignJWT({ role: 'admin', type: 'human' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x')
      .sign(new TextEncoder().encode(secret()))],
    ['unknown role claim', async () => new SignJWT({ role: 'root', type: 'human' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x')
      .setExpirationTime(inOneHour()).sign(new TextEncoder().encode(secret()))],
    ['cluster role without clusterId', async () => new SignJWT({ role: 'cluster', type: 'machine' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x')
      .setExpirationTime(inOneHour()).sign(new TextEncoder().encode(secret()))],
  ];

  it('REST: a missing Authorization header is 401 unauthenticated', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}` });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'unauthenticated', status: 401, detail: expect.stringContaining('missing Authorization') });
  });

  it('REST: a non-Bearer Authorization header is 401 unauthenticated', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: { authorization: 'Basic YWRtaW46YWRtaW4=' } });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthenticated');
  });

  it('TypedRequest: a request without identity.jwt is an unauthenticated error envelope (HTTP 200)', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest('getServiceById', { serviceId }) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ method: 'getServiceById', error: { data: { code: 'unauthenticated' } }, correlation: { phase: 'response' } });
  });

  for (const [name, make] of badTokens) {
    it(`refuses a token that is ${name}: REST 401 and TypedRequest unauthenticated`, async () => {
      const token = await make();
      const rest = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: { authorization: `Bearer ${token}` } });
      expect(rest.statusCode).toBe(401);
      expect(rest.json().code).toBe('unauthenticated');

      const tr = await t.app.inject({
        method: 'POST',
        url: '/typedrequest',
        payload: typedRequest('getServiceById', { identity: identity(token), serviceId }),
      });
      expect(tr.statusCode).toBe(200);
      expect(tr.json().error.data.code).toBe('unauthenticated');
      expect(tr.json().response).toBeNull();
    });
  }

  it('says why an expired token is refused', async () => {
    const token = await badTokens.find(([n]) => n === 'expired')![1]();
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: { authorization: `Bearer ${token}` } });
    expect(res.json().detail).toMatch(/expired/);
  });

  it('wrong role: REST 403 forbidden and TypedRequest forbidden, nothing written', async () => {
    const before = await t.db.collection('services').countDocuments();
    for (const role of ['user', 'api', 'cluster'] as const) {
      const token = await t.token(role);
      const rest = await t.app.inject({ method: 'POST', url: '/v1/services', headers: { authorization: `Bearer ${token}` }, payload: serviceData() });
      expect(rest.statusCode).toBe(403);
      expect(rest.json()).toMatchObject({ code: 'forbidden', detail: expect.stringContaining(`role '${role}' may not create services`) });

      const tr = await t.app.inject({
        method: 'POST',
        url: '/typedrequest',
        payload: typedRequest('createService', { identity: identity(token), serviceData: serviceData() }),
      });
      expect(tr.json().error.data.code).toBe('forbidden');
    }
    const cluster = await t.token('cluster');
    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: { authorization: `Bearer ${cluster}` } });
    expect(read.statusCode).toBe(403);
    expect(await t.db.collection('services').countDocuments()).toBe(before);
  });

  it('only the verified token counts: identity fields claiming admin do not help a user token', async () => {
    const token = await t.token('user');
    const tr = await t.app.inject({
      method: 'POST',
      url: '/typedrequest',
      payload: typedRequest('createService', {
        identity: { name: 'root', userId: 'root', role: 'admin', type: 'human', expiresAt: 0, jwt: token },
        serviceData: serviceData(),
      }),
    });
    expect(tr.json().error.data.code).toBe('forbidden');
  });

  it('every reading role may read, REST and TypedRequest', async () => {
    for (const role of ['admin', 'user', 'api'] as const) {
      const token = await t.token(role);
      const rest = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: { authorization: `Bearer ${token}` } });
      expect(rest.statusCode).toBe(200);
      expect(rest.json().service.id).toBe(serviceId);
      const tr = await t.app.inject({
        method: 'POST',
        url: '/typedrequest',
        payload: typedRequest('getServiceById', { identity: identity(token), serviceId }, 'corr-1'),
      });
      expect(tr.statusCode).toBe(200);
      expect(tr.json()).toMatchObject({ method: 'getServiceById', response: { service: { id: serviceId } }, correlation: { id: 'corr-1', phase: 'response' } });
      expect(tr.json().error).toBeUndefined();
      expect(JSON.stringify(tr.json())).not.toContain(token);
    }
  });
});

describe('public-key verification (AUTH_JWT_PUBLIC_KEY)', () => {
  it('accepts RS256 tokens from the private key and refuses HS256 tokens keyed with the public key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const pem = await exportSPKI(publicKey);
    const t = await buildTestApp({ AUTH_JWT_SECRET: undefined, AUTH_JWT_PUBLIC_KEY: pem, AUTH_JWT_ALGORITHM: 'RS256' });
    try {
      const good = await mintToken({ kind: 'private-key', pem: await exportPKCS8(privateKey), algorithm: 'RS256' }, { subject: 'ci', role: 'api' });
      const ok = await t.app.inject({ method: 'GET', url: '/v1/services/nope', headers: { authorization: `Bearer ${good}` } });
      expect(ok.statusCode).toBe(404);
      expect(ok.json().code).toBe('service-not-found');

      // The classic key-confusion attack: an HMAC token whose secret is the public key text.
      const confused = await mintToken({ kind: 'secret', secret: pem }, { subject: 'ci', role: 'admin' });
      const bad = await t.app.inject({ method: 'GET', url: '/v1/services/nope', headers: { authorization: `Bearer ${confused}` } });
      expect(bad.statusCode).toBe(401);
      expect(bad.json().code).toBe('unauthenticated');
    } finally {
      await t.close();
    }
  });
});
