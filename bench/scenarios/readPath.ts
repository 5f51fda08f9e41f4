import { httpLoop, measureTriple, setCanned, type BenchContext, type Triple } from '../lib/context.js';
import { bearer } from '../lib/fixtures.js';
import type { RolloutFleets } from '../lib/fleet.js';
import { expectStatus, once } from '../lib/load.js';
import type { CpuProbe } from '../lib/processes.js';
import { REPORTER_NODES } from './reporters.js';

/**
 * Read path: GET /v1/services/:serviceId/rollout of the rollout of R reporters (each 4 nodes ×
 * 2 replicas) under `connections` connections (closed loop), against the plain-Fastify floor
 * (the server's answer, canned) and the read-path floor (bench/floors/readPath.ts: the same
 * reads with the bare driver, the same answer built by the server's own pure functions, served
 * by plain Fastify, in a process of its own).
 */

export interface ReadPathResult {
  reporters: number;
  connections: number;
  /** server; plain Fastify (canned answer); bare driver = the read-path floor process. */
  triple: Triple;
  /** Body of the answer (bytes): server, read-path floor. */
  answerBytes: { server: number, floor: number };
}

export async function runReadPath (
  ctx: BenchContext, fleets: RolloutFleets, reporters: number, plan: { connections: number, perBlock: number, rounds: number, warmMs: number },
): Promise<ReadPathResult> {
  const fleet = await fleets.get(reporters, REPORTER_NODES);
  const serviceId = fleet.serviceIds[0] as string;
  const path = `/v1/services/${serviceId}/rollout`;
  const floor = await ctx.startFloor('read-path floor', 'readPath.js');
  try {
    const token = await ctx.token({ subject: 'bench-reader', role: 'api' });
    const server = await once(ctx.server.url, 'GET', path, bearer(token));
    if (server.status !== 200) throw new Error(`GET ${path}: ${server.status} ${server.body.slice(0, 300)}`);
    await setCanned(ctx, 'rollout', 200, server.body);
    const floorAnswer = await expectStatus<{ reporters: unknown[] }>([200], floor.url, 'GET', path, {});
    if (floorAnswer.reporters.length !== reporters) throw new Error(`the read-path floor answered ${floorAnswer.reporters.length} reporters`);
    const answerBytes = { server: Buffer.byteLength(server.body), floor: Buffer.byteLength(JSON.stringify(floorAnswer)) };
    const floorProbes: CpuProbe[] = [{ ...floor.cpu, name: 'service' }, ...(ctx.probes.db ? [ctx.probes.db] : []), { ...ctx.probes.self, name: 'client' }];
    const block = (subject: 'server' | 'fastify' | 'floor', total: number, maxMs?: number) => {
      const url = subject === 'server' ? ctx.server.url : subject === 'fastify' ? ctx.fastify.url : floor.url;
      return httpLoop(ctx, subject === 'floor' ? 'fastify' : subject, url, { concurrency: plan.connections, total, maxMs }, async (client) => {
        const res = await client.request('GET', path, subject === 'server' ? bearer(token) : {});
        return String(res.status);
      }, subject === 'floor' ? floorProbes : undefined);
    };
    await block('server', Number.MAX_SAFE_INTEGER, plan.warmMs);
    await block('floor', Number.MAX_SAFE_INTEGER, plan.warmMs);
    await block('fastify', Number.MAX_SAFE_INTEGER, 300);
    const triple = await measureTriple(ctx, `read path, ${reporters} reporters, ${plan.connections} connections`, plan.rounds, {
      server: () => block('server', plan.perBlock),
      fastify: () => block('fastify', plan.perBlock),
      driver: () => block('floor', plan.perBlock),
    });
    for (const subject of ['server', 'fastify', 'driver'] as const) {
      const outcomes = triple[subject].outcomes;
      if (Object.keys(outcomes).some((k) => k !== '200')) ctx.opts.log(`  WARNING read path (${subject}): unexpected outcomes ${JSON.stringify(outcomes)}`);
    }
    return { reporters, connections: plan.connections, triple, answerBytes };
  } finally {
    await floor.stop();
  }
}
