import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import type { LoggedEvent } from '../../../src/domain/events.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { Database } from '../../../src/store/mongo.js';
import { bearer, createFixtureService, fullRolloutHistory, httpCaller, pushEvent, registerCluster, type FixtureService } from '../../support/fixtures.js';
import { request, startFleet, type Fleet, type RequestOptions, type Response, type ServerProcess } from '../../support/fleet.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually, sleep } from '../../support/wait.js';
import { startReceiver, webhookFleetEnv, type Receiver, type Received } from '../../support/webhookReceiver.js';

/**
 * Issue 22's acceptance check for webhooks (docs/webhooks.md "Delivery guarantees"), with events made by
 * real behaviour: 3 server processes on one database; a scripted fleet (one cluster, two nodes, its
 * Coreflow reporting deployment snapshots) drives promotions of several services to success, to failure
 * (a failed replica, mismatched evidence) and so to automatic rollbacks (rolloutPolicy.autoRollback), all
 * through the processes' API. A subscription made before the load sends them to a slow real receiver.
 * Meanwhile 10 SIGKILLs, spread over the 3 processes, each fired the moment the receiver holds an attempt
 * open (so it lands in the middle of a delivery), each process restarted after its kill; every request
 * that got no answer is sent again to another process, as agents and CI do. At the end, with every
 * process up: every event of the log (of the subscribed types) reached the receiver at least once,
 * verified with the subscription's secret; a duplicate carries the same webhook-id and body; per
 * service, first arrivals are in the log's order; and the log holds what the script did.
 */
const SERVICES = 3;
const KILLS = 10;
const NODES = ['c1-n1', 'c1-n2'];
/** After each service's first, successful promotion, its promotions go round this script (at least once). */
const SCRIPT = ['succeed', 'fail', 'succeed', 'mismatch'] as const;
type Step = typeof SCRIPT[number];
/** Every type but the attestations': the delivery skips the log's attestation events (the cursor moves past them). */
const SUBSCRIBED = ['rollout.issued', 'rollout.status-changed', 'rollout.succeeded', 'rollout.failed', 'rollout.deadline-exceeded',
  'automation.held', 'automation.released', 'promotion.refused'];
const TYPE_PREFIX = 'dev.cloudly.release.';

/** Any process that is up (at random): where a client sends its next try. */
function anyRunning (fleet: Fleet): ServerProcess {
  const running = fleet.servers.filter((s) => s.running);
  const pool = running.length > 0 ? running : fleet.servers;
  return pool[Math.floor(Math.random() * pool.length)] as ServerProcess;
}

/**
 * Sends until a process answers for good: no answer (its process was killed), a 503, or an
 * Idempotency-Key still held by a killed request are tried again on another process.
 */
async function untilAnswered (fleet: Fleet, what: string, opts: RequestOptions): Promise<Response<any>> {
  for (let attempt = 0; attempt < 300; attempt++) {
    try {
      const res = await request<any>(anyRunning(fleet).url, { ...opts, timeoutMs: 15_000 });
      if (res.status !== 503 && res.json?.code !== 'idempotency-request-in-progress') return res;
    } catch {
      // The process went down under the request: another one gets it.
    }
    await sleep(100);
  }
  throw new Error(`${what}: no answer after 300 tries`);
}

/** One service's part of the fleet: its releases pushed as it goes, promoted, reported on by the cluster's Coreflow. */
class ServiceScript {
  readonly steps: Step[] = [];
  private sequence = 0;
  private tags = 0;
  constructor (private readonly fleet: Fleet, private readonly tokens: { api: string, cluster: string }, readonly svc: FixtureService) {}

  private async send (what: string, opts: RequestOptions): Promise<Response<any>> {
    return await untilAnswered(this.fleet, `${this.svc.id} ${what}`, opts);
  }

  /** Pushes a new release and promotes it (one Idempotency-Key for all its tries): the new plan. */
  private async promoteNew (generation: number): Promise<IImmutableImageDeploymentPlan> {
    const push = pushEvent(this.svc, { tag: `v${++this.tags}` });
    const pushed = await this.send('push', { path: '/v1/registry/push-events', token: this.tokens.api, body: push });
    expect([200, 201], pushed.text).toContain(pushed.status);
    const key = `fleet-storm-${this.svc.id}-${generation}`;
    const res = await this.send(`promote gen ${generation}`, {
      path: `/v1/services/${this.svc.id}/image-releases/${String(push['releaseId'])}/promote`,
      token: this.tokens.api,
      headers: { 'idempotency-key': key },
      body: { expectedRolloutGeneration: generation, enableImmutableImage: true, reason: `fleet storm ${generation + 1}` },
    });
    expect(res.status, res.text).toBe(200);
    return res.json.service.data.imageDeployment as IImmutableImageDeploymentPlan;
  }

  /** One snapshot of both nodes for the plan, as the step says (each try a new sequence: a new snapshot). */
  private async report (plan: IImmutableImageDeploymentPlan, step: Step): Promise<void> {
    const wrong = `sha256:${'0'.repeat(64)}`;
    const deployments = NODES.map((node) => verifiedReplica(plan, this.svc.id, node, 0,
      step === 'fail' ? { status: 'failed' } : step === 'mismatch' ? { evidence: { taskReportedDigest: wrong } } : {}));
    let res: Response<any> | undefined;
    for (let tries = 0; tries < 20 && res?.status !== 200; tries++) {
      const body = reportBody(plan, this.svc.id, { session: `coreflow-${this.svc.id}`, sequence: ++this.sequence, nodeNames: NODES, deployments });
      res = await this.send(`report ${step} of ${plan.rolloutId}`, { path: '/v1/deployment-snapshots', token: this.tokens.cluster, body });
      // A failure reported by a killed process's request may have rolled back already: the retry is stale then.
      if (step !== 'succeed' && res.status === 409 && res.json?.code === 'stale-rollout-report') return;
    }
    expect(res?.status, res?.text).toBe(200);
  }

  private async rollout (): Promise<{ plan?: IImmutableImageDeploymentPlan, lifecycle?: { succeededAt?: number } }> {
    const res = await this.send('read rollout', { path: `/v1/services/${this.svc.id}/rollout`, token: this.tokens.api });
    expect(res.status, res.text).toBe(200);
    return res.json;
  }

  /** Reports the plan verified and waits until it succeeded (from the report's process, or any sweeper). */
  private async succeed (plan: IImmutableImageDeploymentPlan): Promise<void> {
    await this.report(plan, 'succeed');
    await eventually(`${plan.rolloutId} succeeded`, async () => {
      const view = await this.rollout();
      expect(view.plan?.rolloutId).toBe(plan.rolloutId);
      expect(view.lifecycle?.succeededAt).toBeDefined();
    }, 200, 100);
  }

  /** Reports the plan failed (or mismatched) and waits for the automatic rollback it causes: the rollback's plan. */
  private async failAndRollBack (plan: IImmutableImageDeploymentPlan, step: Step): Promise<IImmutableImageDeploymentPlan> {
    await this.report(plan, step);
    let rollback: IImmutableImageDeploymentPlan | undefined;
    await eventually(`${plan.rolloutId} rolled back automatically`, async () => {
      rollback = (await this.rollout()).plan;
      expect(rollback).toMatchObject({ mode: 'rollback', rolloutGeneration: plan.rolloutGeneration + 1 });
    }, 200, 100);
    return rollback as IImmutableImageDeploymentPlan;
  }

  /** The first promotion succeeds (a verified release to return to); then the script, round after round, until `done()` and once through. */
  async run (done: () => boolean): Promise<void> {
    let plan = await this.promoteNew(0);
    await this.succeed(plan);
    for (let round = 0; round < SCRIPT.length || !done(); round++) {
      const step = SCRIPT[round % SCRIPT.length] as Step;
      plan = await this.promoteNew(plan.rolloutGeneration);
      if (step === 'succeed') {
        await this.succeed(plan);
      } else {
        plan = await this.failAndRollBack(plan, step);
        await this.succeed(plan);
      }
      this.steps.push(step);
      // A fleet's pace, not a flood: the kills' restarts share the machine's two cores with it.
      await sleep(400 + Math.random() * 400);
    }
  }
}

interface Kills { total: number, ofHolder: number, perProcess: number[], restartMs: number[] }

/**
 * KILLS SIGKILLs, each fired the moment the receiver gets a request (its answer held back: the attempt
 * is in flight), a random 0.2–1 s apart. The victim is one of the processes killed least so far (all
 * three get theirs), the one holding the subscription's lease when it is among them; never the last
 * one up. Each is restarted at once, in the background, as an orchestrator would.
 */
async function killDuringDeliveries (fleet: Fleet, subscriptionId: string, hook: { onArrival: (() => void) | undefined }): Promise<Kills> {
  const kills: Kills = { total: 0, ofHolder: 0, perProcess: fleet.servers.map(() => 0), restartMs: [] };
  const subscriptions = (await fleet.db()).collection('webhookSubscriptions');
  const restarts: Array<Promise<void>> = [];
  try {
    while (kills.total < KILLS) {
      await sleep(200 + Math.random() * 800);
      const least = Math.min(...kills.perProcess);
      let candidates: ServerProcess[] = [];
      await eventually('a process to kill, and another up', async () => {
        candidates = fleet.servers.filter((s) => s.running && kills.perProcess[s.index] === least);
        expect(candidates.length).toBeGreaterThan(0);
        expect(fleet.servers.filter((s) => s.running).length).toBeGreaterThanOrEqual(2);
      }, 200, 100);
      const owner = String((await subscriptions.findOne({ _id: subscriptionId as never }))?.['leaseOwner']);
      const holder = candidates.find((s) => owner.startsWith(`${s.pid}:`));
      const victim = holder ?? candidates[Math.floor(Math.random() * candidates.length)] as ServerProcess;
      await new Promise<void>((resolve) => { hook.onArrival = resolve; });
      await victim.kill('SIGKILL');
      kills.total++;
      kills.perProcess[victim.index] = (kills.perProcess[victim.index] ?? 0) + 1;
      if (holder) kills.ofHolder++;
      const down = Date.now();
      restarts.push(victim.restart().then(() => { kills.restartMs.push(Date.now() - down); }));
    }
  } finally {
    hook.onArrival = undefined;
    await Promise.all(restarts);
  }
  return kills;
}

describe('webhook delivery of a scripted fleet while every process is SIGKILLed at random', () => {
  let fleet: Fleet;
  let receiver: Receiver;
  let database: Database;
  const hook: { onArrival: (() => void) | undefined } = { onArrival: undefined };
  beforeAll(async () => {
    fleet = await startFleet({
      processes: 3,
      env: {
        ...webhookFleetEnv,
        IDEMPOTENCY_LEASE_MS: '1500',
        LIFECYCLE_SWEEP_INTERVAL_MS: '500',
      },
    });
    // A slow receiver (10–20 ms an answer): a kill fired on a request's arrival lands while that attempt is in flight.
    receiver = await startReceiver(() => {
      const arrived = hook.onArrival;
      hook.onArrival = undefined;
      arrived?.();
      return { status: 200, delayMs: 10 + Math.floor(Math.random() * 11) };
    });
    database = new Database({ uri: inject('mongoUri'), dbName: fleet.dbName, timeoutMs: 5_000 });
  }, 180_000);
  afterAll(async () => {
    await receiver?.close();
    await database?.close();
    await fleet?.close();
  });

  it('every logged event reaches the receiver, verified; duplicates are the same event; first arrivals in the log\'s order', async () => {
    const started = Date.now();
    const first = httpCaller((fleet.servers[0] as ServerProcess).url);
    const [admin, api, cluster] = await Promise.all([fleet.token('admin'), fleet.token('api'), fleet.token('cluster', { clusterId: 'c1' })]);
    await registerCluster(first, admin, 'c1', NODES);
    // The subscription first: every service created after it is delivered from its first event.
    const created = await first.inject({
      method: 'POST', url: '/v1/webhooks/subscriptions', headers: bearer(admin), payload: { url: receiver.url, types: SUBSCRIBED.map((t) => TYPE_PREFIX + t) },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { subscription, secret } = created.json() as { subscription: { id: string }, secret: string };
    const policy = { stabilityWindowSeconds: 0, autoRollback: { enabled: true } };
    const scripts: ServiceScript[] = [];
    for (let i = 0; i < SERVICES; i++) {
      const svc = await createFixtureService(first, admin, { clusterIds: ['c1'], replicasPerNode: 1, rolloutPolicy: policy });
      scripts.push(new ServiceScript(fleet, { api, cluster }, svc));
    }

    let killing = true;
    const load = Promise.all(scripts.map(async (s) => { await s.run(() => !killing); }));
    let kills: Kills;
    try {
      kills = await killDuringDeliveries(fleet, subscription.id, hook);
    } finally {
      killing = false;
    }
    await load;
    const killedAt = Date.now();

    // Quiet, every process up. The log of each service, complete (nothing left in an outbox, no gap), from the database.
    const log = new EventLogStore(database);
    const logs = new Map<string, LoggedEvent[]>();
    for (const { svc } of scripts) {
      await eventually(`the log of ${svc.id} complete`, async () => {
        const head = await log.head(svc.id);
        const events = await log.eventsAfter(svc.id, 0, (head ?? 0) + 10);
        const outbox = await (await fleet.db()).collection('services').findOne({ _id: svc.id as never }, { projection: { outbox: 1 } });
        expect(outbox?.['outbox'] ?? []).toEqual([]);
        expect(events.length).toBe(head);
        logs.set(svc.id, events);
      }, 100, 200);
    }
    const wanted = [...logs.values()].flat().filter((e) => SUBSCRIBED.includes(e.type));
    const wantedIds = new Set(wanted.map((e) => e.id));
    await eventually('every subscribed event of the log delivered', async () => {
      const delivered = new Set(receiver.received.map((r) => r.id));
      expect(wanted.filter((e) => !delivered.has(e.id)).map((e) => `${e.id} ${e.type}`)).toEqual([]);
    }, 240, 250);

    checkDeliveries(receiver.received, secret, wantedIds, logs);
    await checkScriptInLog(scripts, logs, httpCaller(anyRunning(fleet).url), api);

    const duplicates = receiver.received.length - new Set(receiver.received.map((r) => r.id)).size;
    expect(kills.perProcess.every((n) => n >= 3), `kills per process ${kills.perProcess.join('/')}`).toBe(true);
    // Kills of the delivering process, each while its attempt was held open: its events are sent again, with the same id.
    expect(kills.ofHolder).toBeGreaterThan(0);
    expect(duplicates).toBeGreaterThan(0);
    const logged = [...logs.values()].reduce((n, l) => n + l.length, 0);
    console.log(`webhook fleet storm: ${kills.total} SIGKILLs (${kills.perProcess.join('/')} per process, ${kills.ofHolder} of the delivering one); ` +
      `${scripts.map((s) => s.steps.length + 1).join('/')} promotions per service; ${logged} logged events, ${wanted.length} subscribed; ` +
      `${receiver.received.length} requests (${duplicates} duplicates); load ${Math.round((killedAt - started) / 1000)} s, ` +
      `total ${Math.round((Date.now() - started) / 1000)} s; restarts ${kills.restartMs.join(',')} ms`);
  }, 180_000);
});

/**
 * What the receiver got: each request verifies with the subscription's secret and is an event of the
 * log; a duplicate has the same body; per service, first arrivals come in the log's order.
 */
function checkDeliveries (received: Received[], secret: string, wantedIds: Set<string>, logs: Map<string, LoggedEvent[]>): void {
  const webhook = new Webhook(secret);
  const bodies = new Map<string, string>();
  const firsts = new Map<string, number[]>();
  for (const r of received) {
    const verified = webhook.verify(r.body, r.headers as Record<string, string>) as { id: string, data: { seq: number } };
    expect(verified.id).toBe(r.id);
    expect(wantedIds.has(r.id), `${r.id} is not a subscribed event of the log`).toBe(true);
    const seen = bodies.get(r.id);
    if (seen !== undefined) {
      expect(r.body, `the duplicate of ${r.id}`).toBe(seen);
      continue;
    }
    bodies.set(r.id, r.body);
    const serviceId = r.id.slice(0, r.id.lastIndexOf(':'));
    firsts.set(serviceId, [...(firsts.get(serviceId) ?? []), verified.data.seq]);
  }
  for (const [serviceId, events] of logs) {
    const inLogOrder = events.filter((e) => wantedIds.has(e.id)).map((e) => e.seq);
    expect(firsts.get(serviceId), `first arrivals of ${serviceId}`).toEqual(inLogOrder);
  }
}

/**
 * The log holds what the script did, so that a script that stops producing promotions, failures or
 * automatic rollbacks fails here: per service, one `rollout.issued` per rollout of its history, the
 * explicit promotions, the failures (failed and mismatched), the automatic rollbacks with their
 * automation hold, the hold lifted by the next promotion, and the successes (and rollbacks').
 */
async function checkScriptInLog (scripts: ServiceScript[], logs: Map<string, LoggedEvent[]>, app: ReturnType<typeof httpCaller>, api: string): Promise<void> {
  for (const script of scripts) {
    const events = logs.get(script.svc.id) ?? [];
    const count = (type: string, match: (data: Record<string, unknown>) => boolean = () => true): number =>
      events.filter((e) => e.type === type && match(e.data)).length;
    const fails = script.steps.filter((s) => s !== 'succeed').length;
    expect(fails).toBeGreaterThanOrEqual(2);
    const history = await fullRolloutHistory(app, api, script.svc.id);
    const issued = events.filter((e) => e.type === 'rollout.issued').map((e) => e.data['rolloutId']);
    expect(issued.sort(), `rollouts of ${script.svc.id}`).toEqual(history.map((h) => h.rolloutId).sort());
    expect(count('rollout.issued', (d) => d['trigger'] === 'request')).toBe(script.steps.length + 1);
    expect(count('rollout.issued', (d) => d['trigger'] === 'automatic-rollback')).toBe(fails);
    expect(count('rollout.failed', (d) => d['status'] === 'failed')).toBe(script.steps.filter((s) => s === 'fail').length);
    expect(count('rollout.failed', (d) => d['status'] === 'mismatched')).toBe(script.steps.filter((s) => s === 'mismatch').length);
    expect(count('automation.held')).toBe(fails);
    // A promotion after a rollback lifts its hold: every hold but one the script ended on.
    expect(count('automation.released')).toBe(fails - (script.steps.at(-1) === 'succeed' ? 0 : 1));
    expect(count('rollout.succeeded', (d) => d['status'] === 'rolled-back')).toBe(fails);
    expect(count('rollout.succeeded', (d) => d['status'] === 'succeeded')).toBe(script.steps.length + 1 - fails);
  }
}
