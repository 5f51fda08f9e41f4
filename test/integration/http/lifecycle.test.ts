import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultPoint } from '../../../src/faults.js';
import { buildTestApp, callTypedRequest, type TestApp } from '../../support/app.js';
import {
  createFixtureService, promote, pushRelease, registerCluster, rollback, rolloutHistory, type FixtureService, bearer,
} from '../../support/fixtures.js';
import { reportVerified } from '../../support/reports.js';

describe('promotion and rollback', () => {
  let t: TestApp;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    await registerCluster(t.app, admin, 'c1', ['n2', 'n1']);
    await registerCluster(t.app, admin, 'c2', ['m1']);
  });
  afterAll(async () => { await t.close(); });

  const releases = async (serviceId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/image-releases`, headers: bearer(admin) });
    return res.json().releases as Array<{ id: string, data: Record<string, unknown> }>;
  };
  const history = async (serviceId: string) => await rolloutHistory(t.app, admin, serviceId);
  const service = async (serviceId: string) =>
    (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service;

  it('a first promotion writes a validated plan, resets the status and accepts the release', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1', 'c2'], replicasPerNode: 2 });
    const { releaseId, digest } = await pushRelease(t.app, api, svc, { tag: 'v1' });
    const res = await promote(t.app, api, svc.id, releaseId, { generation: 0, reason: 'release 1.0' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    const data = res.json().service.data;
    expect(data.immutableImageRequired).toBe(true);
    expect(data.imageDeployment).toMatchObject({
      policy: 'immutable-digest',
      rolloutGeneration: 1,
      releaseId,
      requestedDigest: digest,
      digestPinnedImageReference: `registry.example.com/${svc.repository}@${digest}`,
      mode: 'promotion',
      targetScope: { targetClusterIds: ['c1', 'c2'], targetNodeNames: ['m1', 'n1', 'n2'], replicasPerNode: 2, requiredReplicaCount: 6 },
    });
    expect(data.imageDeployment.rollbackOfRolloutId).toBeUndefined();
    expect(data.imageRolloutStatus).toEqual({
      rolloutId: data.imageDeployment.rolloutId,
      rolloutGeneration: 1,
      expectedDigest: digest,
      status: 'pending',
      requiredReplicaCount: 6,
      observedReplicaCount: 0,
      healthyReplicaCount: 0,
      verifiedReplicaCount: 0,
      failedReplicaCount: 0,
      updatedAt: data.imageDeployment.createdAt,
      reporters: [],
    });
    expect(await service(svc.id)).toEqual(res.json().service);

    const [release] = await releases(svc.id);
    expect(release?.data).toMatchObject({ acceptedAt: data.imageDeployment.createdAt, lastPromotedAt: data.imageDeployment.createdAt, promotionCount: 1 });

    const rollouts = await history(svc.id);
    expect(rollouts).toHaveLength(1);
    expect(rollouts[0]).toMatchObject({
      generation: 1, mode: 'promotion', releaseId, reason: 'release 1.0', state: 'applied', issuedBy: { subject: 'test-api', role: 'api' },
    });
  });

  it('the next promotion needs the current generation and, when given, the current rollout id', async () => {
    const svc = await createFixtureService(t.app, admin);
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    const b = await pushRelease(t.app, api, svc, { tag: 'b' });
    const first = (await promote(t.app, api, svc.id, a.releaseId, { generation: 0 })).json().service.data.imageDeployment;

    const stale = await promote(t.app, api, svc.id, b.releaseId, { generation: 0 });
    expect(stale.statusCode).toBe(409);
    expect(stale.json()).toMatchObject({ code: 'rollout-generation-conflict', currentGeneration: 1, currentRolloutId: first.rolloutId });

    const wrongCurrent = await promote(t.app, api, svc.id, b.releaseId, { generation: 1, currentRolloutId: 'ro_other' });
    expect(wrongCurrent.statusCode).toBe(409);
    expect(wrongCurrent.json()).toMatchObject({ code: 'current-rollout-mismatch', currentGeneration: 1, currentRolloutId: first.rolloutId });

    const ok = await promote(t.app, api, svc.id, b.releaseId, { generation: 1, currentRolloutId: first.rolloutId });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().service.data.imageDeployment).toMatchObject({ rolloutGeneration: 2, releaseId: b.releaseId, mode: 'promotion' });
    const unknown = await promote(t.app, api, svc.id, 'rel_missing', { generation: 2 });
    expect(unknown.json().code).toBe('release-not-found');
    expect(await history(svc.id)).toHaveLength(2);
  });

  it('release-not-found says what promote takes: a digest given where the release id goes is named as such', async () => {
    const svc = await createFixtureService(t.app, admin);
    const digest = `sha256:${'ab'.repeat(32)}`;
    const byDigest = await promote(t.app, api, svc.id, digest, { generation: 0 });
    expect(byDigest.statusCode).toBe(404);
    expect(byDigest.json()).toMatchObject({ code: 'release-not-found' });
    expect(byDigest.json().detail).toContain('a release is named by its id, not its digest');
    const unknown = await promote(t.app, api, svc.id, 'rel_missing', { generation: 0 });
    expect(unknown.json().detail).toContain('a release exists once a push event for its image was received');
  });

  it('a release of another service is release-not-found', async () => {
    const one = await createFixtureService(t.app, admin);
    const two = await createFixtureService(t.app, admin);
    const { releaseId } = await pushRelease(t.app, api, one);
    const res = await promote(t.app, api, two.id, releaseId, { generation: 0 });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('release-not-found');
  });

  it('a plan the upstream validator rejects is never written: invalid-deployment-plan with its messages', async () => {
    const svc = await createFixtureService(t.app, admin, { withPlacement: false });
    const { releaseId } = await pushRelease(t.app, api, svc);
    const res = await promote(t.app, api, svc.id, releaseId, { generation: 0 });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ code: 'invalid-deployment-plan', problems: ['immutable rollout target scope must contain clusters and nodes'] });
    const unknownCluster = await createFixtureService(t.app, admin, { clusterIds: ['nowhere'] });
    const r2 = await pushRelease(t.app, api, unknownCluster);
    expect((await promote(t.app, api, unknownCluster.id, r2.releaseId, { generation: 0 })).json().code).toBe('invalid-deployment-plan');
    expect((await service(svc.id)).data.imageDeployment).toBeUndefined();
    expect(await history(svc.id)).toHaveLength(0);
    expect((await releases(svc.id))[0]?.data['acceptedAt']).toBeUndefined();
  });

  describe('rollback rules', () => {
    let svc: FixtureService;
    let good: string;
    let bad: string;
    let never: string;
    beforeAll(async () => {
      svc = await createFixtureService(t.app, admin);
      good = (await pushRelease(t.app, api, svc, { tag: 'good' })).releaseId;
      bad = (await pushRelease(t.app, api, svc, { tag: 'bad' })).releaseId;
      never = (await pushRelease(t.app, api, svc, { tag: 'never' })).releaseId;
    });

    it('no rollout yet → no-current-rollout', async () => {
      const res = await rollback(t.app, api, svc.id, good, { generation: 0, currentRolloutId: 'ro_x' });
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('no-current-rollout');
    });

    it('target never accepted → rollback-target-not-accepted; target running → rollback-target-is-current; ' +
      'wrong current → current-rollout-mismatch; stale generation → conflict', async () => {
      const g1 = (await promote(t.app, api, svc.id, good, { generation: 0 })).json().service.data.imageDeployment;
      const g2 = (await promote(t.app, api, svc.id, bad, { generation: 1 })).json().service.data.imageDeployment;

      const notAccepted = await rollback(t.app, api, svc.id, never, { generation: 2, currentRolloutId: g2.rolloutId });
      expect(notAccepted.statusCode).toBe(409);
      expect(notAccepted.json().code).toBe('rollback-target-not-accepted');

      const isCurrent = await rollback(t.app, api, svc.id, bad, { generation: 2, currentRolloutId: g2.rolloutId });
      expect(isCurrent.json().code).toBe('rollback-target-is-current');

      const mismatch = await rollback(t.app, api, svc.id, good, { generation: 2, currentRolloutId: g1.rolloutId });
      expect(mismatch.json()).toMatchObject({ code: 'current-rollout-mismatch', currentRolloutId: g2.rolloutId, currentGeneration: 2 });

      const stale = await rollback(t.app, api, svc.id, good, { generation: 1, currentRolloutId: g2.rolloutId });
      expect(stale.json()).toMatchObject({ code: 'rollout-generation-conflict', currentGeneration: 2 });
      expect(await history(svc.id)).toHaveLength(2);

      const ok = await rollback(t.app, api, svc.id, good, { generation: 2, currentRolloutId: g2.rolloutId, reason: 'bad build' });
      expect(ok.statusCode, ok.body).toBe(200);
      const data = ok.json().service.data;
      expect(data.imageDeployment).toMatchObject({
        mode: 'rollback', rollbackOfRolloutId: g2.rolloutId, rolloutGeneration: 3, releaseId: good, requestedDigest: g1.requestedDigest,
      });
      expect(data.imageRolloutStatus).toMatchObject({ status: 'rolling-back', rolloutGeneration: 3, expectedDigest: g1.requestedDigest });
      const [latest] = await history(svc.id);
      expect(latest).toMatchObject({ mode: 'rollback', automationHold: 'set', reason: 'bad build', previous: { rolloutId: g2.rolloutId, releaseId: bad } });
      // A rollback does not count as a promotion of its target.
      const goodRelease = (await releases(svc.id)).find((r) => r.id === good);
      expect(goodRelease?.data['promotionCount']).toBe(1);
    });
  });

  describe('idempotency keys', () => {
    it('a missing key is idempotency-key-missing, checked before the body', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/v1/services/svc_x/image-releases/rel_x/promote', headers: bearer(api), payload: { nope: 1 } });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('idempotency-key-missing');
      const bad = await t.app.inject({
        method: 'POST', url: '/v1/services/svc_x/image-releases/rel_x/promote', headers: { ...bearer(api), 'idempotency-key': 'has space' }, payload: {},
      });
      expect(bad.json().code).toBe('validation-failed');
    });

    it('the same key replays the identical outcome with Idempotent-Replayed, even after the state moved on', async () => {
      const svc = await createFixtureService(t.app, admin);
      const a = await pushRelease(t.app, api, svc);
      const b = await pushRelease(t.app, api, svc);
      const first = await promote(t.app, api, svc.id, a.releaseId, { generation: 0, key: 'k-1' });
      await promote(t.app, api, svc.id, b.releaseId, { generation: 1, key: 'k-2' });
      const again = await promote(t.app, api, svc.id, a.releaseId, { generation: 0, key: 'k-1' });
      expect(again.statusCode).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toBe(first.body);
      expect(await history(svc.id)).toHaveLength(2);

      const otherRelease = await promote(t.app, api, svc.id, b.releaseId, { generation: 0, key: 'k-1' });
      expect(otherRelease.statusCode).toBe(422);
      expect(otherRelease.json().code).toBe('idempotency-key-reused');
      const otherBody = await promote(t.app, api, svc.id, a.releaseId, { generation: 5, key: 'k-1' });
      expect(otherBody.json().code).toBe('idempotency-key-reused');
      const otherReason = await promote(t.app, api, svc.id, a.releaseId, { generation: 0, key: 'k-1', reason: 'different' });
      expect(otherReason.json().code).toBe('idempotency-key-reused');
    });

    it('once its record has expired and been swept, a key starts a new request (it does not find the old rollout)', async () => {
      const t2 = await buildTestApp({ IDEMPOTENCY_SWEEP_INTERVAL_MS: 50 });
      try {
        const admin2 = await t2.token('admin');
        await registerCluster(t2.app, admin2, 'c1', ['n1']);
        const svc = await createFixtureService(t2.app, admin2);
        const a = await pushRelease(t2.app, admin2, svc);
        const b = await pushRelease(t2.app, admin2, svc, { tag: 'b' });
        expect((await promote(t2.app, admin2, svc.id, a.releaseId, { generation: 0, key: 'k-expiring' })).statusCode).toBe(200);
        const records = t2.db.collection('idempotency');
        const fresh = await records.insertOne({ _id: 'unexpired' as never, expiresAt: new Date(Date.now() + 3_600_000) });
        // 48 h later: the sweeper (every 50 ms here) removes the record, as MongoDB's TTL index would.
        await records.updateMany({ serviceId: svc.id }, { $set: { expiresAt: new Date(Date.now() - 1) } });
        for (let i = 0; i < 100 && (await records.countDocuments({ serviceId: svc.id })) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(await records.countDocuments({ serviceId: svc.id })).toBe(0);
        expect(await records.countDocuments({ _id: fresh.insertedId })).toBe(1);

        const reused = await promote(t2.app, admin2, svc.id, b.releaseId, { generation: 1, key: 'k-expiring' });
        expect(reused.statusCode, reused.body).toBe(200);
        expect(reused.headers['idempotent-replayed']).toBeUndefined();
        expect(reused.json().service.data.imageDeployment).toMatchObject({ rolloutGeneration: 2, releaseId: b.releaseId });
        const rollouts = await rolloutHistory(t2.app, admin2, svc.id);
        expect(rollouts.map((r) => r.releaseId)).toEqual([b.releaseId, a.releaseId]);
        expect(rollouts[0]!.idempotencyKeyHash).toMatch(/^[0-9a-f]{64}$/);
        expect(rollouts[0]!.idempotencyKeyHash).toBe(rollouts[1]!.idempotencyKeyHash);
      } finally {
        await t2.close();
      }
    });

    it('a deterministic error is stored and replayed too', async () => {
      const svc = await createFixtureService(t.app, admin);
      const a = await pushRelease(t.app, api, svc);
      const conflict = await promote(t.app, api, svc.id, a.releaseId, { generation: 3, key: 'k-err' });
      expect(conflict.json().code).toBe('rollout-generation-conflict');
      const replay = await promote(t.app, api, svc.id, a.releaseId, { generation: 3, key: 'k-err' });
      expect(replay.statusCode).toBe(409);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json()).toMatchObject({ code: 'rollout-generation-conflict', currentGeneration: 0 });
    });

    it('keys are scoped to the service', async () => {
      const one = await createFixtureService(t.app, admin);
      const two = await createFixtureService(t.app, admin);
      const r1 = await pushRelease(t.app, api, one);
      const r2 = await pushRelease(t.app, api, two);
      expect((await promote(t.app, api, one.id, r1.releaseId, { generation: 0, key: 'shared' })).statusCode).toBe(200);
      const other = await promote(t.app, api, two.id, r2.releaseId, { generation: 0, key: 'shared' });
      expect(other.statusCode).toBe(200);
      expect(other.headers['idempotent-replayed']).toBeUndefined();
    });
  });

  it('TypedRequest promote and rollback use the same rules (idempotencyKey in the request)', async () => {
    const svc = await createFixtureService(t.app, admin);
    const a = await pushRelease(t.app, api, svc);
    const b = await pushRelease(t.app, api, svc);
    const call = (method: string, request: Record<string, unknown>) =>
      callTypedRequest(t.app, method, { identity: { jwt: api }, serviceId: svc.id, ...request });
    const promotion = (releaseId: string, idempotencyKey: string, expectedRolloutGeneration: number) =>
      ({ releaseId, idempotencyKey, expectedRolloutGeneration, enableImmutableImage: true });
    const p1 = (await call('promoteServiceImageRelease', promotion(a.releaseId, 'tr-1', 0))).json();
    expect(p1.response.service.data.imageDeployment.rolloutGeneration).toBe(1);
    const p2 = (await call('promoteServiceImageRelease', promotion(b.releaseId, 'tr-2', 1))).json();
    const current = p2.response.service.data.imageDeployment.rolloutId;
    const rb = (await call('rollbackServiceImageRelease', {
      releaseId: a.releaseId, idempotencyKey: 'tr-3', expectedRolloutGeneration: 2, expectedCurrentRolloutId: current,
    })).json();
    expect(rb.response.service.data.imageDeployment).toMatchObject({ mode: 'rollback', rolloutGeneration: 3 });
    const conflict = (await call('promoteServiceImageRelease', promotion(b.releaseId, 'tr-4', 1))).json();
    expect(conflict.error.data).toMatchObject({ code: 'rollout-generation-conflict', currentGeneration: 3 });
    const noFlag = (await call('promoteServiceImageRelease', { releaseId: b.releaseId, idempotencyKey: 'tr-5', expectedRolloutGeneration: 3 })).json();
    expect(noFlag.error.data.code).toBe('validation-failed');
  });

  it('only admin and api may promote or roll back', async () => {
    const svc = await createFixtureService(t.app, admin);
    const a = await pushRelease(t.app, api, svc);
    for (const role of ['user', 'cluster'] as const) {
      const res = await promote(t.app, await t.token(role), svc.id, a.releaseId, { generation: 0 });
      expect(res.statusCode).toBe(403);
    }
    expect(await history(svc.id)).toHaveLength(0);
  });

  it('service updates never change the rollout generation or the plan', async () => {
    const svc = await createFixtureService(t.app, admin);
    const a = await pushRelease(t.app, api, svc);
    const promoted = (await promote(t.app, api, svc.id, a.releaseId, { generation: 0 })).json().service;
    const { immutableImageRequired: _i, imageDeployment: _d, imageRolloutStatus: _s, ...writable } = promoted.data;
    const updated = await t.app.inject({
      method: 'PUT', url: `/v1/services/${svc.id}`, headers: bearer(admin), payload: { ...writable, imageVersion: '9.9.9' },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().service.data.imageDeployment).toEqual(promoted.data.imageDeployment);
    expect(updated.json().service.data.imageVersion).toBe('9.9.9');
  });
});

describe('automatic promotion on push', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
    api = await t.token('api');
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  const history = async (serviceId: string) => await rolloutHistory(t.app, admin, serviceId);

  it('promotes once per event, holds after a manual rollback, resumes after an explicit promotion', async () => {
    const svc = await createFixtureService(t.app, admin, { deployOnPush: true });
    const cluster = await t.token('cluster');
    // Before the first explicit promotion the service does not require immutable images: no automation.
    const first = await pushRelease(t.app, api, svc, { tag: 'v1' });
    expect(await history(svc.id)).toHaveLength(0);
    const g1 = (await promote(t.app, api, svc.id, first.releaseId, { generation: 0 })).json().service.data.imageDeployment;
    // A push promotes once the current rollout has settled (a push during a rollout waits: test/integration/lifecycle).
    await reportVerified(t.app, cluster, g1, svc.id, ['n1']);

    const v2Event = { tag: 'v2', eventId: 'evt-v2', seed: `v2-${svc.id}`, observedAt: Date.now() };
    const v2 = await pushRelease(t.app, api, svc, v2Event);
    let rollouts = await history(svc.id);
    expect(rollouts).toHaveLength(2);
    expect(rollouts[0]).toMatchObject({ mode: 'automatic', generation: 2, releaseId: v2.releaseId, issuedBy: { role: 'system' } });

    // The same event again (a redelivery, identical content) is answered, and does not promote again.
    const redelivered = await pushRelease(t.app, api, svc, v2Event);
    expect(redelivered.body['duplicate']).toBe(true);
    expect(await history(svc.id)).toHaveLength(2);

    const g2 = rollouts[0] as { rolloutId: string };
    const rb = await rollback(t.app, api, svc.id, first.releaseId, { generation: 2, currentRolloutId: g2.rolloutId });
    expect(rb.statusCode, rb.body).toBe(200);
    const view = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json();
    expect(view.automationHold).toMatchObject({ rolloutId: rb.json().service.data.imageDeployment.rolloutId });

    const v3 = await pushRelease(t.app, api, svc, { tag: 'v3' });
    expect(v3.body['autoPromotion']).toMatchObject({ outcome: 'skipped', reason: 'on-hold' });
    expect(await history(svc.id)).toHaveLength(3);

    const explicit = await promote(t.app, api, svc.id, v3.releaseId, { generation: 3 });
    expect(explicit.statusCode).toBe(200);
    await reportVerified(t.app, cluster, explicit.json().service.data.imageDeployment, svc.id, ['n1']);
    rollouts = await history(svc.id);
    expect(rollouts[0]).toMatchObject({ mode: 'promotion', automationHold: 'cleared' });
    expect((await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().automationHold).toBeUndefined();

    const v4 = await pushRelease(t.app, api, svc, { tag: 'v4' });
    expect(v4.body['autoPromotion']).toMatchObject({ outcome: 'promoted' });
    rollouts = await history(svc.id);
    expect(rollouts).toHaveLength(5);
    expect(rollouts[0]).toMatchObject({ mode: 'automatic', releaseId: v4.releaseId, generation: 5 });
    expect(g1.rolloutGeneration).toBe(1);
  });

  it('loses cleanly to a concurrent manual promotion: never two rollouts from one generation', async () => {
    const svc = await createFixtureService(t.app, admin, { deployOnPush: true });
    const base = await pushRelease(t.app, api, svc);
    await promote(t.app, api, svc.id, base.releaseId, { generation: 0 });
    const manual = await pushRelease(t.app, api, svc, { tag: 'manual' });
    // Repeatedly race a manual promotion against a push that auto-promotes.
    for (let round = 0; round < 10; round++) {
      const generation = (await history(svc.id)).length;
      const [m] = await Promise.all([
        promote(t.app, api, svc.id, manual.releaseId, { generation }),
        pushRelease(t.app, api, svc, { tag: `auto-${round}` }),
      ]);
      expect([200, 409]).toContain(m.statusCode);
    }
    const rollouts = await history(svc.id);
    const generations = rollouts.map((r) => r['generation']);
    expect(new Set(generations).size).toBe(generations.length);
    expect(Math.max(...(generations as number[]))).toBe(rollouts.length);
  });
});

describe('crash between steps (injected in-process; the process-kill version is in lifecycle.crash.test.ts)', () => {
  for (const point of ['after-idempotency-record', 'after-rollout-record', 'after-plan-write', 'after-release-update'] as FaultPoint[]) {
    it(`a failure ${point} is completed exactly once by the retry with the same key`, async () => {
      let armed = true;
      // A short lease: a crash right after claiming the key leaves it held until the lease runs out.
      const fault = (p: FaultPoint) => {
        if (armed && p === point) {
          armed = false;
          throw new Error(`injected crash ${p}`);
        }
      };
      const t = await buildTestApp({ IDEMPOTENCY_LEASE_MS: 300 }, { fault });
      try {
        const admin = await t.token('admin');
        await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
        const svc = await createFixtureService(t.app, admin);
        const a = await pushRelease(t.app, admin, svc);
        const crashed = await promote(t.app, admin, svc.id, a.releaseId, { generation: 0, key: 'crash-key' });
        expect(crashed.statusCode).toBe(500);
        let retried = await promote(t.app, admin, svc.id, a.releaseId, { generation: 0, key: 'crash-key' });
        for (let i = 0; i < 50 && retried.json().code === 'idempotency-request-in-progress'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          retried = await promote(t.app, admin, svc.id, a.releaseId, { generation: 0, key: 'crash-key' });
        }
        expect(retried.statusCode, retried.body).toBe(200);
        const replay = await promote(t.app, admin, svc.id, a.releaseId, { generation: 0, key: 'crash-key' });
        expect(replay.body).toBe(retried.body);
        const rollouts = await rolloutHistory(t.app, admin, svc.id);
        expect(rollouts).toHaveLength(1);
        expect(rollouts[0]?.state).toBe('applied');
        const release = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/image-releases`, headers: bearer(admin) })).json().releases[0];
        expect(release.data.promotionCount).toBe(1);
        expect(retried.json().service.data.imageDeployment.rolloutGeneration).toBe(1);
      } finally {
        await t.close();
      }
    });
  }

  it('a rollout a crash left pending is finished before the next request is decided, which sees its service and release', async () => {
    let armed = false;
    const t = await buildTestApp({}, { fault: (p) => { if (armed && p === 'after-rollout-record') { armed = false; throw new Error('injected crash'); } } });
    try {
      const admin = await t.token('admin');
      await registerCluster(t.app, admin, 'c1', ['n1']);
      const svc = await createFixtureService(t.app, admin);
      const a = await pushRelease(t.app, admin, svc);
      const b = await pushRelease(t.app, admin, svc, { tag: 'b' });
      expect((await promote(t.app, admin, svc.id, a.releaseId, { generation: 0 })).statusCode).toBe(200);
      armed = true;
      expect((await promote(t.app, admin, svc.id, b.releaseId, { generation: 1 })).statusCode).toBe(500);
      const pending = (await rolloutHistory(t.app, admin, svc.id))[0]!;
      expect(pending).toMatchObject({ generation: 2, releaseId: b.releaseId, state: 'pending' });
      // Another key: this request finds the pending rollout (b is current once it is finished, and
      // accepted), so rolling back to b is refused as "is current", not as "never promoted".
      const refused = await rollback(t.app, admin, svc.id, b.releaseId, { generation: 2, currentRolloutId: pending.rolloutId });
      expect(refused.json()).toMatchObject({ code: 'rollback-target-is-current' });
      const back = await rollback(t.app, admin, svc.id, a.releaseId, { generation: 2, currentRolloutId: pending.rolloutId });
      expect(back.statusCode, back.body).toBe(200);
      expect(back.json().service.data.imageDeployment).toMatchObject({ rolloutGeneration: 3, releaseId: a.releaseId });
    } finally {
      await t.close();
    }
  });
});
