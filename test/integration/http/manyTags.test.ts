import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, callTypedRequest, identity, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, pushEvent, registerCluster } from '../../support/fixtures.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * A release's tags are a set that every push of the digest under a new tag grows (`$addToSet`),
 * without a bound: a digest re-tagged nightly (`nightly-2026-12-01`, …) or per build of unchanged
 * sources collects a tag per push. The release schema caps `observedTags` at 1,024
 * (src/contracts/common.ts) and the TypedRequest route checks every answer against its schema, so
 * the 1,025th tag makes every answer that carries the release an `internal-error`: the Cloudly UI's
 * `getServiceImageReleases` fails for the whole service. docs/operations.md: "Bad input of any kind gets a
 * clear 4xx with the offending field, never a 500"; the pushes were all accepted (201).
 */
describe('a release pushed under more tags than the release schema allows', () => {
  let t: TestApp;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    t = await buildTestApp();
    [admin, api] = await Promise.all([t.token('admin'), t.token('api')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  it('after 1,025 pushes of one digest under distinct tags, every push was accepted and the release can still be read over TypedRequest', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const seed = `many-tags-${svc.id}`;
    const base = Date.now() - 10_000_000;
    const statuses = new Map<number, number>();
    const TAGS = 1025;
    for (let start = 0; start < TAGS; start += 25) {
      const batch = Array.from({ length: Math.min(25, TAGS - start) }, (_, k) => start + k);
      const answers = await Promise.all(batch.map(async (i) => await t.app.inject({
        method: 'POST',
        url: '/v1/registry/push-events',
        headers: bearer(api),
        payload: pushEvent(svc, { seed, tag: `nightly-${String(i).padStart(4, '0')}`, observedAt: base + i * 1000 }),
      })));
      for (const res of answers) statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses), 'every push of the digest was accepted').toEqual({ 201: TAGS });

    const rest = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/image-releases`, headers: bearer(admin) });
    expect(rest.statusCode, rest.body.slice(0, 300)).toBe(200);

    const upstream = await callTypedRequest(t.app, 'getServiceImageReleases', { identity: identity(admin), serviceId: svc.id });
    const answer = upstream.json();
    expect(answer.error, `getServiceImageReleases: ${JSON.stringify(answer.error)}`).toBeUndefined();
    expect(answer.response.releases).toHaveLength(1);

    const page = await callTypedRequest(t.app, 'getServiceImageReleasesPage', { identity: identity(admin), serviceId: svc.id });
    expect(page.json().error, `getServiceImageReleasesPage: ${JSON.stringify(page.json().error)}`).toBeUndefined();
  });

  // The tags kept are those pushed most recently: a tag pushed again moves to the end.
  it('a tag pushed again after the limit was passed is among the release\'s 1,024 tags: it was pushed more recently than 1,023 others', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const seed = `repush-${svc.id}`;
    const base = Date.now() - 10_000_000;
    const push = async (tag: string, i: number) => t.app.inject({
      method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: pushEvent(svc, { seed, tag, observedAt: base + i * 1000 }),
    });
    expect((await push('stable', 0)).statusCode).toBe(201);
    const NIGHTLIES = 1023;
    // The oldest nightly alone first (the rest arrive 32 at a time, in no particular order among themselves).
    expect((await push('nightly-0000', 1)).statusCode).toBe(201);
    for (let start = 1; start < NIGHTLIES; start += 32) {
      const answers = await Promise.all(Array.from({ length: Math.min(32, NIGHTLIES - start) }, async (_, k) =>
        (await push(`nightly-${String(start + k).padStart(4, '0')}`, 1 + start + k)).statusCode));
      expect(new Set(answers)).toEqual(new Set([201]));
    }
    const last = await push('stable', NIGHTLIES + 1);
    expect(last.statusCode, last.body.slice(0, 300)).toBe(201);
    expect(last.json().release.data.observedTags, 'the push answer\'s release').toContain('stable');
    // One more new tag: the release passes its limit, and the oldest push's tag should go (nightly-0000), not `stable`.
    expect((await push('nightly-1023', NIGHTLIES + 2)).statusCode).toBe(201);

    const page = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/image-releases`, headers: bearer(admin) });
    const tags: string[] = page.json().releases[0].data.observedTags;
    expect(tags).toHaveLength(1024);
    expect(tags, 'the tag of the second newest push').toContain('stable');
    expect(tags, 'the tag of the oldest push').not.toContain('nightly-0000');
  }, 240_000);
});
