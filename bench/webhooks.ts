// `npm run bench:webhooks [-- --events=10000]`: drains a backlog of webhook events to one loopback
// receiver through the real delivery (the app over the database: log reads, cursors, delivery log,
// signatures), against a floor that posts the same signed bodies from one process with the same
// concurrency and no database. Prints both rates and their ratio (issue 22's criterion: ≥ 0.5).
import { createServer, Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { cloudEventOf } from '../src/domain/webhooks.js';
import { startLocalMongo } from '../tools/dev-database/localMongo.js';
import { signatureHeader, WebhookTargetRules } from '../src/outbound/webhooks/sender.js';
import { AddressPolicy } from '../src/outbound/webhooks/addressPolicy.js';
import { mintToken } from '../src/domain/tokens.js';

const EVENTS = Number(process.argv.find((a) => a.startsWith('--events='))?.split('=')[1] ?? 10_000);
/** Services the backlog is spread over: delivery is sequential per service, concurrent across them (8 at a time). */
const SERVICES = 8;
const log = (line: string): void => { process.stderr.write(`[bench:webhooks] ${line}\n`); };

async function receiver () {
  let count = 0;
  let done: () => void = () => undefined;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204).end();
      count++;
      if (count === EVENTS) done();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    reset: () => { count = 0; return new Promise<void>((resolve) => { done = resolve; }); },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** The floor: the same signed bodies, posted with the same concurrency, no database. */
async function floor (url: string, bodies: Array<{ id: string, body: string }>, secret: string): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: SERVICES });
  let next = 0;
  const started = performance.now();
  const post = (item: { id: string, body: string }) => new Promise<void>((resolve, reject) => {
    const at = new Date();
    const req = request(url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/cloudevents+json; charset=utf-8',
        'webhook-id': item.id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signatureHeader([secret], item.id, at, item.body),
      },
    }, (res) => { res.resume(); res.on('end', resolve); });
    req.on('error', reject);
    req.end(item.body);
  });
  await Promise.all(Array.from({ length: SERVICES }, async () => {
    while (next < bodies.length) await post(bodies[next++] as { id: string, body: string });
  }));
  agent.destroy();
  return EVENTS / ((performance.now() - started) / 1000);
}

async function main (): Promise<void> {
  const local = process.env['MONGODB_URI'] ? undefined : await startLocalMongo({ backend: 'memory', port: 0, log });
  const uri = process.env['MONGODB_URI'] ?? local?.uri ?? '';
  const dbName = `bench_webhooks_${randomBytes(4).toString('hex')}`;
  const secret = randomBytes(32).toString('base64url');
  const sink = await receiver();
  const app = await buildApp({
    config: {
      ...loadConfig({}), MONGODB_URI: uri, MONGODB_DB: dbName, AUTH_JWT_SECRET: secret, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_INTERVAL_MS: 20,
    },
    logger: false,
    checkDatabase: false,
  });
  await app.ready();
  const client = await new MongoClient(uri).connect();
  const db = client.db(dbName);
  try {
    const admin = await mintToken({ kind: 'secret', secret }, { subject: 'bench', role: 'admin' });
    const services = Array.from({ length: SERVICES }, (_, i) => `svc-bench-${i}`);
    await db.collection('services').insertMany(services.map((id) => ({ _id: id as never, data: { name: id }, eventSeq: 0 })));
    const created = await app.inject({
      method: 'POST', url: '/v1/webhooks/subscriptions', headers: { authorization: `Bearer ${admin}` }, payload: { url: sink.url, services: { all: true } },
    });
    if (created.statusCode !== 201) throw new Error(`subscribe: ${created.statusCode} ${created.body}`);
    const hookSecret = created.json().secret as string;
    // The backlog, as the relay leaves it: EVENTS events in the log, spread over the services.
    const perService = Math.ceil(EVENTS / SERVICES);
    const events = services.flatMap((serviceId) => Array.from({ length: perService }, (_, i) => ({
      _id: `${serviceId}:${i + 1}`,
      serviceId,
      seq: i + 1,
      key: `k${i + 1}`,
      type: 'automation.held' as const,
      time: Date.now(),
      data: { serviceId, serviceName: serviceId, rolloutId: `r${i}`, generation: i + 1, by: { subject: 'bench' }, reason: 'bench' },
    }))).slice(0, EVENTS);
    const targets = new WebhookTargetRules(new AddressPolicy('127.0.0.1'));
    const bodies = events.map((e) => ({ id: e._id, body: targets.serialize(cloudEventOf({ ...e, id: e._id }, 'urn:cloudly:release-control-plane')) }));

    let drained = sink.reset();
    const floorRate = await floor(sink.url, bodies, hookSecret);
    await drained;
    log(`floor: ${floorRate.toFixed(0)} events/s`);

    drained = sink.reset();
    const started = performance.now();
    for (let i = 0; i < events.length; i += 1000) await db.collection('events').insertMany(events.slice(i, i + 1000) as never[]);
    for (const serviceId of services) {
      await db.collection('services').updateOne({ _id: serviceId as never }, { $set: { eventSeq: events.filter((e) => e.serviceId === serviceId).length } });
    }
    await drained;
    const deliveryRate = EVENTS / ((performance.now() - started) / 1000);
    log(`delivery: ${deliveryRate.toFixed(0)} events/s`);
    process.stdout.write(`webhook drain of ${EVENTS} events over ${SERVICES} services: delivery ${deliveryRate.toFixed(0)}/s, ` +
      `floor ${floorRate.toFixed(0)}/s, ratio ${(deliveryRate / floorRate).toFixed(2)} (criterion ≥ 0.5)\n`);
  } finally {
    await app.close();
    await db.dropDatabase().catch(() => undefined);
    await client.close();
    await sink.close();
    await local?.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
