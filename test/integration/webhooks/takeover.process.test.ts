import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DomainEvent } from '../../../src/domain/events.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { Database } from '../../../src/store/mongo.js';
import { bearer, createFixtureService, httpCaller } from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { eventually, sleep } from '../../support/wait.js';
import { startReceiver, webhookFleetEnv, type Receiver } from '../../support/webhookReceiver.js';

/**
 * Webhook delivery across server processes (docs/webhooks.md "Delivery guarantees"): two real server
 * processes on one database; the one holding the subscription's lease is SIGKILLed while it delivers;
 * the other takes the lease over and goes on from the cursor. Every event reaches the receiver, in the
 * log's order, and every duplicate is the same event (same webhook-id, same body).
 */
const EVENTS = 80;

describe('webhook delivery: the delivering process is killed, another takes over', () => {
  let fleet: Fleet;
  let receiver: Receiver;
  let database: Database;
  beforeAll(async () => {
    fleet = await startFleet({
      processes: 2,
      env: { ...webhookFleetEnv },
    });
    // Slow enough that the kill lands in the middle of the backlog.
    receiver = await startReceiver(() => ({ status: 200, delayMs: 15 }));
    database = new Database({ uri: inject('mongoUri'), dbName: fleet.dbName, timeoutMs: 5_000 });
  }, 180_000);
  afterAll(async () => {
    await receiver?.close();
    await database?.close();
    await fleet?.close();
  });

  it('nothing is lost, the order per service is the log\'s, duplicates carry the same webhook-id and body', async () => {
    const [first] = fleet.servers;
    if (!first) throw new Error('no server');
    const app = httpCaller(first.url);
    const admin = await fleet.token('admin');
    const svc = await createFixtureService(app, admin, { withPlacement: false });
    const payload = { url: receiver.url, services: { ids: [svc.id] } };
    const created = await app.inject({ method: 'POST', url: '/v1/webhooks/subscriptions', headers: bearer(admin), payload });
    expect(created.statusCode, created.body).toBe(201);
    const subscriptionId = created.json().subscription.id as string;

    const log = new EventLogStore(database);
    for (let i = 1; i <= EVENTS; i++) {
      const data = { rolloutId: `r${i}`, generation: i, by: { subject: 'test' }, reason: `event ${i}` };
      const event: DomainEvent = { key: `k${i}`, type: 'automation.held', time: Date.now(), data };
      await log.record(svc.id, event);
    }
    await log.relay(svc.id);

    await eventually('delivery started', async () => { expect(receiver.received.length).toBeGreaterThanOrEqual(10); }, 200, 25);
    const subs = (await fleet.db()).collection('webhookSubscriptions');
    const holder = String((await subs.findOne({ _id: subscriptionId as never }))?.['leaseOwner']);
    const victim = fleet.servers.find((s) => holder.startsWith(`${s.pid}:`));
    expect(victim, `lease holder ${holder}`).toBeDefined();
    await victim?.kill('SIGKILL');
    const receivedAtKill = receiver.received.length;
    expect(receivedAtKill).toBeLessThan(EVENTS);

    await eventually('every event delivered', async () => {
      expect(new Set(receiver.received.map((r) => r.id)).size).toBe(EVENTS);
    }, 120, 250);
    const survivor = fleet.servers.find((s) => s !== victim);
    const after = String((await subs.findOne({ _id: subscriptionId as never }))?.['leaseOwner']);
    expect(after.startsWith(`${survivor?.pid}:`), `lease now held by ${after}`).toBe(true);

    // The log's order: the first delivery of each event comes in seq order.
    const firsts: string[] = [];
    for (const r of receiver.received) if (!firsts.includes(r.id)) firsts.push(r.id);
    expect(firsts).toEqual(Array.from({ length: EVENTS }, (_, i) => `${svc.id}:${i + 1}`));
    // A duplicate is the same event: same webhook-id and the same body (only the signature's timestamp differs).
    const bodies = new Map<string, string>();
    for (const r of receiver.received) {
      const seen = bodies.get(r.id);
      if (seen !== undefined) expect(r.body).toBe(seen);
      bodies.set(r.id, r.body);
    }
    const requests = receiver.received.length;
    console.log(`webhook takeover: ${requests} requests for ${EVENTS} events (${requests - EVENTS} duplicates), killed at ${receivedAtKill}`);
  }, 120_000);

  it('3 processes, 10 SIGKILLs at random during delivery of 3 services: every event at least once, in each service\'s order', async () => {
    while (fleet.servers.length < 3) await fleet.add();
    for (const server of fleet.servers) if (!server.running) await server.restart();
    const storm = await startReceiver(() => ({ status: 200, delayMs: 5 }));
    try {
      const admin = await fleet.token('admin');
      const app = httpCaller((fleet.servers[0] as { url: string }).url);
      const services = [];
      for (let i = 0; i < 3; i++) services.push((await createFixtureService(app, admin, { withPlacement: false })).id);
      const payload = { url: storm.url, services: { ids: services } };
      const created = await app.inject({ method: 'POST', url: '/v1/webhooks/subscriptions', headers: bearer(admin), payload });
      expect(created.statusCode, created.body).toBe(201);
      const log = new EventLogStore(database);
      const PER_SERVICE = 60;
      let kills = 0;
      const emitter = (async () => {
        for (let n = 1; n <= PER_SERVICE; n++) {
          for (const id of services) {
            await log.record(id, { key: `s${n}`, type: 'rollout.status-changed', time: Date.now(), data: { status: 'in-progress', statusRevision: n } });
            await log.relay(id);
          }
          if (n % 10 === 0) await sleep(100);
        }
      })();
      while (kills < 10) {
        await sleep(300 + Math.floor(Math.random() * 400));
        const victim = fleet.servers[Math.floor(Math.random() * fleet.servers.length)];
        if (!victim?.running) continue;
        await victim.kill('SIGKILL');
        kills++;
        await victim.restart();
      }
      await emitter;
      const expected = services.flatMap((id) => Array.from({ length: PER_SERVICE }, (_, i) => `${id}:${i + 1}`));
      await eventually('every event delivered', async () => {
        expect(new Set(storm.received.map((r) => r.id)).size).toBe(expected.length);
      }, 240, 250);
      for (const id of services) {
        const firsts: string[] = [];
        for (const r of storm.received) if (r.id.startsWith(`${id}:`) && !firsts.includes(r.id)) firsts.push(r.id);
        expect(firsts, `the order of ${id}`).toEqual(Array.from({ length: PER_SERVICE }, (_, i) => `${id}:${i + 1}`));
      }
      const bodies = new Map<string, string>();
      for (const r of storm.received) {
        const seen = bodies.get(r.id);
        if (seen !== undefined) expect(r.body, r.id).toBe(seen);
        bodies.set(r.id, r.body);
      }
      const requests = storm.received.length;
      console.log(`webhook storm: ${kills} SIGKILLs, ${requests} requests for ${expected.length} events (${requests - expected.length} duplicates)`);
    } finally {
      await storm.close();
    }
  }, 240_000);
});
