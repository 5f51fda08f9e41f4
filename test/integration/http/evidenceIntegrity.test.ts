/**
 * Defects of the report path found by an independent acceptance run (docs/lifecycle.md "Snapshot reports",
 * "How reports are stored", "Rollout status"), reproduced through real server processes on one
 * database (two processes where concurrency matters).
 *
 * Status is observed only through what the API answers (`GET /v1/services/:id`,
 * `GET /v1/services/:id/rollout`, the report answers); stored deployments only through
 * `storedDeployments` (test/support/deployments.ts), the one place that knows how they are stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImageRolloutStatus, IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { canonical, expectedDeployments, storedDeploymentsOf, withoutReporter, type StoredDeployment } from '../../support/deployments.js';
import {
  bearer, createFixtureService, httpCaller, promote, pushRelease, registerCluster, type Caller, type CallerResponse, type FixtureService,
} from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody, verifiedReplica } from '../../support/reports.js';

/** Rounds of each concurrency property (the acceptance run used 20). */
const ROUNDS = Number(process.env['EVIDENCE_ROUNDS'] ?? 20);

interface BlockingEntry { kind: string, reason: string, nodeName?: string, deploymentId?: string, reporterId?: string }
interface RolloutViewReply {
  status?: IImageRolloutStatus,
  reporters: Array<{ reporterId: string, reporterSessionId: string, lastSequence: number }>,
  blocking: BlockingEntry[],
}

/** The aggregate's counts and verdict, wherever they are shown. */
const pickCounts = (s: object | undefined) => {
  if (!s) return undefined;
  const { status, observedReplicaCount, healthyReplicaCount, verifiedReplicaCount, failedReplicaCount } = s as Record<string, unknown>;
  return { status, observed: observedReplicaCount, healthy: healthyReplicaCount, verified: verifiedReplicaCount, failed: failedReplicaCount };
};

describe('report evidence and stored deployments keep their promises', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let api: Caller;
  let admin: string;
  let release: string;
  let storedDeployments: (serviceId: string) => Promise<StoredDeployment[]>;
  /** Cluster tokens by name: `A`/`B` (clusters cA, cB), `P`/`Q` (two reporters of cluster cP), `M` (cluster cM). */
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    api = callers[0]!;
    admin = await fleet.token('admin');
    release = await fleet.token('api');
    const cluster = async (name: string, clusterId: string, subject: string) => { tokens[name] = await fleet.token('cluster', { clusterId, subject }); };
    await Promise.all([
      cluster('A', 'cA', 'coreflow-a'), cluster('B', 'cB', 'coreflow-b'),
      cluster('P', 'cP', 'coreflow-p'), cluster('Q', 'cP', 'coreflow-q'),
      cluster('M', 'cM', 'coreflow-m'),
    ]);
    await registerCluster(api, admin, 'cA', ['a1', 'a2']);
    await registerCluster(api, admin, 'cB', ['b1']);
    await registerCluster(api, admin, 'cP', ['p1', 'p2']);
    await registerCluster(api, admin, 'cM', ['m1']);
    storedDeployments = storedDeploymentsOf({ db: () => fleet.db(), caller: api, token: admin });
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const token = (name: string): string => {
    const t = tokens[name];
    if (t === undefined) throw new Error(`no token ${name}`);
    return t;
  };

  /** A service placed on the clusters, with a first promotion: immutable policy on. */
  async function promoted (clusterIds: string[], replicasPerNode: number): Promise<{ svc: FixtureService, plan: IImmutableImageDeploymentPlan }> {
    const svc = await createFixtureService(api, admin, { clusterIds, replicasPerNode });
    const pushed = await pushRelease(api, release, svc);
    const res = await promote(api, release, svc.id, pushed.releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return { svc, plan: res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan };
  }

  const send = (caller: Caller, name: string, body: Record<string, unknown>): Promise<CallerResponse> =>
    caller.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(token(name)), payload: body });

  const serviceStatus = async (serviceId: string): Promise<IImageRolloutStatus | undefined> => {
    const res = await api.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().service.data.imageRolloutStatus as IImageRolloutStatus | undefined;
  };
  const rolloutView = async (serviceId: string): Promise<RolloutViewReply> => {
    const res = await api.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(admin) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as RolloutViewReply;
  };

  /** A plain deployment (service without the immutable policy). */
  const task = (serviceId: string, id: string, nodeName: string): Record<string, unknown> =>
    ({ id, serviceId, nodeName, status: 'running', deploymentLog: [] });

  describe('a cluster never replaces another cluster\'s deployments', () => {
    /** Who holds which task first (a short failure message), then the records in full. */
    const expectBothClusters = async (serviceId: string, expected: StoredDeployment[]): Promise<void> => {
      const stored = withoutReporter(await storedDeployments(serviceId));
      const where = (list: StoredDeployment[]) => list.map((d) => `${d.clusterId}/${d.nodeName}/${d.deploymentId}`);
      expect(where(stored)).toEqual(where(expected));
      expect(stored).toEqual(expected);
    };

    it('without the immutable policy: cluster A reporting task id X on its node keeps cluster B\'s task X on b1', async () => {
      const svc = await createFixtureService(api, admin, { clusterIds: ['cA', 'cB'], replicasPerNode: 1 });
      const fromB = [task(svc.id, 'task-x', 'b1')];
      const fromA = [task(svc.id, 'task-x', 'a1')];
      const b = await send(api, 'B', { serviceId: svc.id, deployments: fromB, reporterNodeNames: ['b1'], reportedAt: Date.now() });
      expect(b.statusCode, b.body).toBe(200);
      const a = await send(api, 'A', { serviceId: svc.id, deployments: fromA, reporterNodeNames: ['a1'], reportedAt: Date.now() });
      expect(a.statusCode, a.body).toBe(200);
      await expectBothClusters(svc.id, [...expectedDeployments('cA', fromA), ...expectedDeployments('cB', fromB)]);
    });

    it('with the immutable policy: both clusters\' records of task id X stay', async () => {
      const { svc, plan } = await promoted(['cA', 'cB'], 1);
      const fromB = [verifiedReplica(plan, svc.id, 'b1', 0, { deployment: { id: 'task-x' } })];
      const fromA = [verifiedReplica(plan, svc.id, 'a1', 0, { deployment: { id: 'task-x' } })];
      const b = await send(api, 'B', reportBody(plan, svc.id, { session: 'sB', sequence: 1, nodeNames: ['b1'], deployments: fromB }));
      expect(b.statusCode, b.body).toBe(200);
      const a = await send(api, 'A', reportBody(plan, svc.id, { session: 'sA', sequence: 1, nodeNames: ['a1'], deployments: fromA }));
      expect(a.statusCode, a.body).toBe(200);
      await expectBothClusters(svc.id, [...expectedDeployments('cA', fromA), ...expectedDeployments('cB', fromB)]);
    });
  });

  describe('a refused report changes nothing and two reports in flight never interleave (2 processes)', () => {
    it('two reporters of one cluster report the same nodes at once: the stored deployments are exactly the accepted report\'s, ' +
      `its reporter is the status's (${ROUNDS} rounds)`, async () => {
      const bad: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const { svc, plan } = await promoted(['cP'], 2);
        const nodes = ['p1', 'p2'];
        const reports = (['P', 'Q'] as const).map((name) => {
          const deployments = fullReplicas(plan, svc.id, nodes).map((d) => ({ ...d, id: `${name}-${round}-${String(d['id'])}` }));
          const body = reportBody(plan, svc.id, { session: `s-${name}-${round}`, sequence: 1, nodeNames: nodes, deployments });
          return { name, reporterId: `cP/coreflow-${name.toLowerCase()}`, deployments, body };
        });
        // P through one process, Q through the other, at the same moment (alternating which is which).
        const answers = await Promise.all(reports.map((r, i) => send(callers[(i + round) % 2]!, r.name, r.body)));
        const statuses = answers.map((a) => a.statusCode);
        const winners = reports.filter((_, i) => answers[i]!.statusCode === 200);
        const losers = answers.filter((a) => a.statusCode !== 200);
        if (winners.length !== 1 || losers[0]?.statusCode !== 409 || losers[0]?.json().code !== 'stale-rollout-report') {
          bad.push(`round ${round}: answers ${statuses.join('/')} ${answers.map((a) => a.body.slice(0, 160)).join(' | ')}`);
          continue;
        }
        const winner = winners[0]!;
        const stored = withoutReporter(await storedDeployments(svc.id));
        const status = await serviceStatus(svc.id);
        const reporterIds = status?.reporters.map((r) => r.reporterId) ?? [];
        const expected = expectedDeployments('cP', winner.deployments);
        if (canonical(stored) !== canonical(expected) || JSON.stringify(reporterIds) !== JSON.stringify([winner.reporterId])) {
          bad.push(`round ${round}: ${winner.name} got 200, status reporters [${reporterIds.join(', ')}], stored deployments ${describeIds(stored)}`);
        }
      }
      expect(bad, `${bad.length} of ${ROUNDS} rounds broke the promise`).toEqual([]);
    }, 180_000);

    it(`one session sends sequences k and k+1 at once: k+1 is applied and the stored deployments are exactly k+1's (${ROUNDS} rounds)`, async () => {
      const { svc, plan } = await promoted(['cP'], 2);
      const nodes = ['p1', 'p2'];
      const bad: string[] = [];
      const snapshotOf = (sequence: number) => {
        // Each report names other task ids (tasks were replaced in between), so a mix is visible.
        const deployments = fullReplicas(plan, svc.id, nodes).map((d) => ({ ...d, id: `seq${sequence}-${String(d['id'])}` }));
        return { sequence, deployments, body: reportBody(plan, svc.id, { session: 's-P', sequence, nodeNames: nodes, deployments }) };
      };
      for (let round = 0; round < ROUNDS; round++) {
        const k = snapshotOf(10 * round + 1);
        const next = snapshotOf(10 * round + 2);
        const [answerK, answerNext] = await Promise.all([send(callers[round % 2]!, 'P', k.body), send(callers[(round + 1) % 2]!, 'P', next.body)]);
        if (answerNext!.statusCode !== 200 || answerNext!.json().outcome !== 'applied' || ![200, 409].includes(answerK!.statusCode)) {
          bad.push(`round ${round}: answers k ${answerK!.statusCode} ${answerK!.body.slice(0, 120)} ` +
            `/ k+1 ${answerNext!.statusCode} ${answerNext!.body.slice(0, 120)}`);
          continue;
        }
        const stored = withoutReporter(await storedDeployments(svc.id));
        const status = await serviceStatus(svc.id);
        const expected = expectedDeployments('cP', next.deployments);
        if (canonical(stored) !== canonical(expected) || status?.reporters[0]?.reportSequence !== next.sequence) {
          bad.push(`round ${round}: k answered ${answerK!.statusCode}, status at sequence ${status?.reporters[0]?.reportSequence ?? '-'}, ` +
            `stored deployments ${describeIds(stored)}`);
        }
      }
      expect(bad, `${bad.length} of ${ROUNDS} rounds broke the promise`).toEqual([]);
    }, 180_000);
  });

  it(`concurrent reports of one reporter that change the counts or leave them as they are keep the status summary exact (${ROUNDS} rounds)`, async () => {
    // The summary (what the service listing, report answers and SSE events show) must end equal to
    // what the reporters' latest records say (what GET /v1/services/:id sums), whichever of the
    // reports skipped the summary write because it changed nothing.
    const { svc, plan } = await promoted(['cP'], 2);
    const nodes = ['p1', 'p2'];
    const bodyOf = (sequence: number, failed: number) => reportBody(plan, svc.id, {
      session: 's-P',
      sequence,
      nodeNames: nodes,
      deployments: fullReplicas(plan, svc.id, nodes).map((d, i) => (i < failed ? { ...d, status: 'failed' } : d)),
    });
    const named = await api.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) });
    const name = String(named.json().service.data.name);
    const listed = async () => {
      const res = await api.inject({ method: 'GET', url: `/v1/services?name=${encodeURIComponent(name)}`, headers: bearer(admin) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().services[0]?.rollout as Record<string, unknown> | undefined;
    };
    const bad: string[] = [];
    let sequence = 1;
    for (let round = 0; round < ROUNDS; round++) {
      // Three reports at once through both processes; each fails 0, 1 or 2 replicas (often the same as before).
      const sends = [0, 1, 2].map((i) => send(callers[(round + i) % 2]!, 'P', bodyOf(sequence + i, (round * 7 + i * (round % 3)) % 3)));
      sequence += 3;
      const answers = await Promise.all(sends);
      const unexpected = answers.filter((a) => a.statusCode !== 200 && !(a.statusCode === 409 && a.json().code === 'stale-rollout-report'));
      if (unexpected.length > 0) bad.push(`round ${round}: ${unexpected.map((a) => `${a.statusCode} ${a.body.slice(0, 100)}`).join('; ')}`);
      const status = await serviceStatus(svc.id);
      const row = await listed();
      const fromRecords = pickCounts(status);
      const fromSummary = pickCounts(row);
      if (canonical(fromRecords) !== canonical(fromSummary)) {
        bad.push(`round ${round}: the records say ${JSON.stringify(fromRecords)}, the summary ${JSON.stringify(fromSummary)}`);
      }
    }
    expect(bad, `${bad.length} of ${ROUNDS} rounds broke the promise`).toEqual([]);
  }, 180_000);

  it('a session\'s sequence never goes backwards, even after another session of the same reporter reported: ' +
    'the lower sequence is refused and changes nothing', async () => {
    const { svc, plan } = await promoted(['cM'], 2);
    const T = Date.now();
    const first = await send(api, 'M', reportBody(plan, svc.id, {
      session: 'sA1', sequence: 5, nodeNames: ['m1'], reportedAt: T, deployments: fullReplicas(plan, svc.id, ['m1']),
    }));
    expect(first.statusCode, first.body).toBe(200);
    const second = await send(api, 'M', reportBody(plan, svc.id, {
      session: 'sA2', sequence: 3, nodeNames: ['m1'], reportedAt: T + 1_000, deployments: [verifiedReplica(plan, svc.id, 'm1', 0)],
    }));
    expect(second.statusCode, second.body).toBe(200);
    const before = JSON.stringify({
      status: await serviceStatus(svc.id), reporters: (await rolloutView(svc.id)).reporters, deployments: await storedDeployments(svc.id),
    });

    // sA1 already reached sequence 5: its sequence 4 is older than what it said before.
    const backwards = await send(api, 'M', reportBody(plan, svc.id, {
      session: 'sA1',
      sequence: 4,
      nodeNames: ['m1'],
      reportedAt: T + 1_500,
      deployments: [verifiedReplica(plan, svc.id, 'm1', 7, { status: 'starting', evidence: null })],
    }));
    expect({ status: backwards.statusCode, code: backwards.json().code }, backwards.body).toEqual({ status: 409, code: 'stale-rollout-report' });
    const after = JSON.stringify({
      status: await serviceStatus(svc.id), reporters: (await rolloutView(svc.id)).reporters, deployments: await storedDeployments(svc.id),
    });
    expect(after).toBe(before);
  });

  it('a session retired in one rollout stays retired in the next (docs/api.md: "retires the one it replaces for good"), ' +
    'through either process', async () => {
    const { svc, plan } = await promoted(['cM'], 1);
    const T = Date.now();
    const report = (p: IImmutableImageDeploymentPlan, session: string, sequence: number, at: number, via = 0) =>
      send(callers[via]!, 'M', reportBody(p, svc.id, { session, sequence, nodeNames: ['m1'], reportedAt: at, deployments: fullReplicas(p, svc.id, ['m1']) }));
    expect((await report(plan, 'S-old', 100, T - 3_000)).statusCode).toBe(200);
    expect((await report(plan, 'S-new', 1, T - 2_000)).statusCode).toBe(200);
    expect((await report(plan, 'S-old', 101, T - 1_500)).statusCode).toBe(409);

    // The next rollout: the live session reports first, then the retired one tries again.
    const next = await pushRelease(api, release, svc);
    const promoted2 = await promote(api, release, svc.id, next.releaseId, { generation: 1 });
    expect(promoted2.statusCode, promoted2.body).toBe(200);
    const plan2 = promoted2.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    expect((await report(plan2, 'S-new', 5, T - 1_000, 1)).statusCode).toBe(200);
    const zombie = await report(plan2, 'S-old', 1, T, 0);
    expect({ status: zombie.statusCode, code: zombie.json().code }, zombie.body).toEqual({ status: 409, code: 'stale-rollout-report' });
    expect((await rolloutView(svc.id)).reporters.map((r: { reporterSessionId: string }) => r.reporterSessionId)).toEqual(['S-new']);

    // And in the rollout after that, with the retired session reporting first.
    const third = await pushRelease(api, release, svc);
    const promoted3 = await promote(api, release, svc.id, third.releaseId, { generation: 2 });
    expect(promoted3.statusCode, promoted3.body).toBe(200);
    const plan3 = promoted3.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const first = await report(plan3, 'S-old', 2, T + 1_000, 1);
    expect({ status: first.statusCode, code: first.json().code }, first.body).toEqual({ status: 409, code: 'stale-rollout-report' });
    expect((await report(plan3, 'S-new', 6, T + 2_000, 0)).statusCode).toBe(200);
  });

  it('a process that wrote the reporter\'s record decides nothing from it once another process wrote a later one: ' +
    'an older report is refused, a repeat of the later one is a replay, the next one applies', async () => {
    const { svc, plan } = await promoted(['cM'], 2);
    const [p0, p1] = [callers[0]!, callers[1]!];
    const T = Date.now();
    const body = (sequence: number, deployments: Record<string, unknown>[]) =>
      reportBody(plan, svc.id, { session: 's-cross', sequence, nodeNames: ['m1'], reportedAt: T + sequence, deployments });
    const one = body(1, [verifiedReplica(plan, svc.id, 'm1', 0)]);
    const two = body(2, fullReplicas(plan, svc.id, ['m1']));
    const outcome = (res: CallerResponse) => ({ status: res.statusCode, outcome: res.json().outcome, code: res.json().code });

    expect(outcome(await send(p0, 'M', one))).toEqual({ status: 200, outcome: 'applied', code: undefined });
    expect(outcome(await send(p1, 'M', two))).toEqual({ status: 200, outcome: 'applied', code: undefined });
    const settled = JSON.stringify({ status: await serviceStatus(svc.id), deployments: await storedDeployments(svc.id) });

    // Process 0 last saw sequence 1: sequence 1 again is older than what is stored now, not a replay.
    expect(outcome(await send(p0, 'M', one))).toEqual({ status: 409, outcome: undefined, code: 'stale-rollout-report' });
    // Sequence 2 again through process 0 is the replay of what process 1 applied.
    expect(outcome(await send(p0, 'M', two))).toEqual({ status: 200, outcome: 'replayed', code: undefined });
    expect(JSON.stringify({ status: await serviceStatus(svc.id), deployments: await storedDeployments(svc.id) })).toBe(settled);
    // And the next report through either process applies on top of sequence 2.
    const three = body(3, [verifiedReplica(plan, svc.id, 'm1', 0), verifiedReplica(plan, svc.id, 'm1', 1, { status: 'failed' })]);
    expect(outcome(await send(p0, 'M', three))).toEqual({ status: 200, outcome: 'applied', code: undefined });
    expect(outcome(await send(p1, 'M', body(2, fullReplicas(plan, svc.id, ['m1']))))).toMatchObject({ status: 409, code: 'stale-rollout-report' });
    const status = await serviceStatus(svc.id);
    expect({ sequence: status?.reporters[0]?.reportSequence, failed: status?.failedReplicaCount }).toEqual({ sequence: 3, failed: 1 });
  });

  it('a running task of the current rollout whose evidence does not verify keeps the rollout from succeeding, ' +
    'even when another task on its node verifies', async () => {
    const { svc, plan } = await promoted(['cM'], 1);
    const other = `sha256:${'e'.repeat(64)}`;
    const deployments = [
      verifiedReplica(plan, svc.id, 'm1', 0),
      // Same rollout and generation, running, but the engine resolved another digest.
      verifiedReplica(plan, svc.id, 'm1', 1, { evidence: { resolvedDigest: other } }),
    ];
    const res = await send(api, 'M', reportBody(plan, svc.id, { session: 's-m', sequence: 1, nodeNames: ['m1'], deployments }));
    expect(res.statusCode, res.body).toBe(200);
    const status = await serviceStatus(svc.id);
    expect({ status: status?.status, mismatchReason: status?.mismatchReason }).toEqual({ status: 'mismatched', mismatchReason: 'pulled-digest-mismatch' });
    const view = await rolloutView(svc.id);
    expect(view.blocking).toEqual(expect.arrayContaining([
      expect.objectContaining({ nodeName: 'm1', deploymentId: 'm1-task-1', reason: 'pulled-digest-mismatch' }),
    ]));
  });

  describe('honest agents are not called forgers: a replica not running yet with pending evidence is "not verified yet"', () => {
    /** What Coreflow sends for a task Swarm has scheduled but that runs no container yet: no inspection. */
    const pendingEvidence = (plan: IImmutableImageDeploymentPlan, source: 'task-spec' | undefined): Record<string, unknown> => ({
      verificationStatus: 'pending',
      rolloutId: plan.rolloutId,
      rolloutGeneration: plan.rolloutGeneration,
      expectedDigest: plan.requestedDigest,
      serviceImageReference: plan.digestPinnedImageReference,
      taskImageReference: plan.digestPinnedImageReference,
      evidenceSource: source,
      observedAt: Date.now(),
    });
    /** verifiedReplica with its evidence replaced by exactly `evidence` (no inspection fields at all). */
    const pendingReplica = (plan: IImmutableImageDeploymentPlan, serviceId: string, index: number, status: string, evidence: Record<string, unknown>) => {
      const replica = verifiedReplica(plan, serviceId, 'm1', index, { status });
      replica['runtimeImageEvidence'] = Object.fromEntries(Object.entries(evidence).filter(([, v]) => v !== undefined));
      return replica;
    };

    for (const [status, source] of [['starting', 'task-spec'], ['scheduled', undefined]] as const) {
      it(`a '${status}' replica with pending evidence (evidenceSource ${source ?? 'absent'}) keeps the rollout deploying, ` +
        'and it succeeds once later reports verify', async () => {
        const { svc, plan } = await promoted(['cM'], 2);
        const early = [verifiedReplica(plan, svc.id, 'm1', 0), pendingReplica(plan, svc.id, 1, status, pendingEvidence(plan, source))];
        const first = await send(api, 'M', reportBody(plan, svc.id, { session: 's-m', sequence: 1, nodeNames: ['m1'], deployments: early }));
        expect(first.statusCode, first.body).toBe(200);
        const during = await serviceStatus(svc.id);
        expect({ status: during?.status, mismatchReason: during?.mismatchReason }).toEqual({ status: 'deploying', mismatchReason: undefined });

        const later = await send(api, 'M', reportBody(plan, svc.id, {
          session: 's-m', sequence: 2, nodeNames: ['m1'], deployments: fullReplicas(plan, svc.id, ['m1']),
        }));
        expect(later.statusCode, later.body).toBe(200);
        expect((await serviceStatus(svc.id))?.status).toBe('succeeded');
      });
    }

    it('but a RUNNING replica without container inspection evidence stays a mismatch (container-inspection-unavailable)', async () => {
      const { svc, plan } = await promoted(['cM'], 2);
      const deployments = [verifiedReplica(plan, svc.id, 'm1', 0), pendingReplica(plan, svc.id, 1, 'running', pendingEvidence(plan, 'task-spec'))];
      const res = await send(api, 'M', reportBody(plan, svc.id, { session: 's-m', sequence: 1, nodeNames: ['m1'], deployments }));
      expect(res.statusCode, res.body).toBe(200);
      const status = await serviceStatus(svc.id);
      expect({ status: status?.status, mismatchReason: status?.mismatchReason })
        .toEqual({ status: 'mismatched', mismatchReason: 'container-inspection-unavailable' });
    });
  });
});

/** "P: 4 (cP/p1…), Q: 0" — whose task ids the stored list holds, for the failure message. */
function describeIds (stored: StoredDeployment[]): string {
  if (stored.length === 0) return 'EMPTY';
  const byPrefix = new Map<string, number>();
  for (const d of stored) {
    const prefix = d.deploymentId.split('-')[0] ?? '';
    byPrefix.set(prefix, (byPrefix.get(prefix) ?? 0) + 1);
  }
  return [...byPrefix].map(([prefix, n]) => `${prefix}×${n}`).join(' + ');
}
