import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushEventFingerprint } from '../../../src/domain/releases.js';
import type { IImageRelease, IImmutableRegistryPushEvent } from '../../../src/contracts/index.js';
import { PushEventStore } from '../../../src/store/pushEventStore.js';
import { ReleaseStore } from '../../../src/store/releaseStore.js';
import { buildTestApp, serviceData, typedRequest, type TestApp } from '../../support/app.js';
import { bearer, digestOf, registryHost } from '../../support/fixtures.js';

const hex = (bytes = 6) => randomBytes(bytes).toString('hex');
const identity = (jwt: string) => ({ name: 'tester', userId: 'u-test', expiresAt: 0, jwt });

interface Svc { id: string, repository: string }

let t: TestApp;
let admin: string;
let api: string;
let user: string;

beforeAll(async () => {
  t = await buildTestApp();
  [admin, api, user] = await Promise.all([t.token('admin'), t.token('api'), t.token('user')]);
});
afterAll(async () => { await t.close(); });

async function createService (opts: { repository?: string, registryTarget?: Record<string, unknown> | null } = {}): Promise<Svc> {
  const repository = opts.repository ?? `team/app-${hex(4)}`;
  const target = opts.registryTarget === undefined ? { protocol: 'oci', registryHost, repository } : opts.registryTarget;
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/services',
    headers: bearer(admin),
    payload: serviceData(target === null ? {} : { registryTarget: target }),
  });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().service.id, repository };
}

/** A valid event for the service's registry target; `seed` picks the digest (one digest = one release). */
function makeEvent (svc: Svc, overrides: Partial<Record<keyof IImmutableRegistryPushEvent, unknown>> & { seed?: string } = {}): IImmutableRegistryPushEvent {
  const { seed = hex(), ...rest } = overrides;
  const digest = digestOf(seed);
  return {
    deploymentPolicy: 'immutable-digest',
    eventId: `evt_${hex(8)}`,
    releaseId: `rel_${createHash('sha256').update(`${svc.id}/${digest}`).digest('hex').slice(0, 20)}`,
    protocol: 'oci',
    registryHost,
    repository: svc.repository,
    tag: 'latest',
    registryRootDigest: digest,
    digestPinnedImageReference: `${registryHost}/${svc.repository}@${digest}`,
    imageUrl: `${registryHost}/${svc.repository}:latest`,
    observedAt: 1_700_000_000_000,
    serviceId: svc.id,
    imageId: 'img-1',
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
    ...rest,
  } as IImmutableRegistryPushEvent;
}

const push = (event: unknown, token = api) =>
  t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(token), payload: event as object });

const pushOk = async (event: IImmutableRegistryPushEvent, token = api): Promise<{ release: IImageRelease, duplicate: boolean }> => {
  const res = await push(event, token);
  expect([200, 201], res.body).toContain(res.statusCode);
  return res.json();
};

const tr = (method: string, request: Record<string, unknown>, token = api) =>
  t.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest(method, { identity: identity(token), ...request }) });

const listPage = (serviceId: string, query = '', token = user) =>
  t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/image-releases${query}`, headers: bearer(token) });

const history = (serviceId: string, tag: string, query = '', token = user) =>
  t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/tags/${encodeURIComponent(tag)}/history${query}`, headers: bearer(token) });

const getRelease = (releaseId: string) => new ReleaseStore(t.database).findById(releaseId);

const counts = async () => ({
  releases: await t.db.collection('releases').countDocuments(),
  pushEvents: await t.db.collection('pushEvents').countDocuments(),
});

const fieldsOf = (res: LightMyRequestResponse): string[] => (res.json().problems ?? []).map((p: { field: string }) => p.field);

/** The stored release document without what differs between two services (for order-independence checks). */
const storedData = async (releaseId: string) => {
  const doc = await t.db.collection('releases').findOne({ _id: releaseId as never });
  const data = { ...(doc?.['data'] as Record<string, unknown>) };
  delete data['serviceId'];
  data['observedTags'] = [...(data['observedTags'] as string[])].sort();
  return data;
};

const withoutService = (release: IImageRelease) => {
  const { serviceId: _serviceId, ...data } = release.data;
  return data;
};

describe('push events: ingestion', () => {
  it('records a new observation (201) and answers the same event again with duplicate: true (200), counting it once', async () => {
    const svc = await createService();
    const event = makeEvent(svc, { tag: 'v1', actorUserId: 'alice' });
    const first = await push(event);
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({
      duplicate: false,
      autoPromotion: { outcome: 'skipped', reason: 'not-enabled' },
      release: {
        id: event.releaseId,
        data: {
          serviceId: svc.id,
          imageId: 'img-1',
          registryHost,
          repository: svc.repository,
          registryRootDigest: event.registryRootDigest,
          digestPinnedImageReference: event.digestPinnedImageReference,
          manifestMediaType: event.manifestMediaType,
          observedTags: ['v1'],
          firstObservedAt: event.observedAt,
          lastObservedAt: event.observedAt,
          observationCount: 1,
        },
      },
    });
    const before = await counts();
    const again = await push(event);
    expect(again.statusCode).toBe(200);
    // What automation decided for the event comes back with it (decided once per event).
    const replayedSkip = { outcome: 'skipped', reason: 'not-enabled', replayed: true };
    expect(again.json()).toEqual({ duplicate: true, autoPromotion: replayedSkip, release: first.json().release });
    expect(await counts()).toEqual(before);
    // Key order is not content: the same event with its keys reversed is the same event.
    const reordered = Object.fromEntries(Object.entries(event).reverse());
    expect((await push(reordered)).json()).toEqual({ duplicate: true, autoPromotion: replayedSkip, release: first.json().release });
  });

  it('over TypedRequest: reportImmutableRegistryPushEvent answers { release, duplicate }', async () => {
    const svc = await createService();
    const event = makeEvent(svc);
    const first = await tr('reportImmutableRegistryPushEvent', { event });
    expect(first.statusCode).toBe(200);
    expect(first.json().response).toMatchObject({ duplicate: false, release: { id: event.releaseId, data: { observationCount: 1 } } });
    expect(first.json().request).toEqual({ event });
    const again = await tr('reportImmutableRegistryPushEvent', { event });
    expect(again.json().response).toMatchObject({ duplicate: true, release: { data: { observationCount: 1 } } });
  });

  it('merges events of one release: tags are a set, first/last observed are min/max, observationCount counts eventIds; acceptedAt stays unset', async () => {
    const svc = await createService();
    const seed = hex();
    await pushOk(makeEvent(svc, { seed, tag: 'v2', observedAt: 2000 }));
    await pushOk(makeEvent(svc, { seed, tag: 'latest', observedAt: 3000 }));
    await pushOk(makeEvent(svc, { seed, tag: 'v2', observedAt: 1000 }));
    const { release } = await pushOk(makeEvent(svc, { seed, tag: 'latest', observedAt: 2500 }));
    expect(release.data).toMatchObject({ observedTags: ['latest', 'v2'], firstObservedAt: 1000, lastObservedAt: 3000, observationCount: 4 });
    expect(release.data).not.toHaveProperty('acceptedAt');
    expect(release.data).not.toHaveProperty('promotionCount');
  });

  it('gives the identical release document whatever order the events arrive in (reverse)', async () => {
    const [a, b] = [await createService({ repository: 'team/same' }), await createService({ repository: 'team/same' })];
    const seed = hex();
    const template = [
      { tag: 'v1', observedAt: 5000 },
      { tag: 'latest', observedAt: 1000 },
      { tag: 'v2', observedAt: 9000 },
      { tag: 'latest', observedAt: 7000 },
    ];
    for (const e of template) await pushOk(makeEvent(a, { seed, ...e }));
    for (const e of [...template].reverse()) await pushOk(makeEvent(b, { seed, ...e }));
    const ra = await getRelease(makeEvent(a, { seed }).releaseId);
    const rb = await getRelease(makeEvent(b, { seed }).releaseId);
    expect(ra && withoutService(ra)).toEqual(rb && withoutService(rb));
    expect(ra?.data).toMatchObject({ observedTags: ['latest', 'v1', 'v2'], firstObservedAt: 1000, lastObservedAt: 9000, observationCount: 4 });
    expect(await storedData(makeEvent(a, { seed }).releaseId)).toEqual(await storedData(makeEvent(b, { seed }).releaseId));
  });

  it('gives the identical release document for every permutation of 3–6 events (property)', async () => {
    const scenario = fc.integer({ min: 3, max: 6 }).chain((n) => fc.record({
      times: fc.uniqueArray(fc.integer({ min: 1, max: 10_000_000 }), { minLength: n, maxLength: n }),
      tags: fc.uniqueArray(fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,10}$/), { minLength: n, maxLength: n }),
      order: fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
    }));
    await fc.assert(fc.asyncProperty(scenario, async ({ times, tags, order }) => {
      const repository = `team/perm-${hex(3)}`;
      const [a, b] = [await createService({ repository }), await createService({ repository })];
      const seed = hex();
      const template = times.map((observedAt, i) => ({ observedAt, tag: tags[i] as string }));
      for (const e of template) await pushOk(makeEvent(a, { seed, ...e }));
      for (const i of order) await pushOk(makeEvent(b, { seed, ...(template[i] as { observedAt: number, tag: string }) }));
      const ra = await getRelease(makeEvent(a, { seed }).releaseId);
      const rb = await getRelease(makeEvent(b, { seed }).releaseId);
      expect(ra && withoutService(ra)).toEqual(rb && withoutService(rb));
      expect(rb?.data).toMatchObject({
        observedTags: [...tags].sort(),
        firstObservedAt: Math.min(...times),
        lastObservedAt: Math.max(...times),
        observationCount: times.length,
      });
      expect(await storedData(makeEvent(a, { seed }).releaseId)).toEqual(await storedData(makeEvent(b, { seed }).releaseId));
    }), { numRuns: 12 });
  });

  it('20 distinct events for one release delivered concurrently: observationCount 20 and the full tag set', async () => {
    const svc = await createService();
    const seed = hex();
    const events = Array.from({ length: 20 }, (_, i) => makeEvent(svc, { seed, tag: `t${String(i).padStart(2, '0')}`, observedAt: 10_000 + i }));
    const results = await Promise.all(events.map((e) => push(e)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(201));
    const release = await getRelease(events[0]!.releaseId);
    expect(release?.data).toMatchObject({
      observationCount: 20,
      observedTags: events.map((e) => e.tag).sort(),
      firstObservedAt: 10_000,
      lastObservedAt: 10_019,
    });
  });

  it('the same event delivered 10 times concurrently is recorded once: one 201, nine duplicates', async () => {
    const svc = await createService();
    const event = makeEvent(svc);
    const results = await Promise.all(Array.from({ length: 10 }, () => push(event)));
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 200 && r.json().duplicate === true)).toHaveLength(9);
    expect((await getRelease(event.releaseId))?.data.observationCount).toBe(1);
  });

  it('a retry heals a crash between storing the event and upserting the release (new and existing release)', async () => {
    const svc = await createService();
    const events = new PushEventStore(t.database);
    // Crash after step 1 for a release that does not exist yet.
    const lone = makeEvent(svc, { tag: 'lone' });
    await events.insert({ event: lone, fingerprint: pushEventFingerprint(lone), recordedAt: 1, reportedBy: 'test-api' });
    expect(await getRelease(lone.releaseId)).toBeNull();
    const healed = await push(lone);
    expect(healed.statusCode).toBe(200);
    expect(healed.json()).toMatchObject({ duplicate: true, release: { id: lone.releaseId, data: { observationCount: 1, observedTags: ['lone'] } } });
    // Crash after step 1 for a second event of an existing release.
    const seed = hex();
    await pushOk(makeEvent(svc, { seed, tag: 'a', observedAt: 100 }));
    const second = makeEvent(svc, { seed, tag: 'b', observedAt: 50 });
    await events.insert({ event: second, fingerprint: pushEventFingerprint(second), recordedAt: 1, reportedBy: 'test-api' });
    expect((await getRelease(second.releaseId))?.data.observationCount).toBe(1);
    expect((await push(second)).json().release.data).toMatchObject({ observationCount: 2, observedTags: ['a', 'b'], firstObservedAt: 50, lastObservedAt: 100 });
  });

  it('carries promotion fields through observations unchanged', async () => {
    const svc = await createService();
    const seed = hex();
    const { release } = await pushOk(makeEvent(svc, { seed, observedAt: 100 }));
    await new ReleaseStore(t.database).recordPromotion(release.id, 150, 1);
    const { release: after } = await pushOk(makeEvent(svc, { seed, tag: 'v9', observedAt: 200 }));
    expect(after.data).toMatchObject({ acceptedAt: 150, lastPromotedAt: 150, promotionCount: 1, observationCount: 2, lastObservedAt: 200 });
    expect((await getRelease(release.id))?.data).toMatchObject({ acceptedAt: 150, promotionCount: 1 });
  });

  it('accepts a target host written in another case (hosts compare case-insensitively)', async () => {
    const repository = `team/case-${hex(3)}`;
    const svc = await createService({ repository, registryTarget: { protocol: 'oci', registryHost: 'Registry.Example.COM', repository } });
    expect((await push(makeEvent(svc))).statusCode).toBe(201);
  });
});

describe('push events: refused input writes nothing', () => {
  let svc: Svc;
  beforeAll(async () => { svc = await createService(); });

  const refused = async (res: LightMyRequestResponse, status: number, code: string, field?: string) => {
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().code).toBe(code);
    if (field) expect(fieldsOf(res)).toContain(field);
  };

  it('schema: digest, media type, policy, unknown or missing properties', async () => {
    const before = await counts();
    const e = makeEvent(svc);
    const upper = e.registryRootDigest.replace('sha256:', 'sha256:').toUpperCase();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...e, registryRootDigest: upper }, '/body/registryRootDigest'],
      [{ ...e, registryRootDigest: `sha256:${'A'.repeat(64)}` }, '/body/registryRootDigest'],
      [{ ...e, registryRootDigest: 'sha256:abc123' }, '/body/registryRootDigest'],
      [{ ...e, registryRootDigest: `sha512:${'a'.repeat(128)}` }, '/body/registryRootDigest'],
      [{ ...e, registryRootDigest: ` ${e.registryRootDigest}` }, '/body/registryRootDigest'],
      [{ ...e, manifestMediaType: 'application/vnd.oci.image.config.v1+json' }, '/body/manifestMediaType'],
      [{ ...e, deploymentPolicy: 'legacy-tag' }, '/body/deploymentPolicy'],
      [{ ...e, protocol: 'http' }, '/body/protocol'],
      [{ ...e, observedAt: -1 }, '/body/observedAt'],
      [{ ...e, extra: true }, '/body/extra'],
      [{ ...e, $where: '1' }, '/body/$where'],
    ];
    for (const [body, field] of cases) await refused(await push(body), 400, 'validation-failed', field);
    const { releaseId: _releaseId, ...missing } = e;
    await refused(await push(missing), 400, 'validation-failed');
    expect(await counts()).toEqual(before);
  });

  it('non-canonical registry host or repository, a non-OCI tag, and a pinned reference that disagrees', async () => {
    const before = await counts();
    const e = makeEvent(svc);
    const d = e.registryRootDigest;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...e, registryHost: 'Registry.example.com', digestPinnedImageReference: `Registry.example.com/${svc.repository}@${d}` }, '/body/registryHost'],
      [{ ...e, registryHost: 'https://registry.example.com' }, '/body/registryHost'],
      [{ ...e, repository: 'Team/App', digestPinnedImageReference: `${registryHost}/Team/App@${d}` }, '/body/repository'],
      [{ ...e, repository: 'team//app' }, '/body/repository'],
      [{ ...e, tag: '.hidden' }, '/body/tag'],
      [{ ...e, digestPinnedImageReference: `other.example.com/${svc.repository}@${d}` }, '/body/digestPinnedImageReference'],
      [{ ...e, digestPinnedImageReference: `${registryHost}/team/other@${d}` }, '/body/digestPinnedImageReference'],
      [{ ...e, digestPinnedImageReference: `${registryHost}/${svc.repository}@${digestOf('other')}` }, '/body/digestPinnedImageReference'],
      [{ ...e, digestPinnedImageReference: `${registryHost}/${svc.repository}:latest@${d}` }, '/body/digestPinnedImageReference'],
      [{ ...e, digestPinnedImageReference: `${registryHost}/${svc.repository}@${d.toUpperCase()}` }, '/body/digestPinnedImageReference'],
    ];
    for (const [body, field] of cases) await refused(await push(body), 400, 'validation-failed', field);
    expect(await counts()).toEqual(before);
  });

  it('TypedRequest names the fields under /request/event', async () => {
    const before = await counts();
    const e = makeEvent(svc);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...e, registryHost: 'REGISTRY' }, '/request/event/registryHost'],
      [{ ...e, digestPinnedImageReference: 'x' }, '/request/event/digestPinnedImageReference'],
      [{ ...e, registryRootDigest: 'sha256:ABC' }, '/request/event/registryRootDigest'],
    ];
    for (const [event, field] of cases) {
      const res = await tr('reportImmutableRegistryPushEvent', { event });
      expect(res.statusCode).toBe(200);
      expect(res.json().error.data.code).toBe('validation-failed');
      expect(res.json().error.data.problems.map((p: { field: string }) => p.field)).toContain(field);
    }
    expect(await counts()).toEqual(before);
  });

  it('unknown service → service-not-found; wrong or missing registry target → registry-target-mismatch', async () => {
    const before = await counts();
    await refused(await push(makeEvent({ id: 'svc_missing', repository: svc.repository })), 404, 'service-not-found');
    await refused(await push(makeEvent({ id: svc.id, repository: 'team/not-the-target' })), 422, 'registry-target-mismatch');
    const otherHost = makeEvent(svc);
    const wrongHost = { ...otherHost, registryHost: 'ghcr.io', digestPinnedImageReference: `ghcr.io/${svc.repository}@${otherHost.registryRootDigest}` };
    await refused(await push(wrongHost), 422, 'registry-target-mismatch');
    const untargeted = await createService({ registryTarget: null });
    await refused(await push(makeEvent(untargeted)), 422, 'registry-target-mismatch');
    const viaTr = await tr('reportImmutableRegistryPushEvent', { event: makeEvent({ id: svc.id, repository: 'team/elsewhere' }) });
    expect(viaTr.json().error.data).toMatchObject({ code: 'registry-target-mismatch', serviceId: svc.id });
    expect(await counts()).toEqual(before);
  });

  it('same eventId with different content → push-event-conflict (409)', async () => {
    const event = makeEvent(svc, { tag: 'one' });
    await pushOk(event);
    const before = await counts();
    const stored = await getRelease(event.releaseId);
    await refused(await push({ ...event, tag: 'two' }), 409, 'push-event-conflict');
    await refused(await push({ ...event, observedAt: event.observedAt + 1 }), 409, 'push-event-conflict');
    await refused(await push({ ...event, actorUserId: 'mallory' }), 409, 'push-event-conflict');
    const viaTr = await tr('reportImmutableRegistryPushEvent', { event: { ...event, tag: 'three' } });
    expect(viaTr.json().error.data).toMatchObject({ code: 'push-event-conflict', eventId: event.eventId });
    expect(await counts()).toEqual(before);
    expect(await getRelease(event.releaseId)).toEqual(stored);
  });

  it('a releaseId naming another release, or a release under another id → release-identity-conflict (409)', async () => {
    const seed = hex();
    const original = makeEvent(svc, { seed });
    await pushOk(original);
    const stored = await getRelease(original.releaseId);
    const other = await createService();
    const before = await counts();

    // The releaseId already names another digest.
    const otherDigest = makeEvent(svc, { releaseId: original.releaseId });
    const r1 = await push(otherDigest);
    await refused(r1, 409, 'release-identity-conflict');
    expect(r1.json()).toMatchObject({ releaseId: original.releaseId, existingReleaseId: original.releaseId });
    // The same (service, host, repository, digest) under a new releaseId.
    const r2 = await push(makeEvent(svc, { seed, releaseId: 'rel_twin' }));
    await refused(r2, 409, 'release-identity-conflict');
    expect(r2.json()).toMatchObject({ releaseId: 'rel_twin', existingReleaseId: original.releaseId });
    // Same id and tuple but a different media type or image: not the same release.
    await refused(await push(makeEvent(svc, { seed, manifestMediaType: 'application/vnd.oci.image.manifest.v1+json' })), 409, 'release-identity-conflict');
    await refused(await push(makeEvent(svc, { seed, imageId: 'img-2' })), 409, 'release-identity-conflict');
    // Another service's event claiming this releaseId.
    await refused(await push(makeEvent(other, { releaseId: original.releaseId })), 409, 'release-identity-conflict');

    expect(await counts()).toEqual(before);
    expect(await getRelease(original.releaseId)).toEqual(stored);
  });

  it('racing conflicting events: exactly one wins, the losers get release-identity-conflict and leave no event behind', async () => {
    // Same releaseId, ten different digests, all new: the identity pre-check cannot see the others.
    const releaseId = `rel_race_${hex(4)}`;
    const racers = Array.from({ length: 10 }, () => makeEvent(svc, { releaseId }));
    const results = await Promise.all(racers.map((e) => push(e)));
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 409 && r.json().code === 'release-identity-conflict')).toHaveLength(9);
    expect(await t.db.collection('pushEvents').countDocuments({ releaseId })).toBe(1);
    expect((await getRelease(releaseId))?.data.observationCount).toBe(1);
    // One digest, ten different releaseIds.
    const seed = hex();
    const twins = Array.from({ length: 10 }, (_, i) => makeEvent(svc, { seed, releaseId: `rel_twin_${i}_${hex(3)}` }));
    const twinResults = await Promise.all(twins.map((e) => push(e)));
    expect(twinResults.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(twinResults.filter((r) => r.statusCode === 409 && r.json().code === 'release-identity-conflict')).toHaveLength(9);
    expect(await t.db.collection('pushEvents').countDocuments({ registryRootDigest: twins[0]!.registryRootDigest })).toBe(1);
    expect(await t.db.collection('releases').countDocuments({ 'data.registryRootDigest': twins[0]!.registryRootDigest })).toBe(1);
  });

  it('roles: user and cluster may not push (403), no token is 401; nothing written', async () => {
    const before = await counts();
    const cluster = await t.token('cluster');
    await refused(await push(makeEvent(svc), user), 403, 'forbidden');
    await refused(await push(makeEvent(svc), cluster), 403, 'forbidden');
    const anonymous = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', payload: makeEvent(svc) });
    await refused(anonymous, 401, 'unauthenticated');
    const viaTr = await tr('reportImmutableRegistryPushEvent', { event: makeEvent(svc) }, user);
    expect(viaTr.json().error.data.code).toBe('forbidden');
    expect(await counts()).toEqual(before);
    expect((await push(makeEvent(svc), admin)).statusCode).toBe(201);
  });
});

describe('listing releases', () => {
  /** Expected order: lastObservedAt desc, then id desc. */
  const newestFirst = (a: { id: string, at: number }, b: { id: string, at: number }) =>
    b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

  it('orders by last observation, newest first, ties by id descending; a newer observation moves a release up', async () => {
    const svc = await createService();
    const specs = [
      { id: 'rel_order_a', at: 100 }, { id: 'rel_order_b', at: 300 }, { id: 'rel_order_c', at: 200 },
      { id: 'rel_order_d', at: 300 }, { id: 'rel_order_e', at: 100 },
    ];
    for (const s of specs) await pushOk(makeEvent(svc, { releaseId: s.id, observedAt: s.at }));
    const ids = async () => (await listPage(svc.id)).json().releases.map((r: IImageRelease) => r.id);
    expect(await ids()).toEqual([...specs].sort(newestFirst).map((s) => s.id));
    expect(await ids()).toEqual(['rel_order_d', 'rel_order_b', 'rel_order_c', 'rel_order_e', 'rel_order_a']);

    // An older observation of rel_order_a does not move it; a newer one does.
    const seedOfA = (await getRelease('rel_order_a'))!.data.registryRootDigest;
    const again = (observedAt: number) => ({
      ...makeEvent(svc, { releaseId: 'rel_order_a', observedAt }),
      registryRootDigest: seedOfA,
      digestPinnedImageReference: `${registryHost}/${svc.repository}@${seedOfA}`,
    });
    await pushOk(again(50));
    expect((await ids())[4]).toBe('rel_order_a');
    await pushOk(again(400));
    expect((await ids())[0]).toBe('rel_order_a');

    // TypedRequest: the upstream getServiceImageReleases, same order, roles admin/user/api.
    const viaTr = await tr('getServiceImageReleases', { serviceId: svc.id }, user);
    expect(viaTr.json().response.releases.map((r: IImageRelease) => r.id)).toEqual(await ids());
    expect(viaTr.json().response.releases).toEqual((await listPage(svc.id)).json().releases);
    const cluster = await t.token('cluster');
    expect((await tr('getServiceImageReleases', { serviceId: svc.id }, cluster)).json().error.data.code).toBe('forbidden');
    expect((await listPage(svc.id, '', cluster)).statusCode).toBe(403);
    expect((await listPage(svc.id, '', api)).statusCode).toBe(200);
  });

  it('walks 120 releases with limit 7: each exactly once, in order, 18 pages', async () => {
    const svc = await createService();
    const specs = Array.from({ length: 120 }, (_, i) => ({ id: `rel_${hex(5)}`, at: 1_000 + (i % 30) }));
    for (let i = 0; i < specs.length; i += 20) {
      await Promise.all(specs.slice(i, i + 20).map((s) => pushOk(makeEvent(svc, { releaseId: s.id, observedAt: s.at }))));
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await listPage(svc.id, `?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.releases.length).toBeLessThanOrEqual(7);
      seen.push(...body.releases.map((r: IImageRelease) => r.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(18);
    expect(seen).toEqual([...specs].sort(newestFirst).map((s) => s.id));

    // Default page size 50; the upstream TypedRequest listing returns all of them (cap 1000).
    const first = (await listPage(svc.id)).json();
    expect(first.releases).toHaveLength(50);
    expect(first.nextCursor).toEqual(expect.any(String));
    expect((await tr('getServiceImageReleases', { serviceId: svc.id })).json().response.releases).toHaveLength(120);
    // The paged TypedRequest method walks the same way.
    const trPage = (await tr('getServiceImageReleasesPage', { serviceId: svc.id, limit: 7, cursor: first.nextCursor })).json().response;
    expect(trPage.releases.map((r: IImageRelease) => r.id)).toEqual(seen.slice(50, 57));
  });

  it('is stable under concurrent inserts: no release twice, none that existed at the start skipped', async () => {
    const svc = await createService();
    const originals = Array.from({ length: 60 }, (_, i) => ({ id: `rel_${hex(5)}`, at: 10_000 + i * 10 }));
    await Promise.all(originals.map((s) => pushOk(makeEvent(svc, { releaseId: s.id, observedAt: s.at }))));
    const seen: Array<{ id: string, at: number }> = [];
    let cursor: string | undefined;
    let round = 0;
    do {
      round++;
      // New releases land everywhere: newer than all, inside the range (also on existing timestamps), older than all.
      const inserts = [20_000 + round, 10_000 + ((round * 37) % 60) * 10, 10_000 + ((round * 53) % 600), 5_000 - round]
        .map((at) => pushOk(makeEvent(svc, { observedAt: at })));
      const [res] = await Promise.all([listPage(svc.id, `?limit=7${cursor ? `&cursor=${cursor}` : ''}`), ...inserts]);
      const body = res.json();
      seen.push(...body.releases.map((r: IImageRelease) => ({ id: r.id, at: r.data.lastObservedAt })));
      cursor = body.nextCursor;
    } while (cursor && round < 200);
    const ids = seen.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const o of originals) expect(ids).toContain(o.id);
    // The walk itself is strictly in sort order.
    for (let i = 1; i < seen.length; i++) expect(newestFirst(seen[i - 1]!, seen[i]!)).toBeLessThan(0);
  });

  it('refuses malformed cursors and limits, naming the field; unknown service is service-not-found', async () => {
    const svc = await createService();
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of ['abc', encodeURIComponent('%%%'), b64({ time: 1, id: 'x' }), b64([1, 2]), b64(['x', 'y']), 'x'.repeat(600)]) {
      const res = await listPage(svc.id, `?cursor=${cursor}`);
      expect(res.statusCode, cursor).toBe(400);
      expect(res.json().code).toBe('validation-failed');
      expect(fieldsOf(res)).toContain('/querystring/cursor');
    }
    for (const limit of ['0', '501', 'abc', '-1']) {
      const res = await listPage(svc.id, `?limit=${limit}`);
      expect(res.statusCode, limit).toBe(400);
      expect(fieldsOf(res)).toContain('/querystring/limit');
    }
    expect(fieldsOf(await listPage(svc.id, '?sort=asc'))).toContain('/querystring/sort');
    const viaTr = await tr('getServiceImageReleasesPage', { serviceId: svc.id, cursor: 'abc' });
    expect(viaTr.json().error.data).toMatchObject({ code: 'validation-failed', problems: [{ field: '/request/cursor' }] });

    const missing = await listPage('svc_missing');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('service-not-found');
    expect((await tr('getServiceImageReleases', { serviceId: 'svc_missing' })).json().error.data.code).toBe('service-not-found');
    expect((await listPage(svc.id)).json()).toEqual({ releases: [] });
  });
});

describe('API documentation', () => {
  it('lists the release routes in OpenAPI and the release methods on /typedrequest', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(Object.keys(doc.paths['/v1/registry/push-events'])).toContain('post');
    expect(Object.keys(doc.paths['/v1/services/{serviceId}/image-releases'])).toContain('get');
    expect(Object.keys(doc.paths['/v1/services/{serviceId}/tags/{tag}/history'])).toContain('get');
    for (const method of ['reportImmutableRegistryPushEvent', 'getServiceImageReleases', 'getServiceImageReleasesPage', 'getServiceImageTagHistory']) {
      expect(doc.paths['/typedrequest'].post.description).toContain(method);
    }
  });
});

describe('tag ledger', () => {
  let svc: Svc;
  const seedA = hex();
  const seedB = hex();
  const ev: Record<string, IImmutableRegistryPushEvent> = {};

  beforeAll(async () => {
    svc = await createService();
    ev['a100'] = makeEvent(svc, { seed: seedA, tag: 'latest', observedAt: 100, actorUserId: 'alice', eventId: 'evt_a100' });
    ev['b200'] = makeEvent(svc, { seed: seedB, tag: 'latest', observedAt: 200, eventId: 'evt_b200' });
    ev['b250'] = makeEvent(svc, { seed: seedB, tag: 'stable', observedAt: 250, eventId: 'evt_b250' });
    ev['a300'] = makeEvent(svc, { seed: seedA, tag: 'latest', observedAt: 300, eventId: 'evt_a300' });
    // Delivered out of order, on purpose.
    for (const key of ['a300', 'b250', 'a100', 'b200']) await pushOk(ev[key]!);
  });

  const entry = (e: IImmutableRegistryPushEvent) => ({
    eventId: e.eventId,
    releaseId: e.releaseId,
    registryRootDigest: e.registryRootDigest,
    digestPinnedImageReference: e.digestPinnedImageReference,
    observedAt: e.observedAt,
    ...(e.actorUserId ? { actorUserId: e.actorUserId } : {}),
  });

  it('lists which digest a tag pointed to, newest first', async () => {
    const res = await history(svc.id, 'latest');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ tag: 'latest', entries: [entry(ev['a300']!), entry(ev['b200']!), entry(ev['a100']!)] });
    expect((await history(svc.id, 'stable')).json()).toEqual({ tag: 'stable', entries: [entry(ev['b250']!)] });
    expect((await history(svc.id, 'never-pushed')).json()).toEqual({ tag: 'never-pushed', entries: [] });
  });

  it('answers "which digest did the tag point to at time X" with `at`', async () => {
    const at = async (x: number) => (await history(svc.id, 'latest', `?at=${x}`)).json().entries;
    expect(await at(99)).toEqual([]);
    expect(await at(100)).toEqual([entry(ev['a100']!)]);
    expect(await at(199)).toEqual([entry(ev['a100']!)]);
    expect(await at(250)).toEqual([entry(ev['b200']!)]);
    expect(await at(300)).toEqual([entry(ev['a300']!)]);
    expect(await at(1e15)).toEqual([entry(ev['a300']!)]);
    const viaTr = await tr('getServiceImageTagHistory', { serviceId: svc.id, tag: 'latest', at: 250 }, user);
    expect(viaTr.json().response).toEqual({ tag: 'latest', entries: [entry(ev['b200']!)] });
  });

  it('pages with limit and cursor; equal timestamps are ordered by eventId descending', async () => {
    const tie = makeEvent(svc, { seed: seedB, tag: 'latest', observedAt: 300, eventId: 'evt_b300' });
    await pushOk(tie);
    const p1 = (await history(svc.id, 'latest', '?limit=2')).json();
    expect(p1.entries).toEqual([entry(tie), entry(ev['a300']!)]);
    const p2 = (await history(svc.id, 'latest', `?limit=2&cursor=${p1.nextCursor}`)).json();
    expect(p2).toEqual({ tag: 'latest', entries: [entry(ev['b200']!), entry(ev['a100']!)] });
    // At 300 the greater event id wins the tie (deterministic).
    expect((await history(svc.id, 'latest', '?at=300')).json().entries).toEqual([entry(tie)]);
  });

  it('refuses a bad tag, a cursor with `at`, a malformed cursor; unknown service is service-not-found', async () => {
    for (const tag of ['.hidden', '-x', 'x'.repeat(129)]) {
      const res = await history(svc.id, tag);
      expect(res.statusCode, tag).toBe(400);
      expect(fieldsOf(res)).toContain('/params/tag');
    }
    const cursor = (await history(svc.id, 'latest', '?limit=1')).json().nextCursor;
    const both = await history(svc.id, 'latest', `?at=5&cursor=${cursor}`);
    expect(both.statusCode).toBe(400);
    expect(fieldsOf(both)).toEqual(['/querystring/cursor']);
    expect(fieldsOf(await history(svc.id, 'latest', '?cursor=abc'))).toEqual(['/querystring/cursor']);
    expect(fieldsOf(await history(svc.id, 'latest', '?at=yesterday'))).toContain('/querystring/at');
    const viaTr = await tr('getServiceImageTagHistory', { serviceId: svc.id, tag: 'latest', at: 5, cursor });
    expect(viaTr.json().error.data).toMatchObject({ code: 'validation-failed', problems: [{ field: '/request/cursor' }] });
    const missing = await history('svc_missing', 'latest');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('service-not-found');
    expect((await history(svc.id, 'latest', '', await t.token('cluster'))).statusCode).toBe(403);
  });
});
