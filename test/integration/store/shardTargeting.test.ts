/**
 * Issue 24 item 5: every query the store sends to a sharded collection (src/store/shardPlan.ts) names
 * its shard key with an equality or `$in` — so a router sends it to the shards that hold the documents —
 * unless it is a documented scatter-gather on a cold path (`scatterGathers`). On top, what MongoDB
 * refuses on a sharded collection outright: an upsert, or an update/delete of one document, whose
 * filter names neither the shard key nor `_id`; and an inserted document without the shard key.
 *
 * The hot paths are driven through the HTTP app (cluster registration, service creation, a push, a
 * promotion, reports — first, steady, changing counts —, the rollout read, a second promotion that
 * replaces the first), and the commands are read on the wire (test/support/wireTap.ts). The steady
 * reports and the rollout read are THE hot path: there not even a documented scatter-gather may appear.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Document } from 'mongodb';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { scatterGathers, shardPlan, type ShardKey } from '../../../src/store/shardPlan.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';
import { queriesOf, startWireTap, type TappedCommand, type WireTap } from '../../support/wireTap.js';

const shardKeyOf = (collection: string): ShardKey | undefined => {
  const key = shardPlan[collection]?.shardKey;
  return key === undefined || key === 'unsharded' ? undefined : key;
};

/** An equality (a literal, or `$eq`) or an `$in` of literals: what a router targets by. */
const targets = (value: unknown): boolean => {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Date) return true;
  const ops = Object.keys(value as Document);
  if (!ops.some((op) => op.startsWith('$'))) return true;
  return ops.length === 1 && (ops[0] === '$eq' || (ops[0] === '$in' && Array.isArray((value as Document)['$in'])));
};

const targeted = (key: ShardKey, filter: Document): boolean => Object.keys(key).every((field) => field in filter && targets(filter[field]));

interface Write { command: string, collection: string, filter: Document, upsert: boolean, single: boolean }

/** The update, delete and findAndModify statements, each with whether it upserts and whether it is of one document. */
function writesOf (commands: readonly TappedCommand[]): Write[] {
  return commands.flatMap(({ name, collection, body }): Write[] => {
    switch (name) {
      case 'update': return (body['updates'] as Document[]).map((u) =>
        ({ command: name, collection, filter: u['q'] as Document, upsert: u['upsert'] === true, single: u['multi'] !== true }));
      case 'delete': return (body['deletes'] as Document[]).map((d) =>
        ({ command: name, collection, filter: d['q'] as Document, upsert: false, single: d['limit'] === 1 }));
      case 'findAndModify': return [{ command: name, collection, filter: body['query'] as Document, upsert: body['upsert'] === true, single: true }];
      default: return [];
    }
  });
}

const show = (q: { command: string, collection: string, filter: Document }): string => `${q.command} ${q.collection} ${JSON.stringify(q.filter)}`;

/** What a sharded cluster would refuse or scatter in these commands; `hot`: no documented scatter-gather allowed either. */
function violations (commands: readonly TappedCommand[], hot: boolean): string[] {
  const found: string[] = [];
  for (const q of queriesOf(commands)) {
    const key = shardKeyOf(q.collection);
    if (!key || targeted(key, q.filter)) continue;
    const fields = Object.keys(q.filter).sort();
    const documented = scatterGathers.some((s) => s.collection === q.collection && s.command === q.command && s.filter.join() === fields.join());
    if (hot || !documented) found.push(`${hot && documented ? 'scatter-gather on the hot path' : 'untargeted, undocumented'}: ${show(q)}`);
  }
  for (const w of writesOf(commands)) {
    const key = shardKeyOf(w.collection);
    if (!key || targeted(key, w.filter)) continue;
    if (w.upsert) found.push(`upsert without the shard key (refused when sharded): ${show(w)}`);
    else if (w.single && !('_id' in w.filter && targets(w.filter['_id']))) found.push(`single-document write without the shard key or _id: ${show(w)}`);
  }
  for (const { name, collection, body } of commands) {
    const key = shardKeyOf(collection);
    if (name !== 'insert' || !key) continue;
    for (const doc of body['documents'] as Document[]) {
      if (!Object.keys(key).every((field) => field in doc)) found.push(`insert without the shard key: ${collection} ${JSON.stringify(Object.keys(doc))}`);
    }
  }
  return found;
}

describe('the store\'s queries on sharded collections name their shard key', () => {
  let tap: WireTap;
  let t: TestApp;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    tap = await startWireTap(inject('mongoUri'));
    t = await buildTestApp({ MONGODB_URI: tap.uri });
    admin = await t.token('admin');
    api = await t.token('api');
    tap.clear();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await tap?.close();
  });

  const post = async (clusterId: string, body: Record<string, unknown>): Promise<number> => {
    const token = await t.token('cluster', { clusterId, subject: `coreflow-${clusterId}` });
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token), payload: body });
    return res.statusCode;
  };

  it('registration, a push, promotions, reports and reads: targeted or documented; steady reports and the rollout read: targeted only', async () => {
    await registerCluster(t.app, admin, 'sh-a', ['sh-a1', 'sh-a2']);
    await registerCluster(t.app, admin, 'sh-b', ['sh-b1', 'sh-b2']);
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['sh-a', 'sh-b'], replicasPerNode: 1 });
    const pushed = await pushRelease(t.app, api, svc);
    const promoted = await promote(t.app, api, svc.id, pushed.releaseId, { generation: 0 });
    expect(promoted.statusCode, promoted.body).toBe(200);
    const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const body = (nodeNames: string[], sequence: number, failed = false) => reportBody(plan, svc.id, {
      session: `s-${nodeNames[0]}`,
      sequence,
      nodeNames,
      deployments: fullReplicas(plan, svc.id, nodeNames).map((d) => (failed ? { ...d, status: 'failed' } : d)),
    });
    // First reports (claims), a count change (the summary is written); the promotion before them.
    expect([await post('sh-a', body(['sh-a1', 'sh-a2'], 1)), await post('sh-b', body(['sh-b1', 'sh-b2'], 1, true))]).toEqual([200, 200]);
    const warm = [...tap.commands];

    // THE hot path: steady reports of both reporters (nothing changes but their records) and the rollout read.
    tap.clear();
    const steady = [];
    for (let sequence = 2; sequence <= 4; sequence++) {
      steady.push(await post('sh-a', body(['sh-a1', 'sh-a2'], sequence)), await post('sh-b', body(['sh-b1', 'sh-b2'], sequence, true)));
    }
    expect(steady.every((s) => s === 200), JSON.stringify(steady)).toBe(true);
    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(api) });
    expect(read.statusCode, read.body).toBe(200);
    const hot = [...tap.commands];

    // A second push and promotion (the first rollout is replaced, its milestones copied), the deployments read.
    tap.clear();
    const second = await pushRelease(t.app, api, svc, { tag: 'v2', seed: 'second' });
    const replaced = await promote(t.app, api, svc.id, second.releaseId, { generation: 1, currentRolloutId: plan.rolloutId });
    expect(replaced.statusCode, replaced.body).toBe(200);
    const cold = [...warm, ...tap.commands];

    expect(hot.filter((c) => shardKeyOf(c.collection) !== undefined).length).toBeGreaterThan(0);
    expect(violations(hot, true)).toEqual([]);
    expect(violations(cold, false)).toEqual([]);
  });
});
