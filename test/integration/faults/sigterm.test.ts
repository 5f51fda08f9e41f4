import { Agent } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { Database } from '../../../src/store/mongo.js';
import { serviceData } from '../../support/app.js';
import { startFleet, type Fleet, type ServerProcess } from '../../support/fleet.js';
import {
  bearer, createFixtureService, httpCaller, pushRelease, registerCluster, rolloutHistory, type FixtureService,
} from '../../support/fixtures.js';
import { eventually, sleep } from '../../support/wait.js';
import { startReceiver, webhookFleetEnv, type Receiver } from '../../support/webhookReceiver.js';
import { childPids, commandLine, openRequest, processExists, rawRequest, Tally, type HttpResult, type OpenRequest } from './helpers.js';

/**
 * docs/operations.md "SIGTERM drains in-flight requests, then exits", with a real server process
 * (`node dist/src/server.js`, what `npm start` runs) under load.
 *
 * What src/server.ts does on SIGTERM: log "shutting down", then `app.close()` — Fastify marks
 * itself closing (`return503OnClosing`: a request that arrives now is answered 503 and its
 * connection closed), runs preClose (ends SSE streams), closes the listening socket (new
 * connections are refused) and the idle keep-alive connections, waits for the requests in
 * flight, then its onClose hook closes the driver; then `database.stop()` stops the local
 * database child if this process started one (no MONGODB_URI), and the process exits 0.
 * A timer exits 1 after SHUTDOWN_TIMEOUT_MS, so exit code 0 IS "within SHUTDOWN_TIMEOUT_MS"
 * (no wall-clock assertion needed; the measured time is printed).
 *
 * Proven here:
 * - 50 promotions in flight when the signal arrives (headers routed, the last body byte held
 *   back until the server has logged the signal, so ALL their work happens during the drain)
 *   finish with their normal 200 answers, and each is in the history afterwards;
 * - 10 clients keep opening fresh connections throughout: every request ends (no hang); a
 *   request started after the server acknowledged the signal is refused (ECONNREFUSED: the
 *   listening socket closes before the server logs "shutting down"); one started before gets its
 *   normal answer, a 503, or — only when its connection had been accepted but no request byte
 *   had arrived yet (an idle connection, closed by design) — a reset;
 * - the process exits 0; every promotion answered 200 is in the history, applied;
 * - without MONGODB_URI the local database child (java) is stopped too, after the drain (a
 *   write in flight at the signal still succeeds and is on disk after a restart); with
 *   MONGODB_URI no child is started at all.
 */

const IN_FLIGHT = 50;
const LOOPERS = 10;
const SHUTDOWN_TIMEOUT_MS = 10_000;

/** Resolves when the server has logged "incoming request" for each path: it has the headers, the body is still held. */
async function routed (server: ServerProcess, paths: string[]): Promise<void> {
  const seen = (path: string) => server.logs.some((line) => line.includes('"msg":"incoming request"') && line.includes(`"url":"${path}"`));
  await eventually('the server logs "incoming request" for every held request', async () => paths.every(seen), 400, 25);
}

/** Resolves when the server process has logged that it received the signal. */
async function signalAcknowledged (server: ServerProcess): Promise<void> {
  await eventually('the server logs "shutting down"', async () => server.logs.some((line) => line.includes('shutting down')), 500, 10);
}

describe('SIGTERM under load: one server process with MONGODB_URI', () => {
  let fleet: Fleet;
  let admin: string;
  let api: string;
  let held: FixtureService[];
  let heldReleases: string[];
  let looped: FixtureService[];
  let loopedReleases: string[];

  beforeAll(async () => {
    fleet = await startFleet({ processes: 1, env: { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) } });
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    const caller = httpCaller(fleet.servers[0]!.url);
    await registerCluster(caller, admin, 'c1', ['n1', 'n2']);
    held = [];
    heldReleases = [];
    for (let i = 0; i <= IN_FLIGHT; i++) { // the last one for the keep-alive request
      const service = await createFixtureService(caller, admin);
      held.push(service);
      heldReleases.push((await pushRelease(caller, api, service, { tag: 'v1' })).releaseId);
    }
    looped = [];
    loopedReleases = [];
    for (let i = 0; i < LOOPERS; i++) {
      const service = await createFixtureService(caller, admin);
      looped.push(service);
      loopedReleases.push((await pushRelease(caller, api, service, { tag: 'v1' })).releaseId);
    }
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  it('drains 50 in-flight promotions with their normal answers, refuses what comes after, exits 0', async () => {
    const server = fleet.servers[0]!;
    const url = server.url;
    const pid = server.pid;
    // With MONGODB_URI the process starts no database child.
    expect(childPids(pid).map(commandLine).filter((cmd) => cmd.includes('java'))).toEqual([]);

    // 50 promotions whose last body byte is held back: routed, authenticated, waiting for the body.
    const inFlight: OpenRequest[] = held.slice(0, IN_FLIGHT).map((service, i) => {
      const body = JSON.stringify({ expectedRolloutGeneration: 0, enableImmutableImage: true });
      return openRequest(url, {
        path: `/v1/services/${service.id}/image-releases/${heldReleases[i]!}/promote`,
        headers: { ...bearer(api), 'idempotency-key': `held-${i}` },
        body,
        firstBytes: body.length - 1,
        timeoutMs: 30_000,
      });
    });
    // One more on a keep-alive connection (a pooled client): during the drain its answer must close
    // the connection, or the idle connection would hold the exit until keepAliveTimeout.
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    await rawRequest(url, { path: '/healthz', agent: keepAlive }); // the connection exists and is reused
    const pooledBody = JSON.stringify({ expectedRolloutGeneration: 0, enableImmutableImage: true });
    const pooled = openRequest(url, {
      path: `/v1/services/${held[IN_FLIGHT]!.id}/image-releases/${heldReleases[IN_FLIGHT]!}/promote`,
      headers: { ...bearer(api), 'idempotency-key': 'held-keep-alive' },
      body: pooledBody,
      firstBytes: pooledBody.length - 1,
      agent: keepAlive,
      timeoutMs: 30_000,
    });
    inFlight.push(pooled);
    await Promise.all(inFlight.map((r) => r.written));
    const heldPaths = held.map((service, i) => `/v1/services/${service.id}/image-releases/${heldReleases[i]!}/promote`);
    await routed(server, heldPaths);

    // Loopers: fresh connections, reads and promotions, each request labelled with when it started.
    const clock = { signalSentAt: Infinity, acknowledgedAt: Infinity, exitedAt: Infinity };
    const outcomes: Array<{ when: 'before-signal' | 'signal-in-transit' | 'after-ack' | 'after-exit', what: string, label: string }> = [];
    const acknowledgedPromotions: Array<{ service: number, rolloutId: string, generation: number }> = [];
    const stop = { value: false };
    const label = (result: HttpResult): string => {
      if (result.kind === 'error') return result.error;
      return `${result.answer.status}${result.answer.json?.code ? ` ${String(result.answer.json.code)}` : ''}`;
    };
    const loopers = looped.map(async (service, i) => {
      let generation = 0;
      for (let n = 0; !stop.value && n < 10_000; n++) {
        const startedAt = Date.now();
        const when = startedAt >= clock.exitedAt
          ? 'after-exit'
          : startedAt >= clock.acknowledgedAt ? 'after-ack' : startedAt >= clock.signalSentAt ? 'signal-in-transit' : 'before-signal';
        const promote = n % 2 === 1;
        const result = promote
          ? await rawRequest(url, {
            path: `/v1/services/${service.id}/image-releases/${loopedReleases[i]!}/promote`,
            headers: { ...bearer(api), 'idempotency-key': `loop-${i}-${n}` },
            body: JSON.stringify({ expectedRolloutGeneration: generation, enableImmutableImage: true }),
            timeoutMs: 30_000,
          })
          : await rawRequest(url, { path: `/v1/services/${service.id}`, headers: bearer(api), timeoutMs: 30_000 });
        outcomes.push({ when, what: promote ? 'promote' : 'read', label: label(result) });
        if (result.kind === 'answer' && result.answer.status === 200) {
          const plan = result.answer.json.service.data.imageDeployment;
          generation = plan?.rolloutGeneration ?? 0;
          if (promote) acknowledgedPromotions.push({ service: i, rolloutId: plan.rolloutId, generation: plan.rolloutGeneration });
        }
        if (when === 'after-exit') return; // one refused attempt after the exit is enough
        if (result.kind === 'error') await sleep(20);
      }
    });

    // The server has seen the held requests' headers (logged above): a request sent after them was answered.
    expect((await rawRequest(url, { path: '/healthz' })).kind).toBe('answer');
    await sleep(300); // loopers running

    clock.signalSentAt = Date.now();
    const exited = server.kill('SIGTERM');
    await signalAcknowledged(server);
    clock.acknowledgedAt = Date.now();
    for (const r of inFlight) r.sendRest();
    const answers = await Promise.all(inFlight.map(async (r) => await r.result));
    const code = await exited;
    clock.exitedAt = Date.now();
    // Let every looper make one attempt after the exit, then stop them.
    await eventually('every looper tried once after the exit', async () => outcomes.filter((o) => o.when === 'after-exit').length >= LOOPERS, 200, 25);
    stop.value = true;
    await Promise.all(loopers);

    const tally = new Tally();
    for (const o of outcomes) tally.add(`${o.when} ${o.what} ${o.label}`);
    const summary = `in flight: ${answers.map((a) => label(a)).join(',')}\nloopers: ${tally.toString()}\n${server.logs.slice(-30).join('\n')}`;

    expect(code, summary).toBe(0);
    const pooledAnswer = answers.pop()!;
    keepAlive.destroy();
    answers.forEach((a, i) => {
      expect(a.kind, summary).toBe('answer');
      if (a.kind !== 'answer') return;
      expect(a.answer.status, a.answer.text).toBe(200);
      expect(a.answer.json.service.data.imageDeployment).toMatchObject({ rolloutGeneration: 1, releaseId: heldReleases[i] });
    });
    // The keep-alive request got its normal answer, told to close the connection.
    expect(pooledAnswer.kind === 'answer' ? pooledAnswer.answer.status : pooledAnswer.error, summary).toBe(200);
    expect(pooledAnswer.kind === 'answer' ? pooledAnswer.answer.headers.connection : undefined).toBe('close');

    // After the acknowledgement: refused. The listening socket is closed before the server says
    // "shutting down", so a fresh connection is never accepted then (neither answered 503 nor
    // accepted and reset as an idle connection when the socket closes).
    for (const o of outcomes.filter((x) => x.when === 'after-ack' || x.when === 'after-exit')) {
      expect(['ECONNREFUSED'], summary).toContain(o.label);
    }
    expect(outcomes.filter((o) => o.when === 'after-exit').every((o) => o.label === 'ECONNREFUSED'), summary).toBe(true);
    // Before it: a normal answer, a 503, or a reset of a connection that had no request yet; never a hang (no TimeoutError).
    const normal = new Set(['200', '409 rollout-generation-conflict', '503', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE']);
    for (const o of outcomes.filter((x) => x.when === 'before-signal' || x.when === 'signal-in-transit')) {
      expect(normal, summary).toContain(o.label);
    }
    expect(outcomes.filter((o) => o.when === 'before-signal' && o.label === '200').length, summary).toBeGreaterThan(0);

    // Everything answered 200 happened, exactly once, and is applied: read back through a new process.
    await server.restart();
    const caller = httpCaller(server.url);
    for (const [i, answer] of [...answers, pooledAnswer].entries()) {
      const history = await rolloutHistory(caller, admin, held[i]!.id);
      expect(history).toHaveLength(1);
      const rolloutId = answer.kind === 'answer' ? answer.answer.json.service.data.imageDeployment.rolloutId : '';
      expect(history[0]).toMatchObject({ rolloutId, state: 'applied' });
    }
    for (let i = 0; i < LOOPERS; i++) {
      const history = await rolloutHistory(caller, admin, looped[i]!.id, { limit: 500 });
      const mine = acknowledgedPromotions.filter((p) => p.service === i);
      expect(new Set(history.map((r) => r.rolloutId))).toEqual(new Set(mine.map((p) => p.rolloutId)));
      expect(history.every((r) => r.state === 'applied')).toBe(true);
    }

    console.log(`[sigterm] in flight: ${IN_FLIGHT} + 1 keep-alive × 200 (the keep-alive one with Connection: close); ` +
      `signal → acknowledged ${clock.acknowledgedAt - clock.signalSentAt} ms, → exit 0 after ${clock.exitedAt - clock.signalSentAt} ms ` +
      `(SHUTDOWN_TIMEOUT_MS ${SHUTDOWN_TIMEOUT_MS}); loopers: ${tally.toString()}`);
  }, 120_000);
});

describe('SIGTERM without MONGODB_URI: the local database child is stopped too, after the drain', () => {
  let dataDir: string;
  let fleet: Fleet;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cloudly-sigterm-'));
    // An empty MONGODB_URI counts as unset: the process starts the local database (h2) under DATA_DIR.
    const env = { MONGODB_URI: '', DATA_DIR: dataDir, SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) };
    fleet = await startFleet({ processes: 1, env, startTimeoutMs: 90_000 });
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('drains a write in flight, stops the java child, exits 0; the write is on disk after a restart', async () => {
    const server = fleet.servers[0]!;
    expect(server.logs.join('\n')).toContain('database: local-h2');
    const javaChildren = childPids(server.pid).filter((pid) => commandLine(pid).includes('mongodev.MongoDevServer'));
    expect(javaChildren).toHaveLength(1);
    const java = javaChildren[0]!;

    const admin = await fleet.token('admin');
    const body = JSON.stringify(serviceData({ name: 'written-during-drain' }));
    const write = openRequest(server.url, { path: '/v1/services', headers: bearer(admin), body, firstBytes: body.length - 1, timeoutMs: 30_000 });
    await write.written;
    await routed(server, ['/v1/services']);

    const exited = server.kill('SIGTERM');
    await signalAcknowledged(server);
    expect(processExists(java)).toBe(true); // the database outlives the drain …
    write.sendRest();
    const result = await write.result;
    expect(result.kind === 'answer' ? result.answer.status : result.error, JSON.stringify(result)).toBe(201);
    expect(await exited).toBe(0);
    expect(processExists(java)).toBe(false); // … and is stopped before the exit

    await server.restart({ MONGODB_URI: '', DATA_DIR: dataDir });
    const id = result.kind === 'answer' ? String(result.answer.json.service.id) : '';
    const read = await httpCaller(server.url).inject({ method: 'GET', url: `/v1/services/${id}`, headers: bearer(admin) });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().service.data.name).toBe('written-during-drain');
    const java2 = childPids(server.pid).filter((pid) => commandLine(pid).includes('mongodev.MongoDevServer'));
    expect(java2).toHaveLength(1);
    expect(await server.kill('SIGTERM')).toBe(0);
    expect(java2.every((pid) => !processExists(pid))).toBe(true);
  }, 120_000);
});

describe('SIGTERM: no connection is accepted once the server says "shutting down"', () => {
  let fleet: Fleet;
  let receiver: Receiver;
  let database: Database;
  beforeAll(async () => {
    fleet = await startFleet({ processes: 1, env: { ...webhookFleetEnv, SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) } });
    // The receiver never answers: the delivery in flight holds the drain's first step (the webhook
    // sender's stop, a preClose hook) for its bounded wait, a window of about 2 s.
    receiver = await startReceiver(() => 'hang');
    database = new Database({ uri: inject('mongoUri'), dbName: fleet.dbName, timeoutMs: 5_000 });
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
    await database?.close();
    await fleet?.close();
  });

  it('a fresh connection while the drain waits on a slow webhook receiver is refused, not accepted and then reset or answered 503', async () => {
    const server = fleet.servers[0]!;
    const url = server.url;
    const caller = httpCaller(url);
    const admin = await fleet.token('admin');
    const service = await createFixtureService(caller, admin, { withPlacement: false });
    const created = await caller.inject({
      method: 'POST', url: '/v1/webhooks/subscriptions', headers: bearer(admin), payload: { url: receiver.url, services: { ids: [service.id] } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const log = new EventLogStore(database);
    const data = { rolloutId: 'r1', generation: 1, by: { subject: 'test' }, reason: 'held' };
    await log.record(service.id, { key: 'k1', type: 'automation.held', time: Date.now(), data });
    await log.relay(service.id);
    await eventually('the receiver holds a delivery', async () => { expect(receiver.received.length).toBeGreaterThan(0); }, 200, 25);

    const exited = server.kill('SIGTERM');
    await signalAcknowledged(server);
    const attempts: string[] = [];
    for (let i = 0; i < 5; i++) {
      const result = await rawRequest(url, { path: '/healthz', timeoutMs: 10_000 });
      attempts.push(result.kind === 'error' ? result.error : String(result.answer.status));
    }
    const code = await exited;
    const summary = `attempts: ${attempts.join(',')}\n${server.logs.slice(-20).join('\n')}`;
    expect(attempts, summary).toEqual(Array.from({ length: 5 }, () => 'ECONNREFUSED'));
    expect(code, summary).toBe(0);
  }, 120_000);
});
