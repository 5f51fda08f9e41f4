import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { redactPaths } from '../../../src/app.js';
import { buildTestApp, typedRequest } from '../../support/app.js';

describe('logging', () => {
  it('writes JSON lines with the request id and never the token', async () => {
    const lines: string[] = [];
    const stream = new Writable({ write (chunk: Buffer, _enc, done) { lines.push(...chunk.toString().split('\n').filter(Boolean)); done(); } });
    const t = await buildTestApp({}, { logger: { level: 'trace', stream, redact: { paths: redactPaths, censor: '[redacted]' } } });
    try {
      const token = await t.token('user', { subject: 'op' });
      await t.app.inject({ method: 'GET', url: '/v1/services/svc_x', headers: { authorization: `Bearer ${token}`, 'x-request-id': 'req-123' } });
      await t.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest('getServiceById', { identity: { jwt: token }, serviceId: 'svc_x' }) });
      await t.app.inject({ method: 'GET', url: '/v1/services/svc_x', headers: { authorization: `Bearer ${token}x` } });
      expect(lines.length).toBeGreaterThan(3);
      const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(parsed.some((entry) => entry['reqId'] === 'req-123')).toBe(true);
      for (const line of lines) expect(line).not.toContain(token);
    } finally {
      await t.close();
    }
  });
});
