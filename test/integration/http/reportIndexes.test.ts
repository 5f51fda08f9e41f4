/**
 * Every query of the report path on the collections that grow with the fleet (`reports`,
 * `reportClaims`, `nodes`) is served by an index on every MongoDB-compatible server — including
 * the local development database, which uses an index only for equality or `$in` on exactly the
 * fields of a unique index (`_id` included) and scans the whole collection for anything else
 * (docs/operations.md "every query is served by an index"; issue: "the cost of a report does not depend on
 * the rest of the fleet"). A compare-and-swap filtered on `{ _id, version }`, or a claim upserted
 * on `{ _id, reporterId }`, scans every record / claim of every rollout there: the cost of one
 * report then grows with all the reports and claims in the database.
 *
 * The check is made on the wire: the app talks to the database through a proxy that decodes every
 * command it sends (test/support/wireTap.ts). The service documents (`services`, one per service,
 * not per node or report) are outside this rule: their guarded updates name `_id` and the guard.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Document } from 'mongodb';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { collections, indexPlan } from '../../../src/store/indexPlan.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';
import { queriesOf, startWireTap, type TappedQuery, type WireTap } from '../../support/wireTap.js';

const FLEET_COLLECTIONS = [collections.reports, collections.reportClaims, collections.nodes];

/** The field sets the development database serves from an index, per collection: `_id` and every unique index. */
const uniqueKeys = (collection: string): string[][] => [
  ['_id'],
  ...indexPlan.filter((i) => i.collection === collection && i.unique === true).map((i) => Object.keys(i.key)),
];

const isLiteral = (value: unknown): boolean =>
  value === null || typeof value !== 'object' || Array.isArray(value) || !Object.keys(value as Document).some((k) => k.startsWith('$'));

/** Served by an index on the development database: exactly the fields of a unique index, each an equality or `$in`. */
function servedByIndex ({ collection, filter }: TappedQuery): boolean {
  const fields = Object.keys(filter);
  if (fields.some((f) => f.startsWith('$'))) return false;
  const values = fields.map((f) => filter[f] as unknown);
  const simple = values.every((v) => isLiteral(v) || (Object.keys(v as Document).length === 1 && Array.isArray((v as Document)['$in'])));
  return simple && uniqueKeys(collection).some((key) => key.length === fields.length && key.every((k) => fields.includes(k)));
}

describe('the report path on the development database\'s indexes', () => {
  let tap: WireTap;
  let t: TestApp;
  let admin: string;
  let api: string;

  beforeAll(async () => {
    tap = await startWireTap(inject('mongoUri'));
    t = await buildTestApp({ MONGODB_URI: tap.uri });
    admin = await t.token('admin');
    api = await t.token('api');
    await registerCluster(t.app, admin, 'ix-a', ['ix-a1', 'ix-a2']);
    await registerCluster(t.app, admin, 'ix-b', ['ix-b1', 'ix-b2']);
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

  it('first reports (claims), steady reports, replays, refusals, concurrent reports of one reporter and a count change: only indexed queries', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['ix-a', 'ix-b'], replicasPerNode: 1 });
    const pushed = await pushRelease(t.app, api, svc);
    const promoted = await promote(t.app, api, svc.id, pushed.releaseId, { generation: 0 });
    expect(promoted.statusCode, promoted.body).toBe(200);
    const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const body = (nodeNames: string[], sequence: number, session = `s-${nodeNames[0]}`, failed = false) =>
      reportBody(plan, svc.id, {
        session, sequence, nodeNames, deployments: fullReplicas(plan, svc.id, nodeNames).map((d) => (failed ? { ...d, status: 'failed' } : d)),
      });
    tap.clear();

    const statuses = [
      await post('ix-a', body(['ix-a1', 'ix-a2'], 1)), // first report: claims
      await post('ix-a', body(['ix-a1', 'ix-a2'], 2)), // steady
      await post('ix-a', body(['ix-a1', 'ix-a2'], 2)), // replay
      await post('ix-a', body(['ix-a1', 'ix-a2'], 1)), // stale: refused
      await post('ix-b', body(['ix-b1', 'ix-b2'], 1)),
      await post('ix-b', body(['ix-a1'], 1, 's-foreign')), // another cluster's node: refused
      await post('ix-b', body(['ix-b1', 'ix-b2'], 2, 's-ix-b1', true)), // the counts change: the summary is written
      ...(await Promise.all([3, 4, 5].map((k) => post('ix-b', body(['ix-b1', 'ix-b2'], k))))), // one reporter, three in flight
    ];
    expect(statuses.slice(0, 7)).toEqual([200, 200, 200, 409, 200, 403, 200]);
    expect(statuses.slice(7).filter((s) => s === 200).length).toBeGreaterThan(0);

    const fleetQueries = queriesOf(tap.commands).filter((q) => FLEET_COLLECTIONS.includes(q.collection as never));
    expect(fleetQueries.length).toBeGreaterThan(0);
    const scans = fleetQueries.filter((q) => !servedByIndex(q)).map((q) => `${q.command} ${q.collection} ${JSON.stringify(q.filter)}`);
    expect(scans).toEqual([]);
  });

  it('a service without the immutable policy: its reporters\' records are written with indexed queries only', async () => {
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['ix-a'] });
    tap.clear();
    const deployment = (n: number) => ({ id: `task-${n}`, serviceId: svc.id, nodeName: 'ix-a1', status: 'running', deploymentLog: [] });
    const plain = (n: number) => ({ serviceId: svc.id, deployments: [deployment(n)], reporterNodeNames: ['ix-a1'], reportedAt: Date.now() });
    const statuses = [await post('ix-a', plain(1)), ...(await Promise.all([2, 3, 4].map((n) => post('ix-a', plain(n)))))];
    expect(statuses).toEqual([200, 200, 200, 200]);
    const fleetQueries = queriesOf(tap.commands).filter((q) => FLEET_COLLECTIONS.includes(q.collection as never));
    expect(fleetQueries.length).toBeGreaterThan(0);
    const scans = fleetQueries.filter((q) => !servedByIndex(q)).map((q) => `${q.command} ${q.collection} ${JSON.stringify(q.filter)}`);
    expect(scans).toEqual([]);
  });
});
