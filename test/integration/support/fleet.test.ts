import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { serviceData } from '../../support/app.js';
import { request, startFleet, type Fleet } from '../../support/fleet.js';

interface ServiceReply { service: { id: string, data: { name: string } } }

/** Self-test of the multi-process harness the concurrency and crash tests stand on. */
describe('test harness: a fleet of server processes on one database', () => {
  let fleet: Fleet;
  let admin: string;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    admin = await fleet.token('admin');
  });
  afterAll(async () => { await fleet?.close(); });

  const pids = (): number[] => fleet.servers.map((s) => s.pid);

  it('starts separate processes on separate ports, both ready', async () => {
    const [a, b] = fleet.servers;
    expect(a && b).toBeTruthy();
    expect(new Set(pids()).size).toBe(2);
    expect(a?.url).not.toBe(b?.url);
    for (const server of fleet.servers) {
      const ready = await request(server.url, { path: '/readyz' });
      expect(ready.status, fleet.logs()).toBe(200);
    }
  });

  it('shares one database: written through A, read through B and seen by the driver', async () => {
    const [a, b] = fleet.servers as [typeof fleet.servers[0], typeof fleet.servers[0]];
    const data = serviceData();
    const created = await request<ServiceReply>(a.url, { method: 'POST', path: '/v1/services', token: admin, body: data });
    expect(created.status, fleet.logs()).toBe(201);
    const read = await request<ServiceReply>(b.url, { path: `/v1/services/${created.json.service.id}`, token: admin });
    expect(read.status).toBe(200);
    expect(read.json.service).toEqual(created.json.service);
    const db = await fleet.db();
    expect(await db.collection('services').countDocuments({ 'data.name': data['name'] })).toBe(1);
  });

  it('SIGKILL of A leaves B serving; restart brings A back on the same database', async () => {
    const [a, b] = fleet.servers as [typeof fleet.servers[0], typeof fleet.servers[0]];
    const created = await request<ServiceReply>(a.url, { method: 'POST', path: '/v1/services', token: admin, body: serviceData() });
    expect(created.status).toBe(201);
    const oldUrl = a.url;
    const oldPid = a.pid;

    expect(await a.kill('SIGKILL')).toBeNull();
    expect(a.running).toBe(false);
    expect(a.logs.some((line) => line.includes('exited with SIGKILL'))).toBe(true);
    await expect(request(oldUrl, { path: '/healthz', timeoutMs: 2_000 })).rejects.toThrow();
    expect((await request(b.url, { path: '/readyz' })).status).toBe(200);
    expect((await request(b.url, { path: `/v1/services/${created.json.service.id}`, token: admin })).status).toBe(200);

    await a.restart();
    expect(a.running).toBe(true);
    expect(a.pid).not.toBe(oldPid);
    expect((await request(a.url, { path: '/readyz' })).status, fleet.logs()).toBe(200);
    const read = await request<ServiceReply>(a.url, { path: `/v1/services/${created.json.service.id}`, token: admin });
    expect(read.json.service).toEqual(created.json.service);
  });

  it('SIGTERM drains and exits 0; restart after it works too', async () => {
    const b = fleet.servers[1];
    if (!b) throw new Error('no second server');
    expect(await b.kill('SIGTERM')).toBe(0);
    expect(await b.kill()).toBe(0); // already gone: the same code, at once
    await b.restart({ LOG_LEVEL: 'debug' });
    expect((await request(b.url, { path: '/readyz' })).status).toBe(200);
  });

  it('tokens are checked by the processes: the wrong role is forbidden, no token unauthenticated', async () => {
    const a = fleet.servers[0];
    if (!a) throw new Error('no first server');
    const user = await fleet.token('user');
    const forbidden = await request<{ code: string }>(a.url, { method: 'POST', path: '/v1/services', token: user, body: serviceData() });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.code).toBe('forbidden');
    const anonymous = await request<{ code: string }>(a.url, { path: '/v1/services/svc_x' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['content-type']).toContain('application/problem+json');
  });

  it('add() starts one more process on the same database', async () => {
    const c = await fleet.add();
    expect(fleet.servers).toHaveLength(3);
    expect(c.index).toBe(2);
    expect((await request(c.url, { path: '/readyz' })).status).toBe(200);
  });
});

describe('test harness: fleet.close()', () => {
  it('kills every process and drops the database', async () => {
    const fleet = await startFleet({ processes: 1 });
    const [server] = fleet.servers;
    if (!server) throw new Error('no server');
    const created = await request(server.url, { method: 'POST', path: '/v1/services', token: await fleet.token('admin'), body: serviceData() });
    expect(created.status).toBe(201);
    const exited = server.exited;
    await fleet.close();
    expect(await exited).toBeNull();
    expect(server.running).toBe(false);
    expect(() => process.kill(server.pid, 0)).toThrow();

    const client = await new MongoClient(inject('mongoUri')).connect();
    try {
      const { databases } = await client.db('admin').admin().listDatabases();
      expect(databases.map((d) => d.name)).not.toContain(fleet.dbName);
    } finally {
      await client.close();
    }
  });
});
