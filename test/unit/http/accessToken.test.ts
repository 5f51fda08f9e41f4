import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { queryAccessToken, stripAccessToken } from '../../../src/http/accessToken.js';

const request = (url: string): IncomingMessage => ({ url } as IncomingMessage);

describe('the access_token query parameter', () => {
  it('is taken out of the URL and kept aside for the one route that accepts it', () => {
    const req = request('/v1/services/s1/rollout/events?after=3&access_token=abc.def&x=1');
    expect(stripAccessToken(req)).toBe('/v1/services/s1/rollout/events?after=3&x=1');
    expect(queryAccessToken(req)).toBe('abc.def');
  });

  it('credential-looking parameters under another spelling are removed from the URL (never logged) and never accepted', () => {
    for (const [url, clean] of [
      ['/v1/services?ACCESS_TOKEN=secret', '/v1/services'],
      ['/v1/services?limit=5&Access-Token=secret', '/v1/services?limit=5'],
      ['/v1/services?token=secret&jwt=secret2&name=a', '/v1/services?name=a'],
      ['/v1/services/s1/rollout/events?after=1;access_token=secret', '/v1/services/s1/rollout/events?after=1'],
      ['/v1/services?acc%65ss_token=secret', '/v1/services'],
    ] as const) {
      const req = request(url);
      const stripped = stripAccessToken(req);
      expect(stripped, url).toBe(clean);
      expect(stripped).not.toContain('secret');
      expect(queryAccessToken(req), url).toBe(url.includes('acc%65ss_token') ? 'secret' : undefined);
    }
  });

  it('a token under any other name or shape stays out of the URL too (never accepted from there)', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJlX2hlcmU';
    for (const url of [
      `/v1/services/s1/rollout/events?after=3?access_token=${jwt}`,
      `/v1/services?access_token%3D${jwt}`,
      `/v1/services?access_token[]=${jwt}`,
      `/v1/services?x-access-token=${jwt}`,
      `/v1/services?auth_token=${jwt}&limit=5`,
    ]) {
      const req = request(url);
      const stripped = stripAccessToken(req);
      expect(stripped, url).not.toContain(jwt.split('.')[2]);
      expect(queryAccessToken(req), url).toBeUndefined();
    }
    expect(stripAccessToken(request(`/v1/services?auth_token=${jwt}&limit=5`))).toBe('/v1/services?auth_token=[redacted]&limit=5');
  });

  it('leaves other URLs as they are', () => {
    for (const url of ['/v1/services', '/v1/services?author=me&authority=x', '/v1/services?name=token-service']) {
      expect(stripAccessToken(request(url))).toBe(url);
    }
  });
});
