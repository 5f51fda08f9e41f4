import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { LoggedEvent } from '../../../src/domain/events.js';
import {
  cloudEventOf, coversService, mayRetry, retryAfterMsOf, retryDelayMs, verdictOf, wantsType, type RetryPolicy,
} from '../../../src/domain/webhooks.js';

const policy: RetryPolicy = { maxAttempts: 5, maxAgeMs: 60_000, baseDelayMs: 1_000, maxDelayMs: 10_000 };

describe('webhook rules', () => {
  it('backs off exponentially with jitter over the upper half, capped; a longer Retry-After wins, capped too', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(policy, n, 0))).toEqual([500, 1_000, 2_000, 4_000, 5_000, 5_000]);
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(policy, n, 0.999_999))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    expect(retryDelayMs(policy, 1, 0.5, 7_000)).toBe(7_000);
    expect(retryDelayMs(policy, 1, 0.5, 100)).toBe(750);
    expect(retryDelayMs(policy, 1, 0.5, 3_600_000)).toBe(10_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMsOf('3', 0)).toBe(3_000);
    expect(retryAfterMsOf(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMsOf('soon', 0)).toBeUndefined();
    expect(retryAfterMsOf(undefined, 0)).toBeUndefined();
  });

  it('retries no answer, timeouts, 408, 429 and 5xx; gives up other answers; 410 ends the subscription', () => {
    const answer = (status: number) => verdictOf({ kind: 'answer', status });
    expect([200, 204, 299].map(answer)).toEqual(['delivered', 'delivered', 'delivered']);
    expect([408, 429, 500, 502, 503].map(answer)).toEqual(['retry', 'retry', 'retry', 'retry', 'retry']);
    expect([301, 302, 400, 401, 404, 413].map(answer)).toEqual(['dead', 'dead', 'dead', 'dead', 'dead', 'dead']);
    expect(answer(410)).toBe('gone');
    expect(verdictOf({ kind: 'failure', reason: 'timeout' })).toBe('retry');
    expect(verdictOf({ kind: 'failure', reason: 'unreachable' })).toBe('retry');
    expect(verdictOf({ kind: 'failure', reason: 'not-allowed' })).toBe('dead');
  });

  it('stops retrying at the attempts or the age, whichever comes first', () => {
    expect(mayRetry(policy, 4, 0, 59_999)).toBe(true);
    expect(mayRetry(policy, 5, 0, 1)).toBe(false);
    expect(mayRetry(policy, 1, 0, 60_000)).toBe(false);
  });

  it('covers all services, a list, or a name pattern (only * is special)', () => {
    expect(coversService({ all: true }, { id: 'a' })).toBe(true);
    expect(coversService({ ids: ['a', 'b'] }, { id: 'b' })).toBe(true);
    expect(coversService({ ids: ['a'] }, { id: 'c' })).toBe(false);
    expect(coversService({ namePattern: 'payments-*' }, { id: 'x', name: 'payments-api' })).toBe(true);
    expect(coversService({ namePattern: 'payments-*' }, { id: 'x', name: 'search-api' })).toBe(false);
    expect(coversService({ namePattern: 'a.b' }, { id: 'x', name: 'aXb' })).toBe(false);
    expect(coversService({ namePattern: '*' }, { id: 'x' })).toBe(false);
  });

  it('wants every type when none is named, else the named ones', () => {
    expect(wantsType({ types: [] }, 'rollout.failed')).toBe(true);
    expect(wantsType({ types: ['dev.cloudly.release.rollout.failed'] }, 'rollout.failed')).toBe(true);
    expect(wantsType({ types: ['dev.cloudly.release.rollout.failed'] }, 'rollout.issued')).toBe(false);
  });

  it('maps a logged event to a valid CloudEvent with the facts in data', () => {
    const logged: LoggedEvent = {
      id: 's1:7',
      serviceId: 's1',
      seq: 7,
      key: 'issued:r1',
      type: 'rollout.issued',
      time: Date.UTC(2026, 11, 5),
      data: {
        serviceId: 's1',
        serviceName: 'payments-api',
        rolloutId: 'r1',
        generation: 3,
        releaseId: 'rel',
        digest: 'sha256:ab',
        by: { subject: 'ci' },
        reason: 'v3',
      },
    };
    const event = cloudEventOf(logged, 'urn:test');
    expect(event).toMatchObject({
      specversion: '1.0',
      id: 's1:7',
      source: 'urn:test',
      type: 'dev.cloudly.release.rollout.issued',
      subject: 's1',
      time: '2026-12-05T00:00:00.000Z',
      data: {
        service: { id: 's1', name: 'payments-api' },
        releaseId: 'rel',
        digest: 'sha256:ab',
        generation: 3,
        status: null,
        reason: 'v3',
        who: { subject: 'ci' },
        cdevent: 'dev.cdevents.service.deployed.0.2.0',
      },
    });
    expect(new CloudEvent({ ...event }, true).validate()).toBe(true);
  });
});
