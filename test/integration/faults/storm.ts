import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { validateImageRolloutStatus } from '../../../src/contracts/index.js';
import {
  createFixtureService, fullRolloutHistory, httpCaller, pushRelease, registerCluster, type FixtureService,
} from '../../support/fixtures.js';
import { request, type Fleet, type Response, type ServerProcess } from '../../support/fleet.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { openSse } from '../../support/sse.js';
import { sleep } from '../../support/wait.js';

/**
 * The load and the invariants of the storm tests (crashStorm.test.ts: SIGKILLs and fault points;
 * databaseOutageStorm.test.ts: the database stopped and started again). Per service 4 reporters on
 * 2 clusters (node groups reported one by one, and full reports) report in a loop to random
 * processes; a promoter promotes in a loop with an Idempotency-Key it reuses on every retry; an SSE
 * follower reconnects (Last-Event-ID) to any process. Every request that got no answer (or a 503) is
 * retried until it gets one, as agents and CI do. Then, with the load stopped, each reporter sends one
 * final honest report, and the invariants are checked from every process.
 */

export const STORM_MS = Number(process.env['STORM_MS'] ?? 12_000);
const SERVICES = 2;
const clusters = { c1: ['c1-n1', 'c1-n2', 'c1-n3'], c2: ['c2-n1', 'c2-n2', 'c2-n3'] };

interface ReporterSpec { clusterId: 'c1' | 'c2', subject: string, nodes: string[], scoped: boolean }
const reporterSpecs: ReporterSpec[] = [
  { clusterId: 'c1', subject: 'agent-a', nodes: ['c1-n1', 'c1-n2'], scoped: true },
  { clusterId: 'c1', subject: 'agent-b', nodes: ['c1-n3'], scoped: false },
  { clusterId: 'c2', subject: 'agent-a', nodes: ['c2-n1'], scoped: false },
  { clusterId: 'c2', subject: 'agent-b', nodes: ['c2-n2', 'c2-n3'], scoped: true },
];

/** What the chaos of one storm does while the load runs; `stop.storm` turns true when the load should end. */
export type Chaos = (stop: { storm: boolean }) => Promise<void>;

/** Clusters, services and releases on the fleet; then `run(chaos)` runs the load beside the chaos and checks every invariant. */
export async function prepareStorm (fleet: Fleet): Promise<{ run: (chaos: Chaos) => Promise<{ promotions: number, streamed: number[] }> }> {
  const admin = await fleet.token('admin');
  const api = await fleet.token('api');
  const services: Array<{ svc: FixtureService, releases: string[] }> = [];
  const problems: string[] = [];
  const caller = httpCaller(fleet.servers[0]!.url);
  for (const [id, nodes] of Object.entries(clusters)) await registerCluster(caller, admin, id, nodes);
  for (let s = 0; s < SERVICES; s++) {
    const svc = await createFixtureService(caller, admin, { clusterIds: ['c1', 'c2'], replicasPerNode: 1 });
    const releases: string[] = [];
    for (const tag of ['a', 'b', 'c']) releases.push((await pushRelease(caller, api, svc, { tag })).releaseId);
    services.push({ svc, releases });
  }

  /** A running process, at random. */
  const anyServer = (): ServerProcess => {
    const running = fleet.servers.filter((s) => s.running);
    const pool = running.length > 0 ? running : fleet.servers;
    return pool[Math.floor(Math.random() * pool.length)]!;
  };

  /** Sends until a definitive answer (not a lost connection, not a 503): what agents and CI do. */
  async function untilAnswered (what: string, opts: Parameters<typeof request>[1]): Promise<Response<any>> {
    for (let attempt = 0; attempt < 400; attempt++) {
      let res: Response<any>;
      try {
        res = await request<any>(anyServer().url, { ...opts, timeoutMs: 15_000 });
      } catch {
        await sleep(100);
        continue;
      }
      if (res.status === 503 || (res.status === 409 && res.json?.code === 'idempotency-request-in-progress')) {
        await sleep(200);
        continue;
      }
      if (res.status >= 500) problems.push(`${what}: ${res.status} ${res.text.slice(0, 300)}`);
      return res;
    }
    throw new Error(`${what}: no answer after 400 attempts`);
  }

  const readPlan = async (serviceId: string): Promise<IImmutableImageDeploymentPlan | undefined> =>
    (await untilAnswered(`read ${serviceId}`, { path: `/v1/services/${serviceId}`, token: api })).json.service.data.imageDeployment;

  async function run (chaos: Chaos): Promise<{ promotions: number, streamed: number[] }> {
    const stop = { storm: false };
    /** Per service and reporter: the last sequence acknowledged (200) for the rollout it was for. */
    const acknowledged = new Map<string, { rolloutId: string, sequence: number }>();
    const promotedKeys: Array<{ service: number, key: string, rolloutId: string }> = [];

    async function reporter (s: number, spec: ReporterSpec): Promise<void> {
      const { svc } = services[s]!;
      const token = await fleet.token('cluster', { clusterId: spec.clusterId, subject: spec.subject });
      let session = `${spec.clusterId}-${spec.subject}-${randomBytes(3).toString('hex')}`;
      let sequence = 0;
      let group = 0;
      while (!stop.storm) {
        const plan = await readPlan(svc.id);
        if (!plan) { await sleep(100); continue; }
        if (Math.random() < 0.05) { session = `${spec.clusterId}-${spec.subject}-${randomBytes(3).toString('hex')}`; sequence = 0; }
        const nodes = spec.scoped ? [spec.nodes[group++ % spec.nodes.length]!] : spec.nodes;
        const deployments = nodes.map((n) => {
          const roll = Math.random();
          if (roll < 0.15) return verifiedReplica(plan, svc.id, n, 0, { evidence: { taskReportedDigest: `sha256:${'3'.repeat(64)}` } });
          if (roll < 0.3) return verifiedReplica(plan, svc.id, n, 0, { status: 'starting', evidence: null });
          return verifiedReplica(plan, svc.id, n, 0);
        });
        sequence++;
        const body = reportBody(plan, svc.id, { session, sequence, nodeNames: nodes, deployments });
        if (!spec.scoped) delete body['reporterNodeNames'];
        const res = await untilAnswered(`report ${spec.clusterId}/${spec.subject}`, { path: '/v1/deployment-snapshots', token, body });
        const key = `${s}/${spec.clusterId}/${spec.subject}`;
        if (res.status === 200) {
          acknowledged.set(key, { rolloutId: plan.rolloutId, sequence });
        } else if (!(res.status === 409 && res.json?.code === 'stale-rollout-report')) {
          problems.push(`report ${key} seq ${sequence}: ${res.status} ${res.text.slice(0, 300)}`);
        }
        await sleep(20 + Math.random() * 80);
      }
    }

    async function promoter (s: number): Promise<void> {
      const { svc, releases } = services[s]!;
      let round = 0;
      while (!stop.storm) {
        const plan = await readPlan(svc.id);
        const key = `storm-${s}-${round}-${randomBytes(4).toString('hex')}`;
        const releaseId = releases[round++ % releases.length]!;
        const res = await untilAnswered(`promote ${s}`, {
          path: `/v1/services/${svc.id}/image-releases/${releaseId}/promote`,
          token: api,
          headers: { 'idempotency-key': key },
          body: { expectedRolloutGeneration: plan?.rolloutGeneration ?? 0, enableImmutableImage: true },
        });
        if (res.status === 200) {
          promotedKeys.push({ service: s, key, rolloutId: res.json.service.data.imageDeployment.rolloutId });
        } else if (!(res.status === 409 && ['rollout-generation-conflict', 'rollback-target-is-current'].includes(res.json?.code))) {
          problems.push(`promote ${s}: ${res.status} ${res.text.slice(0, 300)}`);
        }
        await sleep(800 + Math.random() * 800);
      }
    }

    /** Per service: what an SSE client that reconnects (Last-Event-ID) to any process received, in order. */
    const streamed: Array<Array<{ kind: string, revision: number }>> = services.map(() => []);
    async function follower (s: number): Promise<void> {
      const { svc } = services[s]!;
      const token = await fleet.token('user');
      let last: string | undefined;
      while (!stop.storm) {
        let client;
        try {
          const headers = { authorization: `Bearer ${token}`, ...(last ? { 'last-event-id': last } : {}) };
          client = await openSse(`${anyServer().url}/v1/services/${svc.id}/rollout/events`, headers, 5_000);
        } catch {
          await sleep(100);
          continue;
        }
        if (client.status !== 200) { await client.close(); await sleep(200); continue; }
        let seen = 0;
        const drain = (): void => {
          for (const m of client.messages.slice(seen)) {
            const data = JSON.parse(m.data) as { revision: number };
            streamed[s]!.push({ kind: m.event === 'reset' ? `reset:${(data as { reason?: string }).reason}` : m.event, revision: Number(m.id) });
            last = m.id;
          }
          seen = client.messages.length;
        };
        await Promise.race([client.ended, (async () => { while (!stop.storm) { drain(); await sleep(50); } })()]);
        drain();
        await client.close();
        drain();
      }
    }

    const load = [
      chaos(stop),
      ...services.map(async (_, s) => { await follower(s); }),
      ...services.flatMap((_, s) => [promoter(s), ...reporterSpecs.map(async (spec) => { await reporter(s, spec); })]),
    ];
    await sleep(STORM_MS);
    stop.storm = true;
    await Promise.all(load);
    await checkInvariants();
    return { promotions: promotedKeys.length, streamed: streamed.map((x) => x.length) };

    async function checkInvariants (): Promise<void> {
      expect(problems, fleet.logs().slice(-4000)).toEqual([]);

      // Quiet, every request answered: the summary (listing, SSE) and the full read agree, on every process,
      // and each reporter's entry is at (or after) its last acknowledged report of the current rollout.
      for (const [s, { svc }] of services.entries()) {
        const plan = (await readPlan(svc.id))!;
        for (const server of fleet.servers) {
          const read = await request<any>(server.url, { path: `/v1/services/${svc.id}`, token: api });
          const full = read.json.service.data.imageRolloutStatus as IImageRolloutStatus;
          expect(validateImageRolloutStatus(full), JSON.stringify(full)).toEqual([]);
          const listed = await request<any>(server.url, { path: '/v1/services?limit=200', token: api });
          const brief = listed.json.services.find((x: { id: string }) => x.id === svc.id).rollout;
          const counts = (x: Record<string, unknown>) => ({
            rolloutId: x['rolloutId'],
            status: x['status'],
            observed: x['observedReplicaCount'],
            healthy: x['healthyReplicaCount'],
            verified: x['verifiedReplicaCount'],
            failed: x['failedReplicaCount'],
          });
          expect(counts(brief), `service ${s}: summary vs full read on ${server.url}`).toEqual(counts(full as unknown as Record<string, unknown>));
          for (const spec of reporterSpecs) {
            const ack = acknowledged.get(`${s}/${spec.clusterId}/${spec.subject}`);
            if (ack?.rolloutId !== plan.rolloutId) continue;
            const entry = full.reporters.find((r) => r.reporterId === `${spec.clusterId}/${spec.subject}`);
            expect(entry, `service ${s}: acknowledged report of ${spec.clusterId}/${spec.subject}`).toBeDefined();
          }
        }
        // What the SSE follower saw across crashes and reconnects: revisions in order, none twice, no gap but after a reset.
        const seen = streamed[s]!;
        expect(seen.length).toBeGreaterThan(0);
        for (let i = 1; i < seen.length; i++) {
          const [a, b] = [seen[i - 1]!, seen[i]!];
          if (b.kind.startsWith('reset')) {
            expect(b.revision, JSON.stringify(seen.slice(Math.max(0, i - 3), i + 2))).toBeGreaterThanOrEqual(a.revision);
            continue;
          }
          expect(b.revision, `service ${s} stream: ${JSON.stringify(seen.slice(Math.max(0, i - 3), i + 2))}`).toBe(a.revision + 1);
        }
      }

      // Quiet now: one final honest report per reporter, each to a different process.
      const finals = new Map<string, number>();
      for (const [s, { svc }] of services.entries()) {
        const plan = (await readPlan(svc.id))!;
        for (const [i, spec] of reporterSpecs.entries()) {
          const token = await fleet.token('cluster', { clusterId: spec.clusterId, subject: spec.subject });
          const session = `final-${spec.clusterId}-${spec.subject}`;
          const body = reportBody(plan, svc.id, {
            session, sequence: 1, nodeNames: spec.nodes, deployments: spec.nodes.map((n) => verifiedReplica(plan, svc.id, n, 0)),
          });
          delete body['reporterNodeNames'];
          const res = await request<any>(fleet.servers[i % fleet.servers.length]!.url, { path: '/v1/deployment-snapshots', token, body });
          expect(res.status, `final report ${s}/${spec.clusterId}/${spec.subject}: ${res.text}`).toBe(200);
          finals.set(`${s}/${spec.clusterId}/${spec.subject}`, 1);
        }
      }

      for (const [s, { svc }] of services.entries()) {
        // The same status from every process, valid, succeeded, each reporter at its final report.
        const statuses: IImageRolloutStatus[] = [];
        for (const server of fleet.servers) {
          const res = await request<any>(server.url, { path: `/v1/services/${svc.id}`, token: api });
          expect(res.status).toBe(200);
          statuses.push(res.json.service.data.imageRolloutStatus);
        }
        const status = statuses[0]!;
        for (const other of statuses.slice(1)) expect(other).toEqual(status);
        expect(validateImageRolloutStatus(status), JSON.stringify(status)).toEqual([]);
        expect(status).toMatchObject({ status: 'succeeded', requiredReplicaCount: 6, observedReplicaCount: 6, verifiedReplicaCount: 6, failedReplicaCount: 0 });
        expect(status.reporters.map((r) => [r.reporterId, r.reporterSessionId, r.reportSequence]).sort()).toEqual(
          reporterSpecs.map((spec) => [`${spec.clusterId}/${spec.subject}`, `final-${spec.clusterId}-${spec.subject}`, 1]).sort()
        );

        // The summary (listing, SSE) agrees with the full read.
        const listed = await request<any>(fleet.servers[0]!.url, { path: '/v1/services?limit=200', token: api });
        const brief = listed.json.services.find((x: { id: string }) => x.id === svc.id).rollout;
        expect(brief).toMatchObject({ status: 'succeeded', observedReplicaCount: 6, healthyReplicaCount: 6, verifiedReplicaCount: 6, failedReplicaCount: 0 });

        // The status event log: consecutive revisions, none twice, ending with the state reached.
        const db = await fleet.db();
        const doc = await db.collection('services').findOne({ _id: svc.id as never }, { projection: { statusEvents: 1, statusRevision: 1 } });
        const events = (doc?.['statusEvents'] ?? []) as Array<{ revision: number, status: string, verifiedReplicaCount: number }>;
        const revisions = events.map((e) => e.revision);
        expect(revisions).toEqual(revisions.map((_, i) => revisions[0]! + i));
        expect(revisions.at(-1)).toBe(doc?.['statusRevision']);
        expect(events.at(-1)).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 6 });

        // Promotions: generations 1..N, every rollout applied, every acknowledged key issued exactly one of them.
        const history = await fullRolloutHistory(httpCaller(fleet.servers[0]!.url), api, svc.id);
        const generations = history.map((h) => h.generation).sort((a, b) => a - b);
        expect(generations).toEqual(generations.map((_, i) => i + 1));
        const plan = (await readPlan(svc.id))!;
        expect(plan.rolloutGeneration).toBe(generations.at(-1));
        const mine = promotedKeys.filter((p) => p.service === s);
        const issued = new Set(history.map((h) => h.rolloutId));
        for (const p of mine) expect(issued.has(p.rolloutId), `acknowledged ${p.key}`).toBe(true);
        expect(new Set(mine.map((p) => p.rolloutId)).size).toBe(mine.length);
        // Every request was retried until answered: the history holds exactly the acknowledged rollouts.
        expect([...issued].sort()).toEqual(mine.map((p) => p.rolloutId).sort());
      }
    }
  }

  return { run };
}
