import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABANDONED_CLAIM_AFTER_MS } from '../../../src/domain/clusters.js';
import type { ClusterRepository } from '../../../src/domain/ports/index.js';
import type { Role } from '../../../src/domain/principal.js';
import { clusterOperations } from '../../../src/operations/clusters.js';
import { ClusterStore, NODES_PER_OPERATION } from '../../../src/store/clusterStore.js';
import { buildTestApp, identity, typedRequest, type TestApp } from '../../support/app.js';
import { clockPast } from '../../support/wait.js';

/** A fresh name, so that tests sharing one database never collide. */
const fresh = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

describe('clusters: register, read, list', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await buildTestApp();
    admin = await t.token('admin');
  });
  afterAll(async () => { await t.close(); });

  const put = (clusterId: string, body: unknown, jwt = admin) =>
    t.app.inject({ method: 'PUT', url: `/v1/clusters/${encodeURIComponent(clusterId)}`, headers: { authorization: `Bearer ${jwt}` }, payload: body as object });
  const get = (clusterId: string, jwt = admin) =>
    t.app.inject({ method: 'GET', url: `/v1/clusters/${encodeURIComponent(clusterId)}`, headers: { authorization: `Bearer ${jwt}` } });
  const tr = (method: string, request: Record<string, unknown>, jwt = admin) =>
    t.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest(method, { identity: identity(jwt), ...request }) });
  const nodes = () => t.db.collection('nodes');
  const clusters = () => t.db.collection('clusters');
  const ownerOf = async (nodeName: string) => (await nodes().findOne({ _id: nodeName as never }))?.['clusterId'];
  const counts = async () => ({ clusters: await clusters().countDocuments(), nodes: await nodes().countDocuments() });

  it('registers over REST and reads back over REST and TypedRequest, node names sorted', async () => {
    const id = fresh('c');
    const [n1, n2, n3] = [fresh('zeta'), fresh('alpha'), fresh('mid')];
    const res = await put(id, { name: 'Frankfurt 1', nodeNames: [n1, n2, n3] });
    expect(res.statusCode).toBe(200);
    const { cluster } = res.json();
    expect(cluster).toEqual({ id, name: 'Frankfurt 1', nodeNames: [n2, n3, n1], nodeCount: 3, createdAt: expect.any(Number), updatedAt: expect.any(Number) });
    expect(cluster.updatedAt).toBe(cluster.createdAt);

    const read = await get(id);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({ cluster });
    const viaTr = await tr('getCluster', { clusterId: id });
    expect(viaTr.statusCode).toBe(200);
    expect(viaTr.json()).toMatchObject({ method: 'getCluster', response: { cluster }, correlation: { phase: 'response' } });
    expect(viaTr.json().request).toEqual({ clusterId: id });
    for (const node of [n1, n2, n3]) expect(await ownerOf(node)).toBe(id);
  });

  it('registers over TypedRequest and reads back over REST', async () => {
    const id = fresh('c');
    const node = fresh('node');
    const res = await tr('registerCluster', { clusterId: id, nodeNames: [node] });
    expect(res.statusCode).toBe(200);
    const { cluster } = res.json().response;
    expect(cluster).toMatchObject({ id, nodeNames: [node] });
    expect(cluster).not.toHaveProperty('name');
    expect((await get(id)).json()).toEqual({ cluster });
  });

  it('is idempotent: the same registration twice gives the same result and writes nothing new', async () => {
    const id = fresh('c');
    const body = { name: 'same', nodeNames: [fresh('n'), fresh('n')] };
    const first = await put(id, body);
    const before = await clusters().findOne({ _id: id as never });
    // Past the stored timestamp: a second write, if there were one, could not leave the document as it was.
    await clockPast(first.json().cluster.updatedAt);
    const second = await put(id, body);
    const third = await tr('registerCluster', { clusterId: id, ...body });
    expect(second.statusCode).toBe(200);
    expect(second.json()).toEqual(first.json());
    expect(third.json().response).toEqual(first.json());
    expect(await clusters().findOne({ _id: id as never })).toEqual(before);
    expect(await nodes().countDocuments({ clusterId: id })).toBe(2);
  });

  it('a registration replaces the node set: missing nodes are removed (and free for other clusters), an omitted name is removed', async () => {
    const id = fresh('c');
    const [a, b, c, d] = [fresh('a'), fresh('b'), fresh('c'), fresh('d')];
    const first = (await put(id, { name: 'old', nodeNames: [a, b, c] })).json().cluster;
    await clockPast(first.updatedAt);
    const res = await put(id, { nodeNames: [d, b] });
    expect(res.statusCode).toBe(200);
    const { cluster } = res.json();
    expect(cluster).toEqual({ id, nodeNames: [b, d].sort(), nodeCount: 2, createdAt: first.createdAt, updatedAt: expect.any(Number) });
    expect(cluster.updatedAt).toBeGreaterThan(first.updatedAt);
    expect((await get(id)).json()).toEqual({ cluster });
    expect(await ownerOf(a)).toBeUndefined();
    expect(await ownerOf(c)).toBeUndefined();
    expect((await nodes().find({ clusterId: id }).toArray()).map((n) => n._id).sort()).toEqual([b, d].sort());

    const other = fresh('c');
    expect((await put(other, { nodeNames: [a, c] })).statusCode).toBe(200);
    expect(await ownerOf(a)).toBe(other);

    const emptied = await put(id, { nodeNames: [] });
    expect(emptied.json().cluster.nodeNames).toEqual([]);
    expect(await nodes().countDocuments({ clusterId: id })).toBe(0);
  });

  it('refuses a node of another cluster with node-name-taken naming node and owner, writing nothing', async () => {
    const owner = fresh('owner');
    const shared = fresh('shared');
    const shared2 = fresh('shared2');
    expect((await put(owner, { nodeNames: [shared, shared2, fresh('own')] })).statusCode).toBe(200);

    // An existing cluster: unchanged afterwards.
    const id = fresh('c');
    const kept = fresh('kept');
    const original = (await put(id, { name: 'alpha', nodeNames: [kept] })).json().cluster;
    const extra = fresh('extra');
    const before = await counts();
    const res = await put(id, { name: 'beta', nodeNames: [kept, extra, shared] });
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      code: 'node-name-taken',
      clusterId: id,
      nodeName: shared,
      ownerClusterId: owner,
      takenNodes: [{ nodeName: shared, ownerClusterId: owner }],
    });
    expect(res.json().detail).toBe(`node '${shared}' is registered to cluster '${owner}'`);
    expect((await get(id)).json()).toEqual({ cluster: original });
    expect(await ownerOf(extra)).toBeUndefined();

    // A new cluster: not created, its other nodes not claimed.
    const newcomer = fresh('new');
    const mine = fresh('mine');
    const viaTr = await tr('registerCluster', { clusterId: newcomer, nodeNames: [mine, shared2, shared] });
    expect(viaTr.statusCode).toBe(200);
    expect(viaTr.json().error).toMatchObject({
      text: expect.stringContaining('(+1 more)'),
      data: {
        code: 'node-name-taken',
        ownerClusterId: owner,
        takenNodes: expect.arrayContaining([{ nodeName: shared, ownerClusterId: owner }, { nodeName: shared2, ownerClusterId: owner }]),
      },
    });
    expect((await get(newcomer)).statusCode).toBe(404);
    expect(await ownerOf(mine)).toBeUndefined();
    expect(await counts()).toEqual(before);
    expect(await ownerOf(shared)).toBe(owner);
  });

  it('documents the cluster routes in OpenAPI and lists the TypedRequest methods', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(Object.keys(doc.paths['/v1/clusters/{clusterId}'])).toEqual(expect.arrayContaining(['put', 'get']));
    expect(Object.keys(doc.paths['/v1/clusters'])).toContain('get');
    expect(doc.paths['/typedrequest'].post.description).toMatch(/getCluster, .*listClusters, .*registerCluster/);
  });

  it('an unknown cluster is cluster-not-found (REST 404, TypedRequest error envelope)', async () => {
    const res = await get('nope-1');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'cluster-not-found', clusterId: 'nope-1' });
    const viaTr = await tr('getCluster', { clusterId: 'nope-1' });
    expect(viaTr.json().error).toMatchObject({ text: "cluster 'nope-1' is not registered", data: { code: 'cluster-not-found' } });
  });

  it('lists clusters sorted by id, capped, with keyset paging (REST and TypedRequest)', async () => {
    const t2 = await buildTestApp();
    try {
      const jwt = await t2.token('admin');
      const ids = ['k-3', 'k-1', 'K-0', 'k-2', 'k-10'];
      for (const id of ids) {
        const res = await t2.app.inject({
          method: 'PUT', url: `/v1/clusters/${id}`, headers: { authorization: `Bearer ${jwt}` }, payload: { nodeNames: [`${id}-n2`, `${id}-n1`] },
        });
        expect(res.statusCode).toBe(200);
      }
      const sorted = [...ids].sort();
      const list = (query: string, token = jwt) => t2.app.inject({ method: 'GET', url: `/v1/clusters${query}`, headers: { authorization: `Bearer ${token}` } });
      const all = await list('');
      expect(all.statusCode).toBe(200);
      expect(all.json().clusters.map((c: { id: string }) => c.id)).toEqual(sorted);
      expect(all.json().clusters[0]).toMatchObject({ id: 'K-0', nodeNames: ['K-0-n1', 'K-0-n2'] });
      const page1 = (await list('?limit=2')).json().clusters.map((c: { id: string }) => c.id);
      const page2 = (await list(`?limit=2&after=${page1[1]}`)).json().clusters.map((c: { id: string }) => c.id);
      const page3 = (await list(`?limit=2&after=${page2[1]}`)).json().clusters.map((c: { id: string }) => c.id);
      expect([...page1, ...page2, ...page3]).toEqual(sorted);
      for (const role of ['user', 'api'] as const) expect((await list('', await t2.token(role))).statusCode).toBe(200);
      for (const bad of ['?limit=0', '?limit=257', '?limit=x', '?after=$x', '?other=1']) {
        const res = await list(bad);
        expect(res.statusCode, bad).toBe(400);
        expect(res.json().problems[0].field, bad).toMatch(/^\/querystring/);
      }
      const listing = typedRequest('listClusters', { identity: identity(jwt), limit: 3, after: 'K-0' });
      const viaTr = await t2.app.inject({ method: 'POST', url: '/typedrequest', payload: listing });
      expect(viaTr.json().response.clusters.map((c: { id: string }) => c.id)).toEqual(sorted.slice(1, 4));
    } finally {
      await t2.close();
    }
  });

  it('a listing carries each cluster\'s node count and first 32 node names; the cluster read alone has all 4,096', async () => {
    const t2 = await buildTestApp();
    try {
      const jwt = await t2.token('admin');
      const names = (id: string) => Array.from({ length: 4096 }, (_, i) => `${id}-n${String(i).padStart(4, '0')}`);
      for (const id of ['big-1', 'big-2']) {
        const res = await t2.app.inject({
          method: 'PUT', url: `/v1/clusters/${id}`, headers: { authorization: `Bearer ${jwt}` }, payload: { nodeNames: names(id) },
        });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().cluster).toMatchObject({ nodeCount: 4096 });
        expect(res.json().cluster.nodeNames).toHaveLength(4096);
      }
      await t2.app.inject({ method: 'PUT', url: '/v1/clusters/small', headers: { authorization: `Bearer ${jwt}` }, payload: { nodeNames: ['s-2', 's-1'] } });
      const list = await t2.app.inject({ method: 'GET', url: '/v1/clusters', headers: { authorization: `Bearer ${jwt}` } });
      expect(list.statusCode).toBe(200);
      expect(list.body.length).toBeLessThan(8_000);
      expect(list.json().clusters).toEqual([
        { id: 'big-1', nodeNames: names('big-1').slice(0, 32), nodeCount: 4096, createdAt: expect.any(Number), updatedAt: expect.any(Number) },
        { id: 'big-2', nodeNames: names('big-2').slice(0, 32), nodeCount: 4096, createdAt: expect.any(Number), updatedAt: expect.any(Number) },
        { id: 'small', nodeNames: ['s-1', 's-2'], nodeCount: 2, createdAt: expect.any(Number), updatedAt: expect.any(Number) },
      ]);
      const viaTr = await t2.app.inject({ method: 'POST', url: '/typedrequest', payload: typedRequest('listClusters', { identity: identity(jwt) }) });
      expect(viaTr.json().response).toEqual(list.json());
      const one = await t2.app.inject({ method: 'GET', url: '/v1/clusters/big-2', headers: { authorization: `Bearer ${jwt}` } });
      expect(one.json().cluster).toMatchObject({ nodeNames: names('big-2'), nodeCount: 4096 });
    } finally {
      await t2.close();
    }
  }, 120_000);

  it('only admin registers; admin, user and api read; a cluster token does neither', async () => {
    const id = fresh('c');
    expect((await put(id, { nodeNames: [fresh('n')] })).statusCode).toBe(200);
    const before = await counts();
    for (const role of ['user', 'api', 'cluster'] as Role[]) {
      const jwt = await t.token(role, role === 'cluster' ? { clusterId: id } : {});
      const res = await put(id, { nodeNames: [] }, jwt);
      expect(res.statusCode, role).toBe(403);
      expect(res.json().code).toBe('forbidden');
      expect(res.json().detail).toContain('register clusters');
      const viaTr = await tr('registerCluster', { clusterId: id, nodeNames: [] }, jwt);
      expect(viaTr.json().error.data.code, role).toBe('forbidden');
    }
    for (const role of ['user', 'api'] as Role[]) {
      const jwt = await t.token(role);
      expect((await get(id, jwt)).statusCode, role).toBe(200);
      expect((await tr('getCluster', { clusterId: id }, jwt)).json().response.cluster.id).toBe(id);
    }
    const clusterJwt = await t.token('cluster', { clusterId: id });
    expect((await get(id, clusterJwt)).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/v1/clusters', headers: { authorization: `Bearer ${clusterJwt}` } })).statusCode).toBe(403);
    expect((await tr('getCluster', { clusterId: id }, clusterJwt)).json().error.data.code).toBe('forbidden');
    expect((await tr('listClusters', {}, clusterJwt)).json().error.data.code).toBe('forbidden');
    const anonymous = await t.app.inject({ method: 'PUT', url: `/v1/clusters/${id}`, payload: { nodeNames: [] } });
    expect(anonymous.statusCode).toBe(401);
    expect(await counts()).toEqual(before);
    expect((await get(id)).json().cluster.nodeNames).toHaveLength(1);
  });

  it('refuses bad cluster ids and node names with 400 naming the field, writing nothing', async () => {
    const before = await counts();
    for (const badId of ['-lead', '.dot', 'a b', '$where', 'a/b', 'x'.repeat(129), 'ü']) {
      const res = await put(badId, { nodeNames: ['ok-node'] });
      expect(res.statusCode, badId).toBe(400);
      expect(res.json().code).toBe('validation-failed');
      expect(res.json().problems.map((p: { field: string }) => p.field), badId).toContain('/params/clusterId');
      expect((await get(badId)).statusCode, badId).toBe(400);
      const viaTr = await tr('registerCluster', { clusterId: badId, nodeNames: ['ok-node'] });
      expect(viaTr.json().error.data.problems.map((p: { field: string }) => p.field), badId).toContain('/request/clusterId');
    }
    expect((await put('x'.repeat(128), { nodeNames: [] })).statusCode).toBe(200);
    expect((await put('a:b_c.d-1', { nodeNames: [] })).statusCode).toBe(200);
    await clusters().deleteMany({ _id: { $in: ['x'.repeat(128), 'a:b_c.d-1'] } as never });

    const id = fresh('c');
    const cases: Array<[unknown, string]> = [
      [{ nodeNames: ['ok', '$where'] }, '/body/nodeNames/1'],
      [{ nodeNames: ['.hidden'] }, '/body/nodeNames/0'],
      [{ nodeNames: ['a$b'] }, '/body/nodeNames/0'],
      [{ nodeNames: ['a/b'] }, '/body/nodeNames/0'],
      [{ nodeNames: ['has space'] }, '/body/nodeNames/0'],
      [{ nodeNames: [''] }, '/body/nodeNames/0'],
      [{ nodeNames: ['n'.repeat(254)] }, '/body/nodeNames/0'],
      [{ nodeNames: [{ $gt: '' }] }, '/body/nodeNames/0'],
      [{ nodeNames: 'node-1' }, '/body/nodeNames'],
      [{ nodeNames: Array.from({ length: 4097 }, (_, i) => `n-${i}`) }, '/body/nodeNames'],
      [{ name: '', nodeNames: [] }, '/body/name'],
      [{ nodeNames: [], extra: 1 }, '/body/extra'],
      [{ name: 'x' }, '/body/nodeNames'],
    ];
    for (const [body, field] of cases) {
      const res = await put(id, body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json().code).toBe('validation-failed');
      expect(res.json().problems.map((p: { field: string }) => p.field), JSON.stringify(body).slice(0, 80)).toContain(field);
    }
    expect((await put(id, { nodeNames: ['n'.repeat(253)] })).statusCode).toBe(200);
    await put(id, { nodeNames: [] });
    await clusters().deleteOne({ _id: id as never });

    // Duplicates: the duplicate's position, the name and the first position.
    const dup = await put(id, { nodeNames: ['n-1', 'n-2', 'n-1'] });
    expect(dup.statusCode).toBe(400);
    expect(dup.json().problems).toEqual([{ field: '/body/nodeNames/2', message: "duplicate node name 'n-1' (also at /body/nodeNames/0)" }]);
    const dupTr = await tr('registerCluster', { clusterId: id, nodeNames: ['n-1', 'n-1'] });
    expect(dupTr.json().error.data).toMatchObject({ code: 'validation-failed', problems: [{ field: '/request/nodeNames/1' }] });
    const extraTr = await tr('registerCluster', { clusterId: id, nodeNames: [], $where: '1' });
    expect(extraTr.json().error.data.code).toBe('validation-failed');
    expect(await counts()).toEqual(before);
    expect((await get(id)).statusCode).toBe(404);
  });

  it('concurrent registrations of two clusters claiming one node: exactly one owns it, every refusal is node-name-taken', async () => {
    for (let run = 0; run < 3; run++) {
      const [a, b] = [fresh('ca'), fresh('cb')];
      const shared = fresh('shared');
      const [onlyA, onlyB] = [fresh('only-a'), fresh('only-b')];
      const requests = Array.from({ length: 20 }, (_, i) => i % 2 === 0
        ? { clusterId: a, body: { nodeNames: [onlyA, shared] } }
        : { clusterId: b, body: { nodeNames: [shared, onlyB] } });
      const replies = await Promise.all(requests.map(async (r) => ({ ...r, res: await put(r.clusterId, r.body) })));

      const winners = new Set(replies.filter((r) => r.res.statusCode === 200).map((r) => r.clusterId));
      expect(winners.size).toBe(1);
      const [winner] = [...winners];
      const loser = winner === a ? b : a;
      for (const r of replies) {
        if (r.clusterId === winner) {
          expect(r.res.statusCode).toBe(200);
          expect(r.res.json().cluster.nodeNames).toEqual([...r.body.nodeNames].sort());
        } else {
          expect(r.res.statusCode).toBe(409);
          expect(r.res.json()).toMatchObject({ code: 'node-name-taken', nodeName: shared, ownerClusterId: winner });
        }
      }
      expect(await ownerOf(shared)).toBe(winner);
      expect(await nodes().countDocuments({ _id: shared as never })).toBe(1);
      // The refused cluster left nothing behind.
      expect((await get(loser as string)).statusCode).toBe(404);
      expect(await ownerOf(winner === a ? onlyB : onlyA)).toBeUndefined();
      expect(await nodes().countDocuments({ clusterId: loser })).toBe(0);
      expect((await get(winner as string)).json().cluster.nodeNames).toEqual([winner === a ? onlyA : onlyB, shared].sort());
    }
  });

  it('concurrent registrations of one cluster with different node sets end with exactly one of the sets', async () => {
    const id = fresh('c');
    const names = Array.from({ length: 6 }, (_, i) => fresh(`n${i}`));
    const sets = Array.from({ length: 12 }, (_, i) => [names[i % 6], names[(i + 1) % 6], names[(i + 3) % 6]] as string[]);
    const replies = await Promise.all(sets.map((nodeNames) => put(id, { nodeNames })));
    for (const res of replies) expect(res.statusCode).toBe(200);
    const final = (await get(id)).json().cluster.nodeNames as string[];
    expect(sets.map((s) => [...s].sort())).toContainEqual(final);
    expect((await nodes().find({ clusterId: id }).toArray()).map((n) => n._id).sort()).toEqual(final);
  });

  // Names sorted so that the shared ones fall into every chunk of NODES_PER_OPERATION (claimed several at
  // once): no chunk of one registration may win a name whose other chunks lost.
  it('concurrent registrations of two clusters sharing 300 of their 600 nodes: each node claimed once, a refused cluster leaves nothing', async () => {
    expect(NODES_PER_OPERATION).toBeLessThan(300);
    for (let run = 0; run < 2; run++) {
      const [a, b] = [fresh('ca'), fresh('cb')];
      const tag = fresh('m');
      const shared = Array.from({ length: 300 }, (_, i) => `${tag}-${String(i * 2).padStart(4, '0')}`);
      const only = (c: string) => Array.from({ length: 300 }, (_, i) => `${tag}-${String(i * 2 + 1).padStart(4, '0')}-${c}`);
      const sets = { [a]: [...only(a), ...shared], [b]: [...shared, ...only(b)] };
      const replies = await Promise.all([a, b, a, b].map(async (clusterId) => ({ clusterId, res: await put(clusterId, { nodeNames: sets[clusterId] }) })));

      const winners = new Set(replies.filter((r) => r.res.statusCode === 200).map((r) => r.clusterId));
      expect(winners.size).toBeLessThanOrEqual(1);
      for (const r of replies) {
        if (winners.has(r.clusterId)) continue;
        expect(r.res.statusCode, r.res.body).toBe(409);
        expect(r.res.json()).toMatchObject({ code: 'node-name-taken' });
      }
      const claims = await nodes().find({ _id: { $in: [...shared, ...only(a), ...only(b)] as never[] } }).toArray();
      for (const id of [a, b]) {
        const held = claims.filter((c) => c['clusterId'] === id).map((c) => c._id as unknown as string).sort();
        if (winners.has(id)) {
          expect(held).toEqual([...sets[id] as string[]].sort());
          expect((await get(id)).json().cluster.nodeNames).toEqual(held);
        } else {
          expect(held).toEqual([]);
          expect((await get(id)).statusCode).toBe(404);
        }
      }
    }
  }, 60_000);

  it('concurrent registrations of one cluster with different 600-node sets end with exactly one of the sets', async () => {
    const id = fresh('c');
    const names = Array.from({ length: 1_200 }, (_, i) => `${id}-${String(i).padStart(4, '0')}`);
    const sets = [0, 1, 2, 3].map((k) => names.filter((_, i) => (i + k) % 4 < 2));
    const replies = await Promise.all(sets.map((nodeNames) => put(id, { nodeNames })));
    for (const res of replies) expect(res.statusCode, res.body).toBe(200);
    const final = (await get(id)).json().cluster.nodeNames as string[];
    expect(sets).toContainEqual(final);
    expect((await nodes().find({ clusterId: id }).toArray()).map((n) => n._id).sort()).toEqual(final);
  }, 60_000);

  // Found by schemathesis on the local development database: once the claims collection held tens of
  // thousands of claims, a registration of the maximum 4,096 nodes answered 503 database-unavailable.
  // That database then served no filter naming `_id` and another field from an index (15 s for the
  // count of a registration beside 32,768 other claims, which also held the database so long that the
  // driver's 2 s heartbeat failed: every request in flight got 503). It serves them from its indexes now;
  // what still grows with the square of a list there is chunked (ClusterStore's NODES_PER_OPERATION).
  it('registers and re-registers the maximum number of nodes beside 32,768 claims of other clusters', async () => {
    for (let c = 0; c < 8; c++) {
      const other = fresh('other');
      const claims = Array.from({ length: 4096 }, (_, i) => ({ _id: `${other}-n${i}` as never, clusterId: other, revision: 1, createdAt: Date.now() }));
      await nodes().insertMany(claims);
    }
    const id = fresh('big');
    const names = Array.from({ length: 4096 }, (_, i) => `${id}-n${i}`);
    const first = await put(id, { nodeNames: names });
    expect(first.statusCode, first.body).toBe(200);
    // A re-registration moves this cluster's own 4,095 claims (one name swapped) and counts them again.
    const second = await put(id, { nodeNames: [...names.slice(1), `${id}-n-new`] });
    expect(second.statusCode, second.body).toBe(200);
    expect(await nodes().countDocuments({ clusterId: id })).toBe(4096);
  }, 120_000);
});

describe('cluster registration races, interleaved on the real database', () => {
  let t: TestApp;
  let store: ClusterStore;

  beforeAll(async () => {
    t = await buildTestApp();
    store = new ClusterStore(t.database);
  });
  afterAll(async () => { await t.close(); });

  type Hooks = Partial<Record<'claimNodes' | 'releaseNodes' | 'commit', () => Promise<unknown>>>;
  /** The real store, each hook run once, right before the first call of its method. */
  const interleaved = (hooks: Hooks): ClusterRepository => {
    const once = <A extends unknown[], R>(name: keyof Hooks, call: (...args: A) => Promise<R>) => {
      let hook = hooks[name];
      return async (...args: A): Promise<R> => {
        const run = hook;
        hook = undefined;
        if (run) await run();
        return call(...args);
      };
    };
    return {
      findById: (...a) => store.findById(...a),
      list: (...a) => store.list(...a),
      findNodeOwners: (...a) => store.findNodeOwners(...a),
      findRegisteredNodeOwners: (...a) => store.findRegisteredNodeOwners(...a),
      findClustersWithNodes: (...a) => store.findClustersWithNodes(...a),
      releaseAbandonedClaim: (...a) => store.releaseAbandonedClaim(...a),
      claimNodes: once('claimNodes', (...a: Parameters<ClusterStore['claimNodes']>) => store.claimNodes(...a)),
      releaseNodes: once('releaseNodes', (...a: Parameters<ClusterStore['releaseNodes']>) => store.releaseNodes(...a)),
      commit: once('commit', (...a: Parameters<ClusterStore['commit']>) => store.commit(...a)),
      removeStaleNodes: (...a) => store.removeStaleNodes(...a),
      countNodes: (...a) => store.countNodes(...a),
    };
  };
  /** The registration use case over `repo`; a refusal is thrown (so it can be awaited as a rejection). */
  const ops = (repo: ClusterRepository = store, now = Date.now) => {
    const operations = clusterOperations({ repos: { clusters: repo }, now });
    return {
      registerCluster: async (clusterId: string, data: { name?: string, nodeNames: string[] }) => {
        const result = await operations.registerCluster(clusterId, data);
        if (!result.ok) throw result.error;
        return result.value.cluster;
      },
    };
  };
  const nodeIds = async (clusterId: string) => (await t.db.collection('nodes').find({ clusterId }).toArray()).map((n) => n._id).sort();

  it('a claim lost after the check refuses with node-name-taken and releases the claims it inserted', async () => {
    const [a, b, shared, mine, kept] = [fresh('a'), fresh('b'), fresh('shared'), fresh('mine'), fresh('kept')];
    await ops().registerCluster(a, { nodeNames: [kept] });
    // Another process registers `shared` for b between a's check and a's claim.
    const repo = interleaved({ claimNodes: () => ops().registerCluster(b, { nodeNames: [shared] }) });
    await expect(ops(repo).registerCluster(a, { name: 'new', nodeNames: [kept, mine, shared] }))
      .rejects.toMatchObject({ code: 'node-name-taken', details: { nodeName: shared, ownerClusterId: b } });
    expect(await nodeIds(a)).toEqual([kept]);
    expect(await nodeIds(b)).toEqual([shared]);
    expect((await store.findById(a))?.name).toBeUndefined();
  });

  it('a new cluster whose claim is lost after the check is not created', async () => {
    const [a, b, shared, mine] = [fresh('a'), fresh('b'), fresh('shared'), fresh('mine')];
    const repo = interleaved({ claimNodes: () => ops().registerCluster(b, { nodeNames: [shared] }) });
    await expect(ops(repo).registerCluster(a, { nodeNames: [mine, shared] })).rejects.toMatchObject({ code: 'node-name-taken' });
    expect(await store.findById(a)).toBeNull();
    expect(await nodeIds(a)).toEqual([]);
  });

  it('a registration that loses the compare-and-swap to one of the same cluster runs again and its set wins', async () => {
    const [id, p, q, r] = [fresh('c'), fresh('p'), fresh('q'), fresh('r')];
    await ops().registerCluster(id, { nodeNames: [p] });
    const repo = interleaved({ commit: () => ops().registerCluster(id, { name: 'other', nodeNames: [p, q] }) });
    const cluster = await ops(repo).registerCluster(id, { name: 'mine', nodeNames: [r, p] });
    expect(cluster).toMatchObject({ id, name: 'mine', nodeNames: [p, r].sort() });
    expect(await nodeIds(id)).toEqual([p, r].sort());
    expect(await store.findById(id)).toMatchObject({ name: 'mine', revision: 3, nodeNames: [p, r].sort() });
  });

  it('two first registrations of one cluster: the loser of the insert runs again', async () => {
    const [id, p, q] = [fresh('c'), fresh('p'), fresh('q')];
    const repo = interleaved({ commit: () => ops().registerCluster(id, { nodeNames: [q] }) });
    const cluster = await ops(repo).registerCluster(id, { nodeNames: [p] });
    expect(cluster.nodeNames).toEqual([p]);
    expect(await nodeIds(id)).toEqual([p]);
    expect((await store.findById(id))?.revision).toBe(2);
  });

  it('a claim released by a refused registration of the same cluster is claimed again before answering', async () => {
    const [id, other, p, shared] = [fresh('c'), fresh('o'), fresh('p'), fresh('shared')];
    let reachedRelease!: () => void;
    const atRelease = new Promise<void>((resolve) => { reachedRelease = resolve; });
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => { openGate = resolve; });
    // R passes the check, then `shared` goes to another cluster; R inserts `p`, is refused
    // on `shared`, and waits before releasing `p`.
    const refused = ops(interleaved({
      claimNodes: () => ops().registerCluster(other, { nodeNames: [shared] }),
      releaseNodes: async () => { reachedRelease(); await gate; },
    })).registerCluster(id, { nodeNames: [p, shared] });
    await atRelease;
    // M finds `p` already claimed for its cluster; R releases it while M commits.
    const cluster = await ops(interleaved({
      commit: async () => {
        openGate();
        await expect(refused).rejects.toMatchObject({ code: 'node-name-taken' });
      },
    })).registerCluster(id, { nodeNames: [p] });
    expect(cluster.nodeNames).toEqual([p]);
    expect(await nodeIds(id)).toEqual([p]);
    expect((await store.findById(id))?.revision).toBe(2);
  });

  it('findClustersWithNodes and findNodeOwners answer for registered clusters only, in the order asked', async () => {
    const [c1, c2, n1, n2, n3] = [fresh('c1'), fresh('c2'), fresh('n1'), fresh('n2'), fresh('n3')];
    await ops().registerCluster(c1, { nodeNames: [n2, n1] });
    await ops().registerCluster(c2, { nodeNames: [] });
    expect(await store.findClustersWithNodes([c2, 'unknown', c1, c2])).toEqual([
      { id: c2, nodeNames: [] },
      { id: c1, nodeNames: [n1, n2].sort() },
    ]);
    expect(await store.findClustersWithNodes([])).toEqual([]);
    const owners = await store.findNodeOwners([n1, n3, n2]);
    expect([...owners.keys()].sort()).toEqual([n1, n2].sort());
    expect([owners.get(n1)?.clusterId, owners.get(n2)?.clusterId]).toEqual([c1, c1]);
    expect(await store.findNodeOwners([])).toEqual(new Map());
  });

  it('a registration that crashed before committing: its claims are no nodes, and block their names for at most ABANDONED_CLAIM_AFTER_MS', async () => {
    const [a, gone, b, kept, extra, lone] = [fresh('a'), fresh('gone'), fresh('b'), fresh('kept'), fresh('extra'), fresh('lone')];
    const crash = () => Promise.reject(new Error('injected crash before commit'));
    await ops().registerCluster(a, { nodeNames: [kept] });
    // An update of a that adds `extra`, and the first registration of `gone`, both die after claiming.
    await expect(ops(interleaved({ commit: crash })).registerCluster(a, { nodeNames: [kept, extra] })).rejects.toThrow('injected crash');
    await expect(ops(interleaved({ commit: crash })).registerCluster(gone, { nodeNames: [lone] })).rejects.toThrow('injected crash');
    expect(await nodeIds(a)).toEqual([extra, kept].sort());
    expect((await store.findById(a))?.nodeNames).toEqual([kept]);
    expect(await store.findClustersWithNodes([a, gone])).toEqual([{ id: a, nodeNames: [kept] }]);
    expect((await store.list({ limit: 500 })).find((c) => c.id === a)?.nodeNames).toEqual([kept]);

    // Right away the names are still held (a live registration may be about to commit them)…
    await expect(ops().registerCluster(b, { nodeNames: [extra] })).rejects.toMatchObject({ code: 'node-name-taken', details: { ownerClusterId: a } });
    await expect(ops().registerCluster(b, { nodeNames: [lone] })).rejects.toMatchObject({ code: 'node-name-taken', details: { ownerClusterId: gone } });
    // …and once they are older than the limit, another cluster takes them; a committed node never goes.
    const later = ops(store, () => Date.now() + ABANDONED_CLAIM_AFTER_MS + 1);
    await expect(later.registerCluster(b, { nodeNames: [kept] })).rejects.toMatchObject({ code: 'node-name-taken', details: { ownerClusterId: a } });
    expect((await later.registerCluster(b, { nodeNames: [extra, lone] })).nodeNames).toEqual([extra, lone].sort());
    expect(await nodeIds(b)).toEqual([extra, lone].sort());
    expect(await nodeIds(a)).toEqual([kept]);
    expect(await nodeIds(gone)).toEqual([]);
    expect((await store.findById(a))?.nodeNames).toEqual([kept]);
  });
});
