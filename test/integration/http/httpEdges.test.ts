/**
 * Found by an independent acceptance run (each test failed on the code before its fix): bad input that
 * never reaches a route (docs/operations.md "Bad input of any kind gets a clear 4xx with the offending field";
 * docs/api.md "Every answer … carries Cache-Control: no-store and x-request-id"; docs/errors.md "RFC 9457
 * application/problem+json with … code"), and input the two dialects treat differently. Over a real socket
 * to a real server process.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { typedRequest, identity } from '../../support/app.js';
import { bearer, createFixtureService, httpCaller, pushRelease, registerCluster, type Caller } from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';

/** Sends raw bytes, answers what came back until the server closed (or 5 s passed). */
function rawExchange (url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on('data', (chunk) => { received += chunk.toString('latin1'); });
    socket.on('close', () => { clearTimeout(timer); resolve(received); });
    socket.on('error', reject);
    socket.write(request);
  });
}

interface RawAnswer { status: number, headers: Record<string, string>, body: string }
function parseAnswer (text: string): RawAnswer {
  const [head = '', body = ''] = text.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

describe('HTTP edges', () => {
  let fleet: Fleet;
  let url: string;
  let caller: Caller;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 1 });
    url = fleet.servers[0]!.url;
    caller = httpCaller(url);
    admin = await fleet.token('admin');
    api = await fleet.token('api');
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const requests: Record<string, () => string> = {
    // A 20 KB header: a long cookie, a proxy's trace header, a long Authorization.
    'a request whose headers are larger than the server accepts (431)': () =>
      `GET /v1/services HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nX-Trace: ${'a'.repeat(20_000)}\r\n\r\n`,
    // `GET /v1/services?name=<20 KB>`: a query string is part of the request head too.
    'a request whose query string makes the head too large (431)': () =>
      `GET /v1/services?name=${'n'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\n\r\n`,
    'a snapshot report with a malformed Content-Length (400)': () =>
      'POST /v1/deployment-snapshots HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
    'a request with a control character in a header value (400)': () =>
      `GET /v1/services HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nX-Odd: a\u0001b\r\n\r\n`,
  };
  for (const [name, request] of Object.entries(requests)) {
    it(`${name}: a 4xx application/problem+json with a code, Cache-Control: no-store and x-request-id`, async () => {
      const answer = parseAnswer(await rawExchange(url, request()));
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect({
        contentType: answer.headers['content-type']?.split(';')[0],
        cacheControl: answer.headers['cache-control'],
        requestId: typeof answer.headers['x-request-id'],
      }, answer.body).toEqual({ contentType: 'application/problem+json', cacheControl: 'no-store', requestId: 'string' });
      expect(JSON.parse(answer.body)).toMatchObject({ code: expect.any(String), status: answer.status });
      // The process is still serving.
      expect((await caller.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    });
  }

  describe('promotion bodies that say two things at once are refused, not guessed', () => {
    it('a duplicated expectedRolloutGeneration (JSON object with the member twice) is 400 naming the field, and nothing is promoted', async () => {
      await registerCluster(caller, admin, 'cdup', ['dup1']);
      const svc = await createFixtureService(caller, admin, { clusterIds: ['cdup'], replicasPerNode: 1 });
      const release = await pushRelease(caller, api, svc);
      // A proxy or a validator reading the first member sees generation 7; the server must not act on the second.
      const body = '{"expectedRolloutGeneration":7,"expectedRolloutGeneration":0,"enableImmutableImage":true}';
      const res = await fetch(`${url}/v1/services/${svc.id}/image-releases/${release.releaseId}/promote`, {
        method: 'POST', headers: { ...bearer(api), 'content-type': 'application/json', 'idempotency-key': 'dup-key-1' }, body,
      });
      const answer = await res.json() as { code?: string, problems?: Array<{ field: string }> };
      const service = (await caller.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service;
      expect({ status: res.status, code: answer.code, generation: service.data.imageDeployment?.rolloutGeneration ?? 0 })
        .toEqual({ status: 400, code: 'validation-failed', generation: 0 });
      expect(answer.problems?.map((p) => p.field)).toContain('/body/expectedRolloutGeneration');
    });
  });

  describe('TypedRequest idempotency keys follow the same rule as the REST header', () => {
    const keys: Record<string, string> = { 'blank (a space)': ' ', 'a NUL character': '\u0000', 'a newline': '\n', '256 characters': 'k'.repeat(256) };
    for (const [name, key] of Object.entries(keys)) {
      it(`${name}: REST refuses it, and so does promoteServiceImageRelease (nothing promoted)`, async () => {
        await registerCluster(caller, admin, 'ckey', ['key1']);
        const svc = await createFixtureService(caller, admin, { clusterIds: ['ckey'], replicasPerNode: 1 });
        const release = await pushRelease(caller, api, svc);
        const res = await caller.inject({
          method: 'POST',
          url: '/typedrequest',
          payload: typedRequest('promoteServiceImageRelease', {
            identity: identity(api),
            serviceId: svc.id,
            releaseId: release.releaseId,
            idempotencyKey: key,
            expectedRolloutGeneration: 0,
            enableImmutableImage: true,
          }),
        });
        expect(res.statusCode).toBe(200);
        const service = (await caller.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service;
        expect({ code: res.json().error?.data?.code, generation: service.data.imageDeployment?.rolloutGeneration ?? 0 }, res.body.slice(0, 300))
          .toEqual({ code: expect.stringMatching(/^(validation-failed|idempotency-key-missing)$/), generation: 0 });
      });
    }
  });
});
