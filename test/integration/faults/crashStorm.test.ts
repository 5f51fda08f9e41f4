import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { sleep } from '../../support/wait.js';
import { prepareStorm, type Chaos } from './storm.js';

/**
 * Crash storm on the report path and promotion (docs/api.md "How reports are stored", "Compare-and-swap",
 * "Idempotency"): 3 server processes on one database take the storm's load (./storm.ts) while a killer
 * SIGKILLs a random process every second or so and restarts every process that died, each time with a
 * fault point at random armed (FAULT_INJECTION: the process kills itself at that step boundary). Then
 * every process is restarted without fault points and the invariants are checked.
 */
const FAULT_POINTS = ['after-idempotency-record', 'after-rollout-record', 'after-plan-write', 'after-release-update',
  'after-report-claims', 'after-report-record', 'after-report-status'];

describe('crash storm: SIGKILLs while 3 processes take reports and promotions', () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await startFleet({ processes: 3, env: { IDEMPOTENCY_LEASE_MS: '1500', LIFECYCLE_SWEEP_INTERVAL_MS: '500' } });
  }, 180_000);
  afterAll(async () => { await fleet?.close(); });

  it('every answer is coded, and afterwards every process shows the same valid status that adds up', async () => {
    const storm = await prepareStorm(fleet);
    let kills = 0;
    const faultsHit = new Map<string, number>();
    const killer: Chaos = async (stop) => {
      let sinceKill = 0;
      while (!stop.storm) {
        await sleep(200);
        sinceKill += 200;
        for (const server of fleet.servers) {
          if (server.running || stop.storm) continue;
          const line = server.logs.slice(-20).find((l) => l.startsWith('FAULT_INJECTION: crashing at '));
          if (line) faultsHit.set(line, (faultsHit.get(line) ?? 0) + 1);
          const point = FAULT_POINTS[Math.floor(Math.random() * FAULT_POINTS.length)]!;
          server.logs.push('[storm] restart');
          await server.restart(Math.random() < 0.8 ? { FAULT_INJECTION: point } : {});
        }
        if (sinceKill > 1500 && !stop.storm) {
          sinceKill = 0;
          const victim = fleet.servers[Math.floor(Math.random() * fleet.servers.length)]!;
          if (victim.running) { await victim.kill('SIGKILL'); kills++; }
        }
      }
      // Every process fresh, without fault points, before the invariants are checked.
      for (const server of fleet.servers) await server.restart();
    };
    const { promotions, streamed } = await storm.run(killer);
    expect(kills + [...faultsHit.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    console.log(`crash storm: ${kills} kills, faults ${JSON.stringify([...faultsHit])}, ${promotions} promotions, streamed ${streamed.join('/')} events`);
  }, 300_000);
});
