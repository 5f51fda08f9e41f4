import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, pushEvent, registerCluster } from '../../support/fixtures.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * Acceptance run 5, re-attacking "tags bounded" (2f03f49). docs/decisions.md: "A release keeps the
 * newest 1,024 distinct tags it was pushed under: past it the oldest go". The store adds a tag with
 * `$addToSet` and trims with `$slice: -1024` (src/store/releaseStore.ts `withTagsBounded`): a tag
 * already in the set keeps its first position, so a digest pushed as `stable`, then under 1,024
 * nightly tags, then as `stable` AGAIN, then under one more nightly tag loses `stable` — the tag of
 * its second newest push — while 1,023 older nightly tags stay (the first push's position counts,
 * not the newest push's).
 */
describe('a tag pushed again after the release passed its tag limit', () => {
  let t: TestApp;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    t = await buildTestApp();
    [admin, api] = await Promise.all([t.token('admin'), t.token('api')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  it('is among the release\'s 1,024 tags: it was pushed more recently than 1,023 others', async () => {
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
