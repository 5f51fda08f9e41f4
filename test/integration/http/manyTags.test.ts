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
 * `getServiceImageReleases` fails for the whole service. DESIGN §6: "Bad input of any kind gets a
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
});
