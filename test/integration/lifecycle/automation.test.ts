import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import type { RolloutHistoryItem } from '../../../src/domain/history.js';
import { buildTestApp, callTypedRequest, identity, serviceData, type TestApp } from '../../support/app.js';
import { bearer, promote, pushEvent, registerCluster, registryHost, rollback, rolloutHistory, type FixtureService } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

/**
 * Safe automatic promotion (docs/lifecycle.md "Lifecycle control"), through the real API on a clock the
 * test moves (`now` of the use cases) with the lifecycle sweeper running every 100 ms: a push
 * never promotes an older release, pushes that arrive while a rollout is in progress wait and only
 * the newest of them is promoted once it settles (by success or by its progress deadline), and the
 * service's tag pattern / semver range filters what may promote at all.
 *
 * Nothing here sleeps to show that something did not happen: `fullSweep()` waits until a whole
 * sweep that began after the call has ended (see there), and a lifecycle the sweeper has closed
 * (`rolloutStatus.lifecycle.open === false`) has no follow-up left to make.
 */

const SECOND = 1000;

type AutoPromotion = { outcome: string, reason?: string, rolloutId?: string, rolloutGeneration?: number };
interface Pushed { releaseId: string, eventId: string, tag: string, observedAt: number, status: number, autoPromotion?: AutoPromotion }

/** What the test reads of the stored service document (the queue is not in the API once it no longer belongs to the current rollout). */
interface ServiceDoc {
  _id: string;
  automationQueue?: { releaseId: string, afterRolloutId: string };
  rolloutStatus?: { rolloutId: string, lifecycle?: { open: boolean } };
}

/** A seeded shuffle (mulberry32 + Fisher–Yates), so that a failing order can be replayed from the seed in the message. */
function shuffled<T> (items: readonly T[], seed: number): T[] {
  let a = seed >>> 0;
  const random = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

describe('safe automatic promotion', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let clock = Date.now();
  /** observedAt of the next push that should be the newest so far (each test's pushes are newer than the last test's). */
  let observed = Date.now();

  beforeAll(async () => {
    t = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 100 }, { now: () => clock });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', ['n1']);
  });
  afterAll(async () => { await t.close(); });

  const services = () => t.db.collection<ServiceDoc>('services');
  const storedService = async (id: string) => await services().findOne({ _id: id });
  const history = async (serviceId: string): Promise<RolloutHistoryItem[]> => await rolloutHistory(t.app, admin, serviceId);
  const view = async (serviceId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const currentPlan = async (serviceId: string): Promise<IImmutableImageDeploymentPlan> => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().service.data.imageDeployment;
  };

  /** A service on c1 (node n1, one replica) with a stability window of 0 unless the policy says otherwise. */
  async function createService (opts: { deployOnPush?: boolean, policy?: Record<string, unknown> } = {}): Promise<FixtureService> {
    const repository = `team/auto-${randomBytes(4).toString('hex')}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        ...(opts.deployOnPush === false ? {} : { deployOnPush: true }),
        rolloutPolicy: { stabilityWindowSeconds: 0, ...opts.policy },
      }),
    });
    expect(res.statusCode, res.body).toBe(201);
    return { id: res.json().service.id, repository };
  }

  /** One push event of a new digest (unless `seed` names an earlier one); the answer's status and autoPromotion. */
  async function push (svc: FixtureService, opts: { tag?: string, observedAt?: number, seed?: string } = {}): Promise<Pushed> {
    const observedAt = opts.observedAt ?? (observed += SECOND);
    const event = pushEvent(svc, { tag: opts.tag ?? 'latest', observedAt, ...(opts.seed ? { seed: opts.seed } : {}) });
    const res = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
    expect([200, 201], res.body).toContain(res.statusCode);
    return {
      releaseId: event['releaseId'] as string,
      eventId: event['eventId'] as string,
      tag: event['tag'] as string,
      observedAt,
      status: res.statusCode,
      autoPromotion: res.json().autoPromotion,
    };
  }

  /** The first, explicit promotion (automation needs one), of a freshly pushed release. */
  async function firstPromotion (svc: FixtureService, opts: { tag?: string, observedAt?: number } = {}) {
    const release = await push(svc, opts);
    expect(release.autoPromotion).toEqual({ outcome: 'skipped', reason: 'not-enabled' });
    const res = await promote(t.app, api, svc.id, release.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return { release, plan: res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan };
  }

  const rollbackTo = (serviceId: string, releaseId: string, current: IImmutableImageDeploymentPlan) =>
    rollback(t.app, api, serviceId, releaseId, { generation: current.rolloutGeneration, currentRolloutId: current.rolloutId });

  let sequence = 0;
  /** One report of n1's replica for the plan (running and verified unless `status` / `evidence` say otherwise), at the test's clock. */
  async function report (serviceId: string, plan: IImmutableImageDeploymentPlan, overrides: Parameters<typeof verifiedReplica>[4] = {}) {
    const deployments = [verifiedReplica(plan, serviceId, 'n1', 0, overrides)];
    const body = reportBody(plan, serviceId, { sequence: ++sequence, session: 'coreflow-n1', nodeNames: ['n1'], deployments, reportedAt: clock });
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(cluster), payload: body });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().status as { status: string };
  }

  /** Reports the plan verified and waits until its lifecycle has succeeded (rolled back) and been closed by the sweeper (no follow-up left). */
  async function settleAndClose (serviceId: string, plan: IImmutableImageDeploymentPlan): Promise<void> {
    expect((await report(serviceId, plan)).status).toBe(plan.mode === 'rollback' ? 'rolled-back' : 'succeeded');
    await closed(serviceId, plan.rolloutId);
  }

  /** Waits until the current rollout is `rolloutId` and its lifecycle is closed: the sweeper has nothing more to do for it. */
  async function closed (serviceId: string, rolloutId: string): Promise<void> {
    await eventually(`lifecycle of ${rolloutId} closed`, async () => {
      const doc = await storedService(serviceId);
      expect(doc?.rolloutStatus?.rolloutId).toBe(rolloutId);
      expect(doc?.rolloutStatus?.lifecycle?.open).toBe(false);
    }, 200, 50);
  }

  /**
   * Waits until a rollout issued after `rolloutId` is applied: its record is inserted (state
   * pending) before the plan, the release counters and the previous rollout's end are written.
   */
  async function promotedAfter (serviceId: string, rolloutId: string): Promise<void> {
    await eventually(`a rollout after ${rolloutId} applied`, async () => {
      const [latest] = await history(serviceId);
      expect(latest?.previous?.rolloutId).toBe(rolloutId);
      expect(latest?.state).toBe('applied');
    }, 200, 50);
  }

  /** Completed lifecycle sweeps of the app so far (`cloudly_release_lifecycle_sweeps_total`). */
  async function sweeps (): Promise<number> {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith('cloudly_release_lifecycle_sweeps_total '));
    expect(line, 'the sweep counter is exposed').toBeDefined();
    return Number(line?.split(' ')[1]);
  }

  /**
   * A barrier: resolves once a whole sweep that began after the call has ended. With n sweeps
   * completed at the call, the (n+1)th may already be under way with what it read before; the
   * sweeps of one process never overlap, so the (n+2)th began after the (n+1)th ended — after
   * the call — and once it has completed, it has looked at every open rollout as it was then.
   */
  async function fullSweep (): Promise<void> {
    const before = await sweeps();
    await eventually('a whole lifecycle sweep after the barrier', async () => {
      expect(await sweeps()).toBeGreaterThanOrEqual(before + 2);
    }, 200, 50);
  }

  it('a shuffled burst of 20 pushes during a rollout in progress waits, and only the newest is promoted once it settles', async () => {
    // Stability window 10 s: the first report shows the replica running verified but not yet stable.
    const svc = await createService({ policy: { stabilityWindowSeconds: 10 } });
    const { release: first, plan } = await firstPromotion(svc, { tag: 'v1' });
    expect((await report(svc.id, plan)).status).toBe('deploying');
    const reportedAt = clock;

    // 20 distinct digests, observedAt increasing with the index; sent all at once in a shuffled order.
    const base = observed;
    observed += 21 * SECOND;
    const burst = Array.from({ length: 20 }, (_, i) => ({ i, tag: `v2.0.${i}`, seed: `burst-${svc.id}-${i}`, observedAt: base + (i + 1) * SECOND }));
    const seed = Math.floor(Math.random() * 2 ** 31);
    const order = shuffled(burst, seed);
    const answers = await Promise.all(order.map(async (p) => ({ ...p, pushed: await push(svc, p) })));
    const why = `shuffle seed ${seed}, order ${order.map((p) => p.i).join(',')}`;
    const newest = answers.find((a) => a.i === 19);
    expect(newest?.pushed.autoPromotion, why).toMatchObject({ outcome: 'queued' });
    for (const a of answers) {
      expect(a.pushed.status, why).toBe(201);
      const outcome = a.pushed.autoPromotion;
      const allowed = outcome?.outcome === 'queued' || (outcome?.outcome === 'skipped' && outcome.reason === 'newer-release-waiting');
      expect(allowed, `push ${a.i}: ${JSON.stringify(outcome)}; ${why}`).toBe(true);
    }

    // Nothing is promoted while the rollout is in progress, even after a whole sweep has looked at it.
    await fullSweep();
    expect((await history(svc.id)).map((r) => r.rolloutId), why).toEqual([plan.rolloutId]);
    const waiting = await view(svc.id);
    expect(waiting.plan.rolloutId).toBe(plan.rolloutId);
    expect(waiting.status.status).toBe('deploying');
    expect(waiting.lifecycle.queuedPromotion, why).toEqual({
      releaseId: newest?.pushed.releaseId, tag: 'v2.0.19', firstObservedAt: base + 20 * SECOND, queuedAt: expect.any(Number), eventId: newest?.pushed.eventId,
    });

    // The rollout settles (the window has passed): exactly one automatic promotion, of the newest.
    clock = Math.max(clock, reportedAt + 10 * SECOND);
    expect((await report(svc.id, plan)).status).toBe('succeeded');
    await promotedAfter(svc.id, plan.rolloutId);
    const promoted = await view(svc.id);
    expect(promoted.plan).toMatchObject({ rolloutGeneration: 2, mode: 'automatic', releaseId: newest?.pushed.releaseId });
    expect(promoted.lifecycle.queuedPromotion).toBeUndefined();
    expect((await storedService(svc.id))?.automationQueue, 'nothing is queued any more').toBeUndefined();
    const rollouts = await history(svc.id);
    expect(rollouts.map((r) => [r.generation, r.mode, r.releaseId, r.outcome]), why).toEqual([
      [2, 'automatic', newest?.pushed.releaseId, 'in-progress'],
      [1, 'promotion', first.releaseId, 'succeeded'],
    ]);
    expect(rollouts[0]).toMatchObject({
      rolloutId: promoted.plan.rolloutId,
      trigger: { kind: 'deferred-promotion', afterRolloutId: plan.rolloutId },
      issuedBy: { subject: 'registry-push:test-api', role: 'system', type: 'machine' },
    });
    expect(rollouts[1]).toMatchObject({ endedBy: { kind: 'superseded', rolloutId: promoted.plan.rolloutId } });

    // The automatic rollout settles too and its lifecycle closes: nothing was left to promote.
    clock += 10 * SECOND;
    await report(svc.id, promoted.plan);
    clock += 10 * SECOND;
    await settleAndClose(svc.id, promoted.plan);
    expect((await history(svc.id)).map((r) => r.rolloutId)).toEqual([promoted.plan.rolloutId, plan.rolloutId]);
    // Only the newest release was ever accepted.
    const releases = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/image-releases?limit=50`, headers: bearer(admin) })).json().releases;
    const accepted = (releases as Array<{ id: string, data: { acceptedAt?: number } }>).filter((r) => r.data.acceptedAt !== undefined).map((r) => r.id);
    expect(accepted.sort()).toEqual([first.releaseId, newest?.pushed.releaseId].sort());
  }, 60_000);

  /**
   * One round of a newer push racing the settling of a rollout while an older push waits: the
   * report that settles the rollout (its lifecycle pass promotes the waiting push) and the push of
   * a newer digest are sent at once. Then, once a whole sweep has passed, whatever is current is
   * settled in turn until the newest release is deployed — or a settled rollout's lifecycle closes
   * (no follow-up left) on another release: the newest push was lost. Returns the problem, if any.
   */
  async function raceRound (round: number): Promise<string | undefined> {
    const svc = await createService();
    const { plan } = await firstPromotion(svc, { tag: 'v1' });
    const older = await push(svc, { tag: 'older' });
    expect(older.autoPromotion?.outcome).toBe('queued');
    const [newest, settled] = await Promise.all([push(svc, { tag: 'newest' }), report(svc.id, plan)]);
    expect(settled.status).toBe('succeeded');
    await fullSweep();
    const name = (releaseId: string | undefined) => (releaseId === newest.releaseId ? 'newest' : releaseId === older.releaseId ? 'older' : 'first');
    for (let step = 0; step < 3; step++) {
      const current = await view(svc.id);
      if (current.plan.releaseId === newest.releaseId) return undefined;
      if (current.status.status !== 'succeeded') expect((await report(svc.id, current.plan)).status).toBe('succeeded');
      let outcome = '';
      await eventually(`round ${round}: rollout ${current.plan.rolloutId} replaced or closed`, async () => {
        const status = (await storedService(svc.id))?.rolloutStatus;
        outcome = status?.rolloutId !== current.plan.rolloutId ? 'replaced' : status?.lifecycle?.open === false ? 'closed' : '';
        expect(outcome).not.toBe('');
      }, 200, 50);
      if (outcome === 'closed') {
        const rollouts = (await history(svc.id)).map((r) => `g${r.generation} ${r.mode} ${name(r.releaseId)}`);
        return `round ${round}: the newest push (answered ${JSON.stringify(newest.autoPromotion)}) was never promoted; ` +
          `the history is ${rollouts.join(', ')}; queued: ${JSON.stringify((await storedService(svc.id))?.automationQueue ?? null)}`;
      }
    }
    return `round ${round}: still not on the newest release after 3 rollouts`;
  }

  it('a newer push racing the settle of a rollout with an older push waiting is never lost: the newest ends up deployed', async () => {
    // A loss needs a narrow interleaving — the newer push queued just after a lifecycle pass read
    // the queue, or seeing the rollout settled and racing the waiting push's promotion for the
    // generation — so rounds are run until the first loss (a correct server never loses one).
    const problems: string[] = [];
    for (let round = 0; round < 60 && problems.length === 0; round++) {
      const problem = await raceRound(round);
      if (problem) problems.push(problem);
    }
    expect(problems).toEqual([]);
  }, 240_000);

  it('an operator\'s rollback during a rollout drops the waiting push and holds automation until the next explicit promotion', async () => {
    const svc = await createService();
    const { release: first, plan } = await firstPromotion(svc, { tag: 'v1' });
    await settleAndClose(svc.id, plan);
    const second = await push(svc, { tag: 'v2' });
    expect(second.autoPromotion).toMatchObject({ outcome: 'promoted', rolloutGeneration: 2 });
    const automatic = await currentPlan(svc.id);
    const waiting = await push(svc, { tag: 'v3' });
    expect(waiting.autoPromotion).toMatchObject({ outcome: 'queued' });

    const res = await rollbackTo(svc.id, first.releaseId, automatic);
    expect(res.statusCode, res.body).toBe(200);
    expect((await storedService(svc.id))?.automationQueue).toBeUndefined();
    const rolledBack = await currentPlan(svc.id);
    expect(rolledBack).toMatchObject({ mode: 'rollback', releaseId: first.releaseId, rolloutGeneration: 3 });
    await settleAndClose(svc.id, rolledBack);
    expect((await view(svc.id)).automationHold).toMatchObject({ rolloutId: rolledBack.rolloutId });
    expect((await push(svc, { tag: 'v4' })).autoPromotion).toEqual({ outcome: 'skipped', reason: 'on-hold' });
    expect((await history(svc.id)).map((r) => r.generation)).toEqual([3, 2, 1]);
  });

  describe('a late push of an older digest promotes nothing (older-than-current)', () => {
    it('when the current rollout has settled', async () => {
      const svc = await createService();
      // A digest first observed before the one that gets deployed, seen again later (a re-tag).
      const old = await push(svc, { tag: 'old', seed: `old-${svc.id}` });
      const { plan } = await firstPromotion(svc, { tag: 'v1' });
      await settleAndClose(svc.id, plan);

      const older = await push(svc, { tag: 'late', observedAt: old.observedAt - 60 * SECOND });
      expect(older.autoPromotion).toEqual({ outcome: 'skipped', reason: 'older-than-current' });
      const retagged = await push(svc, { tag: 'retagged', seed: `old-${svc.id}` });
      expect(retagged.releaseId).toBe(old.releaseId);
      expect(retagged.autoPromotion).toEqual({ outcome: 'skipped', reason: 'older-than-current' });

      expect((await storedService(svc.id))?.automationQueue).toBeUndefined();
      expect((await history(svc.id)).map((r) => r.rolloutId)).toEqual([plan.rolloutId]);
      expect((await view(svc.id)).plan.rolloutId).toBe(plan.rolloutId);
    });

    it('when the current rollout is in progress (it never queues), and after it settles', async () => {
      const svc = await createService();
      const old = await push(svc, { tag: 'old', seed: `old-${svc.id}` });
      const { plan } = await firstPromotion(svc, { tag: 'v1' });

      const older = await push(svc, { tag: 'late', observedAt: old.observedAt - 60 * SECOND });
      expect(older.autoPromotion).toEqual({ outcome: 'skipped', reason: 'older-than-current' });
      const retagged = await push(svc, { tag: 'retagged', seed: `old-${svc.id}` });
      expect(retagged.autoPromotion).toEqual({ outcome: 'skipped', reason: 'older-than-current' });
      expect((await storedService(svc.id))?.automationQueue).toBeUndefined();
      expect((await view(svc.id)).lifecycle.queuedPromotion).toBeUndefined();

      // Settled and closed (no follow-up left): still the one rollout.
      await settleAndClose(svc.id, plan);
      expect((await history(svc.id)).map((r) => [r.rolloutId, r.outcome])).toEqual([[plan.rolloutId, 'succeeded']]);
    });
  });

  describe('tag filter', () => {
    /**
     * Pushes each tag in turn (a new, newer digest each) on a settled rollout and expects the
     * answer; a promoted push's rollout is then settled before the next. Returns the releases promoted.
     */
    async function walk (svc: FixtureService, steps: Array<[tag: string, expected: AutoPromotion]>): Promise<string[]> {
      const promoted: string[] = [];
      for (const [tag, expected] of steps) {
        const pushed = await push(svc, { tag });
        expect(pushed.autoPromotion, tag).toMatchObject(expected);
        if (pushed.autoPromotion?.outcome === 'promoted') {
          promoted.push(pushed.releaseId);
          const plan = await currentPlan(svc.id);
          expect(plan).toMatchObject({ mode: 'automatic', releaseId: pushed.releaseId });
          await settleAndClose(svc.id, plan);
        }
      }
      return promoted;
    }

    const filtered = (reason: string): AutoPromotion => ({ outcome: 'skipped', reason: `tag-filtered: ${reason}` });
    const promotedOutcome: AutoPromotion = { outcome: 'promoted' };

    /** The releases of the history's automatic rollouts, oldest first. */
    const automatic = async (serviceId: string) => (await history(serviceId)).filter((r) => r.mode === 'automatic').map((r) => r.releaseId).reverse();

    it('a tag pattern only: `*` any run, `?` one character, the rest literal, anchored at both ends', async () => {
      const pattern = 'release-?.*';
      const svc = await createService({ policy: { automaticPromotion: { tagPattern: pattern } } });
      const { plan } = await firstPromotion(svc, { tag: 'anything' });
      await settleAndClose(svc.id, plan);
      const promoted = await walk(svc, [
        ['release-1.0', promotedOutcome],
        ['release-10.0', filtered(`tag 'release-10.0' does not match the pattern '${pattern}'`)],
        ['release-2x0', filtered(`tag 'release-2x0' does not match the pattern '${pattern}'`)],
        ['xrelease-3.0', filtered(`tag 'xrelease-3.0' does not match the pattern '${pattern}'`)],
        ['release-4.', promotedOutcome],
      ]);
      expect(await automatic(svc.id)).toEqual(promoted);
      expect(promoted).toHaveLength(2);
    });

    it('a semver range only: tags that are semantic versions in it (a leading v allowed, prereleases out)', async () => {
      const range = '^1.4.0';
      const svc = await createService({ policy: { automaticPromotion: { semverRange: range } } });
      const { plan } = await firstPromotion(svc, { tag: '1.4.0' });
      await settleAndClose(svc.id, plan);
      const promoted = await walk(svc, [
        ['v1.5.2', promotedOutcome],
        ['1.4.0-beta.1', filtered(`tag '1.4.0-beta.1' is outside the semver range '${range}'`)],
        ['2.0.0', filtered(`tag '2.0.0' is outside the semver range '${range}'`)],
        ['latest', filtered(`tag 'latest' is not a semantic version (the range '${range}' is set)`)],
        ['1.6.0', promotedOutcome],
      ]);
      expect(await automatic(svc.id)).toEqual(promoted);
      expect(promoted).toHaveLength(2);
    });

    it('both: a tag must match the pattern and be a version in the range; a filtered push never queues either', async () => {
      const svc = await createService({ policy: { automaticPromotion: { tagPattern: 'v*', semverRange: '>=2 <3' } } });
      const { plan } = await firstPromotion(svc, { tag: 'v2.0.0' });
      // In progress: a filtered tag is refused outright, it does not wait.
      const during = await push(svc, { tag: 'v3.0.0' });
      expect(during.autoPromotion).toEqual(filtered('tag \'v3.0.0\' is outside the semver range \'>=2 <3\''));
      expect((await storedService(svc.id))?.automationQueue).toBeUndefined();
      await settleAndClose(svc.id, plan);
      const promoted = await walk(svc, [
        ['2.1.0', filtered('tag \'2.1.0\' does not match the pattern \'v*\'')],
        ['v3.1.0', filtered('tag \'v3.1.0\' is outside the semver range \'>=2 <3\'')],
        ['vNext', filtered('tag \'vNext\' is not a semantic version (the range \'>=2 <3\' is set)')],
        ['v2.2.0', promotedOutcome],
      ]);
      expect(await automatic(svc.id)).toEqual(promoted);
      expect(promoted).toHaveLength(1);
    });

    it('a bad semverRange is validation-failed naming the field, over REST and TypedRequest, and nothing is written', async () => {
      const badPolicy = { stabilityWindowSeconds: 0, automaticPromotion: { tagPattern: 'v*', semverRange: '>=>1 nonsense' } };
      const restField = '/body/rolloutPolicy/automaticPromotion/semverRange';
      const typedField = '/request/serviceData/rolloutPolicy/automaticPromotion/semverRange';
      const fieldsOf = (problems: Array<{ field: string }>) => problems.map((p) => p.field);
      const byName = async (name: string) =>
        (await t.app.inject({ method: 'GET', url: `/v1/services?name=${encodeURIComponent(name)}`, headers: bearer(admin) })).json().services;

      // Create: REST and TypedRequest.
      const restData = serviceData({ rolloutPolicy: badPolicy });
      const created = await t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload: restData });
      expect(created.statusCode, created.body).toBe(400);
      expect(created.json().code).toBe('validation-failed');
      expect(fieldsOf(created.json().problems)).toEqual([restField]);
      expect(await byName(restData['name'] as string)).toEqual([]);
      const typedData = serviceData({ rolloutPolicy: badPolicy });
      const typedCreate = await callTypedRequest(t.app, 'createService', { identity: identity(admin), serviceData: typedData });
      expect(typedCreate.statusCode).toBe(200);
      expect(typedCreate.json().error?.data?.code, typedCreate.body).toBe('validation-failed');
      expect(fieldsOf(typedCreate.json().error.data.problems)).toEqual([typedField]);
      expect(await byName(typedData['name'] as string)).toEqual([]);

      // Update: REST and TypedRequest; the stored service keeps its policy.
      const goodPolicy = { stabilityWindowSeconds: 0, automaticPromotion: { semverRange: '^2.0.0' } };
      const data = serviceData({ rolloutPolicy: goodPolicy });
      const svc = await t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload: data });
      expect(svc.statusCode, svc.body).toBe(201);
      const id = svc.json().service.id as string;
      const stored = async () => (await t.app.inject({ method: 'GET', url: `/v1/services/${id}`, headers: bearer(admin) })).json().service.data;
      const put = await t.app.inject({ method: 'PUT', url: `/v1/services/${id}`, headers: bearer(admin), payload: { ...data, rolloutPolicy: badPolicy } });
      expect(put.statusCode, put.body).toBe(400);
      expect(put.json().code).toBe('validation-failed');
      expect(fieldsOf(put.json().problems)).toEqual([restField]);
      const typedUpdate = await callTypedRequest(t.app, 'updateService', {
        identity: identity(admin), serviceId: id, serviceData: { ...data, rolloutPolicy: badPolicy },
      });
      expect(typedUpdate.json().error?.data?.code, typedUpdate.body).toBe('validation-failed');
      expect(fieldsOf(typedUpdate.json().error.data.problems)).toEqual([typedField]);
      expect((await stored()).rolloutPolicy).toEqual(goodPolicy);

      // The same request with a valid range is accepted (the refusal was the range's).
      const fixed = { ...data, rolloutPolicy: { ...badPolicy, automaticPromotion: { tagPattern: 'v*', semverRange: '>=1' } } };
      const ok = await t.app.inject({ method: 'PUT', url: `/v1/services/${id}`, headers: bearer(admin), payload: fixed });
      expect(ok.statusCode, ok.body).toBe(200);
      expect((await stored()).rolloutPolicy).toEqual(fixed.rolloutPolicy);
    });
  });

  it('a rollout that settles by its progress deadline promotes the waiting push too', async () => {
    const deadlineSeconds = 30;
    const svc = await createService({ policy: { progressDeadlineSeconds: deadlineSeconds } });
    const { release: first, plan } = await firstPromotion(svc, { tag: 'v1' });
    const startedAt = plan.createdAt;
    // The newer of two pushes waits; the other is answered that a newer one waits already.
    const older = observed + SECOND;
    const newer = await push(svc, { tag: 'v3', observedAt: observed + 2 * SECOND });
    const stale = await push(svc, { tag: 'v2', observedAt: older });
    observed += 2 * SECOND;
    expect(newer.autoPromotion).toMatchObject({ outcome: 'queued' });
    expect(stale.autoPromotion).toEqual({ outcome: 'skipped', reason: 'newer-release-waiting' });

    // A millisecond before the deadline nothing happens, even after a whole sweep.
    clock = startedAt + deadlineSeconds * SECOND - 1;
    await fullSweep();
    expect((await history(svc.id)).map((r) => [r.rolloutId, r.outcome])).toEqual([[plan.rolloutId, 'in-progress']]);
    expect((await view(svc.id)).lifecycle.queuedPromotion).toMatchObject({ releaseId: newer.releaseId });

    // Past the deadline: the sweeper fails the rollout, which settles it, and promotes the waiting push.
    clock = startedAt + deadlineSeconds * SECOND;
    const decidedAt = clock;
    await promotedAfter(svc.id, plan.rolloutId);
    const rollouts = await history(svc.id);
    expect(rollouts.map((r) => [r.generation, r.mode, r.releaseId])).toEqual([[2, 'automatic', newer.releaseId], [1, 'promotion', first.releaseId]]);
    expect(rollouts[1]).toMatchObject({
      outcome: 'failed', failedBy: 'deadline', failureReason: 'required-replica-missing', failedAt: decidedAt, endedAt: decidedAt,
    });
    expect(rollouts[0]).toMatchObject({ trigger: { kind: 'deferred-promotion', afterRolloutId: plan.rolloutId }, createdAt: decidedAt });
    const promoted = await view(svc.id);
    expect(promoted.plan).toMatchObject({ rolloutId: rollouts[0]?.rolloutId, releaseId: newer.releaseId });
    expect(promoted.lifecycle.queuedPromotion).toBeUndefined();
    expect((await storedService(svc.id))?.automationQueue).toBeUndefined();
    await settleAndClose(svc.id, promoted.plan);
    expect(await history(svc.id)).toHaveLength(2);
  });
});
