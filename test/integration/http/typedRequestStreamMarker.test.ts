/**
 * Found by an independent acceptance run (each test failed on the code before its fix): the real
 * `@api.global/typedrequest` 3.3.0 client (what the Cloudly web UI uses) must work for every method on
 * every service the server accepted (docs/api.md, docs/api.md).  The client decodes EVERY object of a reply
 * that has a truthy `_isVirtualStream` member into a `VirtualStream` (and starts a keep-alive loop that
 * POSTs `##VirtualStream##` to the server). The server accepts such a member in caller-writable maps (an
 * environment variable named `_isVirtualStream`) and hands it back verbatim, so the UI gets a stream
 * object instead of the service's environment. The server must either refuse the key when it is written
 * (400 naming it) or never send it in that form.
 */
import { TypedRequest } from '@api.global/typedrequest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { IRequest_Any_Cloudly_GetServiceById } from '../../../src/contracts/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer } from '../../support/fixtures.js';

const identity = (jwt: string) => ({ name: 'ui-user', userId: 'user-1', expiresAt: Date.now() + 3_600_000, jwt });

describe('the real TypedRequest client and the stream marker key', () => {
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

  it('getServiceById of a service whose environment has a variable named _isVirtualStream resolves with that environment ' +
    '(or the write was refused naming the key)', async () => {
    vi.spyOn(console, 'log').mockImplementation(() => undefined);
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const environment = { _isVirtualStream: 'enabled', streamId: 'dashboard' };
    const created = await t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload: serviceData({ environment }) });
    if (created.statusCode !== 201) {
      // Refusing the key is a fine answer too: a clear 400 that names it.
      expect({ status: created.statusCode, code: created.json().code }).toEqual({ status: 400, code: 'validation-failed' });
      expect(JSON.stringify(created.json().problems)).toContain('_isVirtualStream');
      return;
    }
    const serviceId = created.json().service.id as string;
    const read = await new TypedRequest<IRequest_Any_Cloudly_GetServiceById>(endpoint, 'getServiceById')
      .fire({ identity: identity(admin), serviceId });
    const got = read.service.data.environment as unknown;
    expect(got?.constructor?.name, 'the client turned the environment into a VirtualStream').toBe('Object');
    expect(got).toEqual(environment);
  });
});
