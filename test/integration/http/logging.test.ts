import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { redactPaths } from '../../../src/app.js';
import { buildTestApp, logCapture, productionLogger, typedRequest } from '../../support/app.js';

/**
 * The production logger — `loggerOptions(config)` from src/app.ts: pino at LOG_LEVEL with the app's
 * `redactPaths` — never writes a token. These tests configure no logger of their own: they capture
 * what the app's configuration writes (Fastify passes `stream` on to pino as its destination).
 */
describe('logging with the production logger configuration', () => {
  it('at trace, the request lines carry the request id and URL, never the bearer token or the TypedRequest jwt', async () => {
    const logs = logCapture();
    const t = await buildTestApp({ LOG_LEVEL: 'trace' }, { logStream: logs.stream });
    try {
      expect(t.config.LOG_LEVEL).toBe('trace');
      const restToken = await t.token('user', { subject: 'rest-caller' });
      const typedToken = await t.token('user', { subject: 'typedrequest-caller' });
      await t.app.inject({ method: 'GET', url: '/v1/services/svc_x', headers: { authorization: `Bearer ${restToken}`, 'x-request-id': 'req-rest' } });
      const envelope = typedRequest('getServiceById', { identity: { jwt: typedToken }, serviceId: 'svc_x' });
      await t.app.inject({ method: 'POST', url: '/typedrequest', headers: { 'x-request-id': 'req-typed' }, payload: envelope });
      // A refused token is logged as a rejection (an info line with the request's context).
      await t.app.inject({ method: 'GET', url: '/v1/services/svc_x', headers: { authorization: `Bearer ${restToken}x`, 'x-request-id': 'req-bad' } });

      // The capture works: the requests are in it, with their ids and URLs.
      const entries = logs.entries();
      const ofRequest = (id: string) => entries.filter((entry) => entry['reqId'] === id);
      for (const id of ['req-rest', 'req-typed', 'req-bad']) {
        expect(ofRequest(id).map((e) => e['msg']), id).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
      }
      expect(ofRequest('req-rest')[0]).toMatchObject({ req: { method: 'GET', url: '/v1/services/svc_x' } });
      expect(ofRequest('req-typed')[0]).toMatchObject({ req: { method: 'POST', url: '/typedrequest' } });
      expect(ofRequest('req-bad').some((e) => e['msg'] === 'request rejected')).toBe(true);
      // Neither token, nor its signature alone, anywhere.
      for (const token of [restToken, typedToken]) {
        const signature = token.split('.')[2]!;
        for (const line of logs.lines) {
          expect(line).not.toContain(token);
          expect(line).not.toContain(signature);
        }
      }
    } finally {
      await t.close();
    }
  });

  it('every redact path censors a token placed where it points (what a careless log call would write)', async () => {
    const logs = logCapture();
    const t = await buildTestApp({ LOG_LEVEL: 'debug' }, { logStream: logs.stream });
    try {
      const token = await t.token('admin', { subject: 'careless' });
      /** For each redact path, a log object with the token where the path points. */
      const placed: Record<string, Record<string, unknown>> = {
        'req.headers.authorization': { req: { headers: { authorization: `Bearer ${token}` } } },
        'req.headers.cookie': { req: { headers: { cookie: `session=${token}` } } },
        'request.identity.jwt': { request: { identity: { jwt: token }, serviceId: 'svc_x' } },
        '*.identity.jwt': { envelope: { identity: { jwt: token } } },
        token: { token },
      };
      // Through the app's own logger (Fastify's `req` serializer drops headers before redaction) …
      for (const [path, object] of Object.entries(placed)) t.app.log.info(object, `app: ${path}`);
      // … and through pino with the same options and no serializer: the header paths matter once headers reach a line.
      const bare = pino(productionLogger(t.config), logs.stream);
      for (const [path, object] of Object.entries(placed)) bare.info(object, `bare: ${path}`);

      const entries = logs.entries();
      const message = (e: Record<string, unknown>) => String(e['msg']);
      expect(entries.map(message)).toEqual([...Object.keys(placed).map((p) => `app: ${p}`), ...Object.keys(placed).map((p) => `bare: ${p}`)]);
      for (const line of logs.lines) {
        expect(line).not.toContain(token);
        expect(line).not.toContain(token.split('.')[2]!);
      }
      for (const entry of entries.filter((e) => message(e).startsWith('bare: '))) expect(JSON.stringify(entry), message(entry)).toContain('"[redacted]"');
      expect(entries.find((e) => message(e) === 'app: request.identity.jwt'))
        .toMatchObject({ request: { identity: { jwt: '[redacted]' }, serviceId: 'svc_x' } });
      // Every redact path has its case here, and every case is a redact path.
      expect(Object.keys(placed).sort()).toEqual([...redactPaths].sort());
    } finally {
      await t.close();
    }
  });
});
