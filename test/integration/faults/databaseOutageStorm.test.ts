import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalMongo, type LocalMongo } from '../../../tools/dev-database/localMongo.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { sleep } from '../../support/wait.js';
import { prepareStorm, type Chaos } from './storm.js';

/**
 * The storm's load (./storm.ts) on 2 processes while the database is stopped for a few seconds and
 * started again (mongo-java-server with its H2 file, on the same port), twice, instead of processes
 * being killed. Every request that got no answer or a 503 is retried until it gets one; then the same
 * invariants.
 */
describe('database outage storm: the database stopped and started again while 2 processes take reports, promotions and streams', () => {
  let fleet: Fleet;
  let mongo: LocalMongo;
  let dir: string;
  let dataFile: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storm-outage-'));
    dataFile = join(dir, 'data.mv');
    mongo = await startLocalMongo({ backend: 'h2', dataFile, port: 0 });
    fleet = await startFleet({ processes: 2, env: { MONGODB_URI: mongo.uri, IDEMPOTENCY_LEASE_MS: '1500', LIFECYCLE_SWEEP_INTERVAL_MS: '500' } });
  }, 180_000);
  afterAll(async () => {
    await fleet?.close().catch(() => undefined);
    await mongo?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every answer is coded, and afterwards every process shows the same valid status that adds up', async () => {
    const storm = await prepareStorm(fleet);
    let outages = 0;
    /** Stops the database for 4 s, twice, then starts it again on the same port and file. */
    const outage: Chaos = async () => {
      const port = mongo.port;
      // Both outages, whenever the load stops (the load's last requests are retried until the database is back).
      for (let round = 0; round < 2; round++) {
        await sleep(4_000);
        await mongo.stop();
        outages++;
        await sleep(4_000);
        mongo = await startLocalMongo({ backend: 'h2', dataFile, port });
      }
    };
    const { promotions, streamed } = await storm.run(outage);
    expect(outages).toBe(2);
    expect(fleet.servers.every((server) => server.running)).toBe(true);
    console.log(`outage storm: ${outages} outages, ${promotions} promotions, streamed ${streamed.join('/')} events`);
  }, 300_000);
});
