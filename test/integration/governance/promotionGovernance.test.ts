import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { testSigner } from '../../support/attestations.js';
import {
  promoteAndSucceed as succeedWith,
  bearer, createFixtureService, fullRolloutHistory, promote, pushRelease, registerCluster, rollback, type FixtureService, type PushedRelease,
} from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';

/**
 * Governance through the real app on a real database (docs/governance.md): the pipeline (a digest
 * must have succeeded and soaked upstream), the windows (a weekly freeze across a daylight-saving
 * change in Europe/Berlin, told with the next opening), and stop-the-line (an admin's switch) refuse
 * promotions and let rollbacks through; a refusal writes nothing. The server's clock is the test's.
 */

const NODES = ['n1', 'n2'];
const HOUR = 3_600_000;

describe('promotion governance', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({ ATTESTATION_SIGNING_KEY: testSigner('ed25519').privateKeyPem, LIFECYCLE_SWEEP_INTERVAL_MS: 60_000 }, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', NODES);
  }, 60_000);
  afterAll(async () => { await t?.close(); });
  beforeEach(() => { clock = Date.now(); });

  const service = (promotionPolicy?: Record<string, unknown>): Promise<FixtureService> =>
    createFixtureService(t.app, admin, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 }, ...(promotionPolicy ? { promotionPolicy } : {}) });

  const promoteAndSucceed = (svc: FixtureService, release: PushedRelease, generation: number): Promise<IImmutableImageDeploymentPlan> =>
    succeedWith(t.app, { api, cluster }, svc, release, generation, NODES);

  /** What a refusal must leave as it was: the service and its history. */
  const snapshot = async (svc: FixtureService): Promise<string> => JSON.stringify([
    (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(api) })).json(),
    await fullRolloutHistory(t.app, api, svc.id),
  ]);

  describe('pipeline staging → production', () => {
    it('refuses a digest never promoted upstream, then one not soaked (with the time left), then promotes it after the soak', async () => {
      const staging = await service();
      const production = await service({ pipeline: { requires: [{ serviceId: staging.id, soakSeconds: 3600 }] } });
      const seed = `pipeline-${Date.now()}`;
      const inStaging = await pushRelease(t.app, api, staging, { seed });
      const inProduction = await pushRelease(t.app, api, production, { seed });

      const before = await snapshot(production);
      const never = await promote(t.app, api, production.id, inProduction.releaseId, { generation: 0 });
      expect(never.statusCode, never.body).toBe(409);
      expect(never.json()).toMatchObject({ code: 'pipeline-stage-not-satisfied', stage: staging.id, missing: 'never-promoted' });
      expect(await snapshot(production)).toBe(before);

      await promoteAndSucceed(staging, inStaging, 0);
      clock += 20 * 60_000;
      const early = await promote(t.app, api, production.id, inProduction.releaseId, { generation: 0 });
      expect(early.statusCode, early.body).toBe(409);
      expect(early.json()).toMatchObject({ code: 'pipeline-stage-not-satisfied', stage: staging.id, missing: 'not-soaked', remainingSeconds: 2400 });
      expect(early.json().detail).toMatch(/2400 s left/);
      expect(await snapshot(production)).toBe(before);

      // The pipeline view says the same, for the newest release by default.
      const view = (await t.app.inject({ method: 'GET', url: `/v1/services/${production.id}/pipeline`, headers: bearer(api) })).json();
      expect(view).toMatchObject({
        digest: inProduction.digest, allowed: false, stages: [{ serviceId: staging.id, missing: 'not-soaked', remainingSeconds: 2400 }],
      });

      clock += 2400_000;
      const after = await t.app.inject({ method: 'GET', url: `/v1/services/${production.id}/pipeline?digest=${inProduction.digest}`, headers: bearer(api) });
      expect(after.json()).toMatchObject({ allowed: true, stages: [{ serviceId: staging.id, satisfied: true }] });
      const soaked = await promote(t.app, api, production.id, inProduction.releaseId, { generation: 0 });
      expect(soaked.statusCode, soaked.body).toBe(200);
    });

    it('refuses a digest whose staging success was revoked (it drifted there)', async () => {
      const staging = await service();
      const production = await service({ pipeline: { requires: [{ serviceId: staging.id, soakSeconds: 60 }] } });
      const seed = `revoked-${Date.now()}`;
      const plan = await promoteAndSucceed(staging, await pushRelease(t.app, api, staging, { seed }), 0);
      const inProduction = await pushRelease(t.app, api, production, { seed });
      // n2 now runs another digest: the success is revoked.
      const other = `sha256:${'e'.repeat(64)}`;
      const deployments = [
        verifiedReplica(plan, staging.id, 'n1', 0),
        verifiedReplica(plan, staging.id, 'n2', 0, {
          evidence: { repoDigests: [`${plan.digestPinnedImageReference.split('@')[0]}@${other}`], resolvedDigest: other },
        }),
      ];
      const drifted = await t.app.inject({
        method: 'POST',
        url: '/v1/deployment-snapshots',
        headers: bearer(cluster),
        payload: reportBody(plan, staging.id, { sequence: 2, nodeNames: NODES, deployments }),
      });
      expect(drifted.statusCode, drifted.body).toBe(200);
      clock += 2 * HOUR;
      const refused = await promote(t.app, api, production.id, inProduction.releaseId, { generation: 0 });
      expect(refused.statusCode, refused.body).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'pipeline-stage-not-satisfied', stage: staging.id, missing: 'revoked', rolloutId: plan.rolloutId });
    });

    it('a rollback is never held by the pipeline, even to a digest the stage has since rolled back', async () => {
      const staging = await service();
      const production = await service({ pipeline: { requires: [{ serviceId: staging.id, soakSeconds: 0 }] } });
      const [x, a] = [`x-${Date.now()}`, `a-${Date.now()}`];
      const xStaging = await pushRelease(t.app, api, staging, { seed: x, tag: 'x' });
      await promoteAndSucceed(staging, xStaging, 0);
      const aInStaging = await promoteAndSucceed(staging, await pushRelease(t.app, api, staging, { seed: a, tag: 'a' }), 1);
      const aProduction = await pushRelease(t.app, api, production, { seed: a, tag: 'a' });
      const xProduction = await pushRelease(t.app, api, production, { seed: x, tag: 'x' });
      expect((await promote(t.app, api, production.id, aProduction.releaseId, { generation: 0 })).statusCode).toBe(200);
      const px = await promote(t.app, api, production.id, xProduction.releaseId, { generation: 1 });
      expect(px.statusCode, px.body).toBe(200);
      // Staging rolls a back: its word against a voids a's success there.
      expect((await rollback(t.app, api, staging.id, xStaging.releaseId, { generation: 2, currentRolloutId: aInStaging.rolloutId })).statusCode).toBe(200);
      const again = await promote(t.app, api, production.id, aProduction.releaseId, { generation: 2 });
      expect(again.statusCode, again.body).toBe(409);
      expect(again.json()).toMatchObject({ code: 'pipeline-stage-not-satisfied', stage: staging.id, missing: 'rolled-back', rolloutId: aInStaging.rolloutId });
      const currentRolloutId = px.json().service.data.imageDeployment.rolloutId;
      const back = await rollback(t.app, api, production.id, aProduction.releaseId, { generation: 2, currentRolloutId });
      expect(back.statusCode, back.body).toBe(200);
    });
  });

  describe('windows', () => {
    // Fridays 16:00 in Berlin for 2 days 12 hours (nominal: ends Monday 04:00 local), over the spring-forward weekend of 2025.
    const freeze = {
      name: 'weekend-freeze', kind: 'deny', start: '2025-01-03T16:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=FR', duration: 'P2DT12H',
    };

    it('refuses a promotion inside a weekly deny window with its next opening across the DST change; a rollback goes through', async () => {
      const svc = await service({ windows: [freeze] });
      clock = Date.UTC(2025, 2, 27, 12); // Thursday 27 March 2025: open
      const a = await pushRelease(t.app, api, svc, { tag: 'a', observedAt: clock });
      const b = await pushRelease(t.app, api, svc, { tag: 'b', observedAt: clock + 1 });
      const c = await pushRelease(t.app, api, svc, { tag: 'c', observedAt: clock + 2 });
      expect((await promote(t.app, api, svc.id, a.releaseId, { generation: 0 })).statusCode).toBe(200);
      const pb = await promote(t.app, api, svc.id, b.releaseId, { generation: 1 });
      expect(pb.statusCode, pb.body).toBe(200);

      clock = Date.UTC(2025, 2, 29, 12); // Saturday: frozen
      const before = await snapshot(svc);
      const refused = await promote(t.app, api, svc.id, c.releaseId, { generation: 2 });
      expect(refused.statusCode, refused.body).toBe(423);
      // Friday 16:00 CET (15:00Z) + 2 days 12 hours in the zone: Monday 04:00 CEST = 02:00Z, after the clocks went forward.
      expect(refused.json()).toMatchObject({ code: 'promotion-window-closed', window: 'weekend-freeze', opensAt: Date.UTC(2025, 2, 31, 2) });
      expect(await snapshot(svc)).toBe(before);

      const back = await rollback(t.app, api, svc.id, a.releaseId, { generation: 2, currentRolloutId: pb.json().service.data.imageDeployment.rolloutId });
      expect(back.statusCode, back.body).toBe(200);

      clock = Date.UTC(2025, 2, 31, 2); // Monday 04:00 CEST: open again, [start, end)
      expect((await promote(t.app, api, svc.id, c.releaseId, { generation: 3 })).statusCode).toBe(200);
      clock = Date.now();
    });

    it('break-glass: another principal approves, it passes the window once within its time box, and the rollout records it', async () => {
      const svc = await service({ windows: [freeze], breakGlass: { allowed: true, maxSeconds: 1800 } });
      clock = Date.UTC(2025, 2, 27, 12);
      const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((tag, i) => pushRelease(t.app, api, svc, { tag, observedAt: clock + i })));
      const pa = (await promote(t.app, api, svc.id, a!.releaseId, { generation: 0 })).json().service.data.imageDeployment;
      clock = Date.UTC(2025, 2, 29, 12); // frozen
      const grantFor = async (releaseId: string) => {
        const res = await t.app.inject({
          method: 'POST', url: `/v1/services/${svc.id}/break-glass`, headers: bearer(api), payload: { releaseId, reason: 'hotfix for incident 4711' },
        });
        expect(res.statusCode, res.body).toBe(201);
        return res.json().grant.grantId as string;
      };
      const approveGrant = (grantId: string, token: string) =>
        t.app.inject({ method: 'POST', url: `/v1/services/${svc.id}/break-glass/${grantId}/approve`, headers: bearer(token) });
      const promoteWith = (releaseId: string, grantId: string, generation: number) => t.app.inject({
        method: 'POST',
        url: `/v1/services/${svc.id}/image-releases/${releaseId}/promote`,
        headers: { ...bearer(api), 'idempotency-key': `bg-${grantId}-${releaseId}-${generation}`, 'break-glass-grant': grantId },
        payload: { expectedRolloutGeneration: generation, enableImmutableImage: true },
      });

      const grant = await grantFor(b!.releaseId);
      expect((await promoteWith(b!.releaseId, grant, 1)).json()).toMatchObject({ code: 'break-glass-not-available', reason: 'awaiting-approval' });
      expect((await approveGrant(grant, api)).json()).toMatchObject({ code: 'approval-not-allowed', reason: 'self-approval' });
      const approved = await approveGrant(grant, admin);
      expect(approved.statusCode, approved.body).toBe(200);
      expect(approved.json().grant).toMatchObject({ state: 'active', until: clock + 1800_000, approvedBy: { subject: 'test-admin' } });
      expect((await promoteWith(c!.releaseId, grant, 1)).json()).toMatchObject({ code: 'break-glass-not-available', reason: 'other-release' });

      const passed = await promoteWith(b!.releaseId, grant, 1);
      expect(passed.statusCode, passed.body).toBe(200);
      const [latest] = await fullRolloutHistory(t.app, api, svc.id);
      expect(latest?.breakGlass).toEqual({
        grantId: grant, reason: 'hotfix for incident 4711', requestedBy: 'test-api', approvedBy: 'test-admin', until: clock + 1800_000,
      });
      const read = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/break-glass/${grant}`, headers: bearer(api) });
      expect(read.json().grant).toMatchObject({ state: 'used', usedBy: { rolloutId: latest?.rolloutId } });

      // Once: back to a (a rollback needs no grant), then the same grant again is refused.
      const back = await rollback(t.app, api, svc.id, a!.releaseId, { generation: 2, currentRolloutId: latest!.rolloutId });
      expect(back.statusCode, back.body).toBe(200);
      expect((await promoteWith(b!.releaseId, grant, 3)).json()).toMatchObject({ code: 'break-glass-not-available', reason: 'used' });
      // Within its time box only.
      const late = await grantFor(c!.releaseId);
      expect((await approveGrant(late, admin)).statusCode).toBe(200);
      clock += 1800_000;
      expect((await promoteWith(c!.releaseId, late, 3)).json()).toMatchObject({ code: 'break-glass-not-available', reason: 'expired' });
      expect(pa.releaseId).toBe(a!.releaseId);
    });

    it('the global windows close every service; a bad rule is refused naming its field, nothing written', async () => {
      const bad = await t.app.inject({
        method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: { governance: { windows: [{ ...freeze, rrule: 'FREQ=WEEKLY;BYHOUR=25' }] } },
      });
      expect(bad.statusCode, bad.body).toBe(400);
      expect(JSON.stringify(bad.json())).toContain('/body/governance/windows/0/rrule');
      expect((await t.app.inject({ method: 'GET', url: '/v1/governance', headers: bearer(api) })).json()).toEqual({ governance: {} });

      const set = await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: { governance: { windows: [freeze] } } });
      expect(set.statusCode, set.body).toBe(200);
      const svc = await service();
      clock = Date.UTC(2025, 9, 25, 12); // Saturday 25 October 2025: frozen; Monday 04:00 CET after fall-back = 03:00Z
      const a = await pushRelease(t.app, api, svc, { observedAt: clock });
      const refused = await promote(t.app, api, svc.id, a.releaseId, { generation: 0 });
      expect(refused.statusCode, refused.body).toBe(423);
      expect(refused.json()).toMatchObject({ code: 'promotion-window-closed', scope: 'global', opensAt: Date.UTC(2025, 9, 27, 3) });
      expect((await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: { governance: {} } })).statusCode).toBe(200);
      expect((await promote(t.app, api, svc.id, a.releaseId, { generation: 0 })).statusCode).toBe(200);
      clock = Date.now();
    });
  });

  describe('stop-the-line', () => {
    it('refuses every promotion (who, since, why) and lets aborts and rollbacks through; only an admin switches it; off again, promotions go', async () => {
      const svc = await service();
      const a = await pushRelease(t.app, api, svc, { tag: 'a' });
      const b = await pushRelease(t.app, api, svc, { tag: 'b' });
      const c = await pushRelease(t.app, api, svc, { tag: 'c' });
      await promoteAndSucceed(svc, a, 0);
      const pb = (await promote(t.app, api, svc.id, b.releaseId, { generation: 1 })).json();

      const stop = { governance: { stopTheLine: { active: true, reason: 'incident 4711: payments degraded' } } };
      const byApi = await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(api), payload: stop });
      expect(byApi.statusCode).toBe(403);
      const noReason = await t.app.inject({
        method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: { governance: { stopTheLine: { active: true } } },
      });
      expect(noReason.statusCode).toBe(400);
      expect(JSON.stringify(noReason.json())).toContain('/body/governance/stopTheLine/reason');
      const on = await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: stop });
      expect(on.statusCode, on.body).toBe(200);
      expect(on.json().governance.stopTheLine).toMatchObject({ active: true, by: expect.any(String), since: clock });

      const before = await snapshot(svc);
      const refused = await promote(t.app, api, svc.id, c.releaseId, { generation: 2 });
      expect(refused.statusCode, refused.body).toBe(423);
      expect(refused.json()).toMatchObject({ code: 'stop-the-line' });
      expect(refused.json().detail).toContain('incident 4711');
      expect(await snapshot(svc)).toBe(before);
      // Receivers hear it: a promotion.refused event in the service's log (docs/webhooks.md).
      const logged = await new EventLogStore(t.database).eventsAfter(svc.id, 0, 100);
      expect(logged.filter((e) => e.type === 'promotion.refused').map((e) => e.data)).toEqual([
        expect.objectContaining({ code: 'stop-the-line', releaseId: c.releaseId, mode: 'promotion' }),
      ]);

      // An abort (to the last verified release, a) and a rollback (to b) both go through.
      const aborted = await t.app.inject({
        method: 'POST',
        url: `/v1/services/${svc.id}/rollout/abort`,
        headers: { ...bearer(api), 'idempotency-key': `abort-${svc.id}` },
        payload: { expectedCurrentRolloutId: pb.service.data.imageDeployment.rolloutId, expectedRolloutGeneration: 2 },
      });
      expect(aborted.statusCode, aborted.body).toBe(200);
      expect(aborted.json().service.data.imageDeployment.releaseId).toBe(a.releaseId);
      const back = await rollback(t.app, api, svc.id, b.releaseId, { generation: 3, currentRolloutId: aborted.json().service.data.imageDeployment.rolloutId });
      expect(back.statusCode, back.body).toBe(200);

      expect((await t.app.inject({ method: 'PUT', url: '/v1/governance', headers: bearer(admin), payload: { governance: {} } })).statusCode).toBe(200);
      expect((await promote(t.app, api, svc.id, c.releaseId, { generation: 4 })).statusCode).toBe(200);
    });
  });
});
