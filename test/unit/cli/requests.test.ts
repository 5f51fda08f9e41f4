import { describe, expect, it } from 'vitest';
import {
  abortRequest, historyRequest, promoteRequest, queryString, releasesRequest, rollbackRequest, rolloutViewRequest, serviceRequest, servicesRequest,
} from '../../../src/cli/release/requests.js';

describe('cloudly-release request building', () => {
  it('query strings: only the defined values, encoded, in order', () => {
    expect(queryString({})).toBe('');
    expect(queryString({ name: undefined, limit: 20 })).toBe('?limit=20');
    expect(queryString({ name: 'shop web/eu', limit: 5, cursor: 'a&b=c' })).toBe('?name=shop%20web%2Feu&limit=5&cursor=a%26b%3Dc');
  });

  it('reads: the service, its rollout view, releases and history pages', () => {
    expect(serviceRequest('svc 1')).toEqual({ method: 'GET', path: '/v1/services/svc%201' });
    expect(rolloutViewRequest('svc_1')).toEqual({ method: 'GET', path: '/v1/services/svc_1/rollout' });
    expect(releasesRequest({ serviceId: 'svc_1', limit: 20 })).toEqual({ method: 'GET', path: '/v1/services/svc_1/image-releases?limit=20' });
    expect(historyRequest({ serviceId: 'svc_1', limit: 100, cursor: '1717000000000' }))
      .toEqual({ method: 'GET', path: '/v1/services/svc_1/rollouts?limit=100&cursor=1717000000000' });
  });

  it('services: GET /v1/services?name&limit&cursor, each only when given', () => {
    expect(servicesRequest({ limit: 20 })).toEqual({ method: 'GET', path: '/v1/services?limit=20' });
    expect(servicesRequest({ name: 'shop', limit: 50, cursor: 'next' })).toEqual({ method: 'GET', path: '/v1/services?name=shop&limit=50&cursor=next' });
  });

  const input = { serviceId: 'svc_1', idempotencyKey: 'cr1-gha-abort-0123', expectedGeneration: 4, expectedRolloutId: 'ro_4', reason: 'canary errors' };

  it('abort: POST …/rollout/abort with the Idempotency-Key and both expectations', () => {
    expect(abortRequest(input)).toEqual({
      method: 'POST',
      path: '/v1/services/svc_1/rollout/abort',
      headers: { 'idempotency-key': 'cr1-gha-abort-0123' },
      body: { expectedRolloutGeneration: 4, expectedCurrentRolloutId: 'ro_4', reason: 'canary errors' },
    });
  });

  it('promote sends the current rollout only when given; rollback always', () => {
    expect(promoteRequest({ ...input, releaseId: 'rel/1', expectedRolloutId: undefined })).toEqual({
      method: 'POST',
      path: '/v1/services/svc_1/image-releases/rel%2F1/promote',
      headers: { 'idempotency-key': 'cr1-gha-abort-0123' },
      body: { expectedRolloutGeneration: 4, enableImmutableImage: true, reason: 'canary errors' },
    });
    expect(promoteRequest({ ...input, releaseId: 'rel_1' }).body).toEqual({
      expectedRolloutGeneration: 4, expectedCurrentRolloutId: 'ro_4', enableImmutableImage: true, reason: 'canary errors',
    });
    expect(promoteRequest({ ...input, releaseId: 'rel_1', breakGlassGrant: 'bg_1' }).headers)
      .toEqual({ 'idempotency-key': 'cr1-gha-abort-0123', 'break-glass-grant': 'bg_1' });
    expect(rollbackRequest({ ...input, releaseId: 'rel_1' })).toMatchObject({
      path: '/v1/services/svc_1/image-releases/rel_1/rollback',
      body: { expectedCurrentRolloutId: 'ro_4', expectedRolloutGeneration: 4, reason: 'canary errors' },
    });
  });
});
