/**
 * Claiming an Idempotency-Key (src/store/idempotencyStore.ts) when the database says both "this key
 * is taken" (the insert's duplicate key) and "there is no such record" (the read after it): a read
 * from a member that has not caught up yet, or a record removed in between. Each such round began
 * the claim anew, without a bound — the request spun against the database and was never answered.
 * Now a claim tries afresh a few times and then answers `idempotency-request-in-progress` (retry).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { startMisbehavingProxy, type MisbehavingProxy } from '../../support/misbehavingProxy.js';
import { within } from '../../support/wait.js';

describe('an Idempotency-Key whose record the database both has and does not show', () => {
  let proxy: MisbehavingProxy;
  let t: TestApp;

  beforeAll(async () => {
    proxy = await startMisbehavingProxy(inject('mongoUri'));
    t = await buildTestApp({ MONGODB_URI: proxy.uri });
  });

  afterAll(async () => {
    proxy?.resume();
    await t?.close();
    await proxy?.close();
  });

  it('the repeated request is answered (409 idempotency-request-in-progress, retry) instead of claiming without end', async () => {
    const [admin, api] = await Promise.all([t.token('admin'), t.token('api')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
    const release = await pushRelease(t.app, api, svc);
    const first = await promote(t.app, api, svc.id, release.releaseId, { generation: 0, key: 'claim-key-1' });
    expect(first.statusCode, first.body).toBe(200);

    proxy.hideReads('idempotency');
    const findsBefore = proxy.sent.get('find') ?? 0;
    const outcome = await within(promote(t.app, api, svc.id, release.releaseId, { generation: 0, key: 'claim-key-1' }), 20_000);
    const finds = (proxy.sent.get('find') ?? 0) - findsBefore;
    expect(outcome.settled, `still unanswered after 20 s and ${finds} reads`).toBe('resolved');
    const res = outcome.settled === 'resolved' ? outcome.value : undefined;
    expect(res?.statusCode, res?.body).toBe(409);
    expect(res?.json().code).toBe('idempotency-request-in-progress');
    expect(res?.headers['retry-after']).toBeDefined();

    proxy.resume();
    const replay = await promote(t.app, api, svc.id, release.releaseId, { generation: 0, key: 'claim-key-1' });
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  }, 60_000);
});
