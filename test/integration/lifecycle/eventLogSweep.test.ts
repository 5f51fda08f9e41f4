/**
 * The lifecycle sweeper keeps the domain-event log (docs/architecture.md "Domain events"): a writer that
 * crashed between its write and its relay left events in the service document's outbox, and any
 * process's sweep relays them — exactly once, even with two sweepers at once; events older than
 * EVENTS_RETENTION_DAYS are removed by the sweep, newer ones kept. Two "processes" here are two stores
 * (their own connections) over the app's database, each with its own lifecycle control.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../../src/domain/events.js';
import { Metrics } from '../../../src/outbound/metrics.js';
import { rolloutIssuer } from '../../../src/operations/issueRollout.js';
import { rolloutLifecycle, type RolloutLifecycleControl } from '../../../src/operations/lifecycle.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { bearer } from '../../support/fixtures.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const quiet = { info: () => {}, warn: () => {} };

describe('the sweeper relays outboxes a crashed writer left and removes events past their retention', () => {
  let t: TestApp;
  let admin: string;
  const stores: Store[] = [];
  let clock = Date.now();

  /** A process's lifecycle control over its own store (the sweep the app runs every LIFECYCLE_SWEEP_INTERVAL_MS). */
  function process (): { control: RolloutLifecycleControl, store: Store } {
    const store = openStore({ uri: t.config.MONGODB_URI ?? '', dbName: t.config.MONGODB_DB, timeoutMs: 5_000 });
    stores.push(store);
    const repos = store.repositories;
    const telemetry = new Metrics();
    const now = (): number => clock;
    const rollouts = rolloutIssuer({ repos, now, leaseMs: 15_000, fault: () => {}, telemetry, log: quiet });
    const control = rolloutLifecycle({ repos, rollouts, telemetry, now, log: quiet, eventsRetentionMs: t.config.EVENTS_RETENTION_DAYS * DAY_MS });
    return { control, store };
  }

  async function createService (): Promise<string> {
    const created = await t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload: serviceData() });
    expect(created.statusCode, created.body).toBe(201);
    return created.json().service.id as string;
  }

  const event = (key: string, time: number): DomainEvent => ({ key, type: 'automation.held', time, data: { note: key } });

  async function outboxOf (serviceId: string): Promise<DomainEvent[]> {
    const doc = await t.db.collection<{ _id: string, outbox?: DomainEvent[] }>('services').findOne({ _id: serviceId });
    return doc?.outbox ?? [];
  }

  // The app's own sweeper waits up to 10 minutes before its first sweep: the sweeps here are the test's.
  beforeAll(async () => {
    t = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 600_000 }, { now: () => clock });
    admin = await t.token('admin');
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    await t.close();
  });

  it('an outbox left un-relayed is relayed by one sweep, each event once, with two sweepers at once', async () => {
    const a = process();
    const b = process();
    const serviceIds = [await createService(), await createService()];
    // The crashed writer: its events are in the service document (the store's own write path), never relayed.
    for (const serviceId of serviceIds) {
      for (const key of ['k1', 'k2', 'k3']) await a.store.repositories.events.record(serviceId, event(`crashed-${key}`, clock));
      expect((await outboxOf(serviceId)).length).toBe(3);
    }

    await Promise.all([a.control.sweep(), b.control.sweep()]);

    for (const serviceId of serviceIds) {
      expect(await outboxOf(serviceId), 'the outbox is empty after the sweep').toEqual([]);
      const logged = await t.db.collection('events').find({ serviceId, key: /^crashed-/ }).sort({ seq: 1 }).toArray();
      expect(logged.map((e) => e['key']), 'each event once, in order').toEqual(['crashed-k1', 'crashed-k2', 'crashed-k3']);
      const seqs = logged.map((e) => e['seq'] as number);
      expect(seqs, 'contiguous seqs').toEqual([seqs[0], (seqs[0] ?? 0) + 1, (seqs[0] ?? 0) + 2]);
      expect(logged.map((e) => e['_id'])).toEqual(seqs.map((seq) => `${serviceId}:${seq}`));
      const read = await a.store.repositories.events.eventsAfter(serviceId, 0, 100);
      expect(read.filter((e) => e.key.startsWith('crashed-')).map((e) => e.key)).toEqual(['crashed-k1', 'crashed-k2', 'crashed-k3']);
    }
  });

  it(`events older than EVENTS_RETENTION_DAYS (${30}) are removed by the sweep, newer ones kept`, async () => {
    expect(t.config.EVENTS_RETENTION_DAYS).toBe(30);
    const { control, store } = process();
    const serviceId = await createService();
    const events = store.repositories.events;
    await events.record(serviceId, event('old', clock - 31 * DAY_MS));
    await events.record(serviceId, event('recent', clock - 29 * DAY_MS));
    await events.record(serviceId, event('now', clock));
    await events.relay(serviceId);
    const keys = async (): Promise<unknown[]> => (await t.db.collection('events').find({ serviceId }).sort({ seq: 1 }).toArray()).map((e) => e['key']);
    expect(await keys()).toEqual(expect.arrayContaining(['old', 'recent', 'now']));

    await control.sweep();
    const kept = await keys();
    expect(kept).not.toContain('old');
    expect(kept).toEqual(expect.arrayContaining(['recent', 'now']));

    // Two days later, 'recent' (now 31 days old) goes too.
    clock += 2 * DAY_MS;
    await control.sweep();
    const later = await keys();
    expect(later).not.toContain('recent');
    expect(later).toContain('now');
  });
});
