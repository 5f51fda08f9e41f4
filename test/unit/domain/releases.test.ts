import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IImmutableRegistryPushEvent, IRegistryTarget } from '../../../src/contracts/index.js';
import {
  decodeCursor, encodeCursor, isSameRelease, pushEventFingerprint, PUSH_EVENT_FUTURE_TOLERANCE_MS, pushEventProblems, registryTargetMatches, releaseIdentityOf,
  tagHistoryQueryProblems,
} from '../../../src/domain/releases.js';
import { errors } from '../../../src/errors.js';
import { relocate } from '../../../src/http/replies.js';

/** The server's clock in these tests: every event is observed before it. */
const NOW = 2_000_000_000_000;

const digest = `sha256:${'ab'.repeat(32)}` as const;

const event = (overrides: Partial<IImmutableRegistryPushEvent> = {}): IImmutableRegistryPushEvent => ({
  deploymentPolicy: 'immutable-digest',
  eventId: 'evt_1',
  releaseId: 'rel_1',
  protocol: 'oci',
  registryHost: 'registry.example.com:5000',
  repository: 'team/web',
  tag: 'v1.2.3',
  registryRootDigest: digest,
  digestPinnedImageReference: `registry.example.com:5000/team/web@${digest}`,
  imageUrl: 'registry.example.com:5000/team/web:v1.2.3',
  observedAt: 1_700_000_000_000,
  serviceId: 'svc_1',
  imageId: 'img_1',
  manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  ...overrides,
});

const fieldsOf = (e: IImmutableRegistryPushEvent): string[] => pushEventProblems(e, NOW).map((p) => p.field);

describe('push event fingerprint', () => {
  it('is the same for the same content in any key order and differs when any field differs', () => {
    const e = event();
    const reversed = Object.fromEntries(Object.entries(e).reverse()) as IImmutableRegistryPushEvent;
    expect(pushEventFingerprint(reversed)).toBe(pushEventFingerprint(e));
    expect(pushEventFingerprint({ ...e, tag: 'v1.2.4' })).not.toBe(pushEventFingerprint(e));
    expect(pushEventFingerprint({ ...e, observedAt: e.observedAt + 1 })).not.toBe(pushEventFingerprint(e));
    expect(pushEventFingerprint({ ...e, actorUserId: 'u1' })).not.toBe(pushEventFingerprint(e));
  });
});

describe('assertPushEventConsistent', () => {
  it('accepts a canonical event', () => {
    expect(pushEventProblems(event(), NOW)).toEqual([]);
    expect(pushEventProblems(event({ registryHost: 'localhost', digestPinnedImageReference: `localhost/team/web@${digest}` }), NOW)).toEqual([]);
  });

  it('names the non-canonical host or repository, relative to the event; adapters say where the event sits', () => {
    expect(fieldsOf(event({ registryHost: 'Registry.example.com' }))).toEqual(['/registryHost']);
    expect(fieldsOf(event({ repository: 'Team/Web' }))).toEqual(['/repository']);
    expect(fieldsOf(event({ registryHost: 'https://x', repository: 'a//b' }))).toEqual(['/registryHost', '/repository']);
    const refused = relocate(errors.validationFailed(pushEventProblems(event({ repository: 'Team/Web' }), NOW)), '/request/event');
    expect(refused.details['problems']).toEqual([expect.objectContaining({ field: '/request/event/repository' })]);
    expect(refused.message).toContain('/request/event/repository');
  });

  it('requires the pinned reference to be host/repository@digest exactly', () => {
    for (const ref of [
      `registry.example.com/team/web@${digest}`,
      `registry.example.com:5000/team/api@${digest}`,
      `registry.example.com:5000/team/web@sha256:${'cd'.repeat(32)}`,
      `registry.example.com:5000/team/web:v1.2.3@${digest}`,
    ]) {
      expect(fieldsOf(event({ digestPinnedImageReference: ref }))).toEqual(['/digestPinnedImageReference']);
    }
  });

  it('requires an OCI tag', () => {
    for (const tag of ['.hidden', '-x', 'a/b', 'a b', 'x'.repeat(129)]) {
      expect(fieldsOf(event({ tag }))).toEqual(['/tag']);
    }
    for (const tag of ['latest', '_x', 'v1.2.3-rc.1', 'A_b-c.d', 'x'.repeat(128)]) {
      expect(pushEventProblems(event({ tag }), NOW)).toEqual([]);
    }
  });
});

describe('registryTargetMatches', () => {
  const target = (registryHost: string, repository: string): IRegistryTarget => ({ protocol: 'oci', registryHost, repository });
  const e = { registryHost: 'registry.example.com', repository: 'team/web' };

  it('compares the host case-insensitively and the repository exactly, without aliases', () => {
    expect(registryTargetMatches(target('registry.example.com', 'team/web'), e)).toBe(true);
    expect(registryTargetMatches(target('Registry.Example.COM', 'team/web'), e)).toBe(true);
    expect(registryTargetMatches(target('registry.example.com', 'Team/Web'), e)).toBe(false);
    expect(registryTargetMatches(target('registry.example.com:443', 'team/web'), e)).toBe(false);
    expect(registryTargetMatches(target('registry.example.com', 'team/web2'), e)).toBe(false);
    expect(registryTargetMatches(target('docker.io', 'library/web'), { registryHost: 'docker.io', repository: 'web' })).toBe(false);
  });
});

describe('keyset cursors', () => {
  it('round-trip every position', () => {
    fc.assert(fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.string({ minLength: 1, maxLength: 128, unit: 'grapheme' }), (time, id) => {
      fc.pre(id.length <= 128);
      const cursor = encodeCursor({ time, id });
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor)).toEqual({ time, id });
    }));
  });

  it('refuse anything this API did not produce', () => {
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const foreign = [
      '', 'abc', '!!!', b64({ time: 1, id: 'x' }), b64([1]), b64(['1', 'x']), b64([-1, 'x']), b64([1.5, 'x']), b64([1, '']),
      b64([1, 'x'.repeat(129)]), b64([1, 'x', 2]), `${b64([1, 'x'])}A`,
    ];
    for (const cursor of foreign) {
      expect(decodeCursor(cursor), cursor).toBeUndefined();
    }
  });

  it('tag history refuses a cursor together with `at`', () => {
    const cursor = encodeCursor({ time: 1, id: 'e' });
    expect(tagHistoryQueryProblems({ at: 5, cursor }).map((p) => p.field)).toEqual(['/cursor']);
    expect(tagHistoryQueryProblems({ at: 5 })).toEqual([]);
    expect(tagHistoryQueryProblems({ cursor })).toEqual([]);
    expect(tagHistoryQueryProblems({ cursor: 'not-ours' }).map((p) => p.field)).toEqual(['/cursor']);
  });
});

describe('release identity', () => {
  it('is the same release only when id, tuple, image and media type all agree', () => {
    const identity = releaseIdentityOf(event());
    const release = {
      id: 'rel_1',
      data: {
        serviceId: 'svc_1',
        imageId: 'img_1',
        registryHost: identity.registryHost,
        repository: identity.repository,
        registryRootDigest: digest,
        digestPinnedImageReference: identity.digestPinnedImageReference,
        manifestMediaType: identity.manifestMediaType,
        observedTags: ['v1.2.3'],
        firstObservedAt: 1,
        lastObservedAt: 1,
        observationCount: 1,
      },
    };
    expect(isSameRelease(release, identity)).toBe(true);
    expect(isSameRelease({ ...release, id: 'rel_2' }, identity)).toBe(false);
    expect(isSameRelease({ ...release, data: { ...release.data, serviceId: 'svc_2' } }, identity)).toBe(false);
    expect(isSameRelease({ ...release, data: { ...release.data, imageId: 'img_2' } }, identity)).toBe(false);
    expect(isSameRelease({ ...release, data: { ...release.data, manifestMediaType: 'application/vnd.oci.image.manifest.v1+json' } }, identity)).toBe(false);
  });
});

describe('a push event stamped in the future', () => {
  it('is refused past the tolerance ahead of the server\'s clock, naming observedAt; within it, and any time before, it is taken', () => {
    expect(fieldsOf(event({ observedAt: NOW * 1000 }))).toEqual(['/observedAt']);
    expect(fieldsOf(event({ observedAt: NOW + PUSH_EVENT_FUTURE_TOLERANCE_MS + 1 }))).toEqual(['/observedAt']);
    expect(fieldsOf(event({ observedAt: NOW + PUSH_EVENT_FUTURE_TOLERANCE_MS }))).toEqual([]);
    expect(fieldsOf(event({ observedAt: 0 }))).toEqual([]);
  });
});
