import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateImageRolloutStatus, type IImageRolloutStatus, type IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { request, startFleet, type Fleet, type Response } from '../../support/fleet.js';
import { canonical, storedDeploymentsOf } from '../../support/deployments.js';
import { bearer, createFixtureService, httpCaller, promote, pushRelease, registerCluster } from '../../support/fixtures.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually, sleep } from '../../support/wait.js';

/**
 * docs/lifecycle.md "Snapshot reports" / "Rollout status" across real server processes:
 * 3 clusters × 10 nodes × 2 replicas (60 required) reported concurrently by three
 * reporters through two server processes, with interleaved retries (replays, stale
 * re-sends, the same report to both processes at once, late duplicates racing the next
 * report). The rollout is `succeeded` exactly when the last replica is verified, the
 * counts are exact, and every status anybody can see — every report response and every
 * stored status a concurrent observer reads — passes the upstream validator.
 *
 * The seed (REPORTS_FLEET_SEED, printed on failure) fixes what is sent and which retries
 * happen; the interleaving of the concurrent requests is up to the scheduler.
 */

const CLUSTERS = ['c1', 'c2', 'c3'] as const;
const NODES_PER_CLUSTER = 10;
const REPLICAS_PER_NODE = 2;
const REQUIRED = CLUSTERS.length * NODES_PER_CLUSTER * REPLICAS_PER_NODE;
const PER_REPORTER = NODES_PER_CLUSTER * REPLICAS_PER_NODE;
const ROUNDS = Number(process.env['REPORTS_FLEET_ROUNDS'] ?? 3);
const SEED = Number(process.env['REPORTS_FLEET_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
/** Bound on one round; the whole test stays well under a minute. */
const ROUND_DEADLINE_MS = 15_000;

const nodesOf = (cluster: string): string[] =>
  Array.from({ length: NODES_PER_CLUSTER }, (_, i) => `${cluster}-n${String(i + 1).padStart(2, '0')}`);

/** mulberry32: small, seedable, good enough to pick retries. */
function prng (seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p: number): boolean => next() < p,
  };
}
type Rng = ReturnType<typeof prng>;

interface Counts { observed: number, healthy: number, verified: number }

interface Snapshot {
  sequence: number;
  body: Record<string, unknown>;
  expected: Counts;
  deploymentIds: string[];
}

/** What one reporter does after sending report j (all decided up front from the seed). */
interface Step {
  /** Send report j to both processes at once. */
  double: boolean;
  /** Re-send report j-1 at the same time as report j (a retry that lost the race). */
  lateDuplicate: boolean;
  /** Re-sends of report j afterwards (same sequence → replayed). */
  replays: number;
  /** Older reports re-sent afterwards (lower sequence → stale-rollout-report). */
  stale: number[];
  jitterMs: number;
}

interface ReporterScript {
  index: number;
  cluster: string;
  reporterId: string;
  session: string;
  nodes: string[];
  token: string;
  snapshots: Snapshot[];
  steps: Step[];
  closer: boolean;
}

/**
 * One reporter's walk towards "all verified": every replica appears (starting, no evidence)
 * in report 1 or 2, runs by report 3, and gets evidence somewhere in reports 3..K. At least one
 * replica gets its evidence only in the final report K, so no earlier report completes the
 * reporter's part; for the closer exactly one does — its report K-1 leaves exactly one replica
 * of the 60 unverified. Some reports also carry replicas that must never count: a task of the
 * previous rollout and a third replica on a node (beyond replicasPerNode).
 */
function scriptFor (
  rng: Rng, plan: IImmutableImageDeploymentPlan, serviceId: string, index: number, closer: boolean, token: string, round: number,
): ReporterScript {
  const cluster = CLUSTERS[index]!;
  const nodes = nodesOf(cluster);
  const reports = rng.int(6, 10);
  const replicas = nodes.flatMap((node) => Array.from({ length: REPLICAS_PER_NODE }, (_, i) => {
    const presentAt = rng.int(1, 2);
    const runningAt = rng.int(presentAt, 3);
    return { node, i, presentAt, runningAt, evidenceAt: rng.int(3, closer ? reports - 1 : reports) };
  }));
  replicas[rng.int(0, replicas.length - 1)]!.evidenceAt = reports;

  const snapshots: Snapshot[] = [];
  let sequence = rng.int(1, 5);
  const start = Date.now();
  for (let j = 1; j <= reports; j++) {
    const present = replicas.filter((r) => r.presentAt <= j);
    const deployments = present.map((r) => verifiedReplica(plan, serviceId, r.node, r.i, {
      status: r.runningAt <= j ? 'running' : 'starting',
      evidence: r.evidenceAt <= j ? {} : null,
    }));
    if (rng.chance(0.4)) {
      const node = nodes[rng.int(0, nodes.length - 1)]!;
      deployments.push(verifiedReplica(plan, serviceId, node, 9, {
        evidence: { rolloutId: 'ro_previous', rolloutGeneration: 0 },
        deployment: { id: `${node}-previous-${j}`, rolloutId: 'ro_previous', rolloutGeneration: 0 },
      }));
    }
    const full = nodes.filter((n) => present.filter((r) => r.node === n).length === REPLICAS_PER_NODE);
    if (full.length > 0 && rng.chance(0.4)) {
      deployments.push(verifiedReplica(plan, serviceId, full[rng.int(0, full.length - 1)]!, REPLICAS_PER_NODE, { status: 'starting', evidence: null }));
    }
    snapshots.push({
      sequence,
      body: reportBody(plan, serviceId, { session: `session-${cluster}-${SEED}-${round}`, sequence, nodeNames: nodes, deployments, reportedAt: start + j }),
      expected: {
        observed: present.length,
        healthy: present.filter((r) => r.runningAt <= j).length,
        verified: present.filter((r) => r.evidenceAt <= j).length,
      },
      deploymentIds: deployments.map((d) => d['id'] as string),
    });
    sequence += rng.int(1, 3);
  }
  const steps: Step[] = snapshots.map((_, j) => ({
    double: rng.chance(0.3),
    lateDuplicate: j > 0 && rng.chance(0.25),
    replays: rng.chance(0.5) ? rng.int(1, 2) : 0,
    stale: j > 0 && rng.chance(0.4) ? Array.from({ length: rng.int(1, 2) }, () => rng.int(0, j - 1)) : [],
    jitterMs: rng.int(0, 4),
  }));
  return {
    index,
    cluster,
    reporterId: `${cluster}/coreflow-${cluster}`,
    session: `session-${cluster}-${SEED}-${round}`,
    nodes,
    token,
    snapshots,
    steps,
    closer,
  };
}

type Kind = 'report' | 'double' | 'late-duplicate' | 'replay' | 'stale' | 'tail-replay' | 'tail-stale' | 'final';

interface Exchange {
  reporter: number;
  sequence: number;
  kind: Kind;
  server: number;
  sentAt: number;
  receivedAt: number;
  res: Response<{ outcome?: string, status?: IImageRolloutStatus, code?: string, currentRolloutId?: string, currentGeneration?: number }>;
}

/** Two applied reports of different reporters whose requests were in flight at the same time. */
const overlapping = (a: Exchange, b: Exchange): boolean => b !== a && b.reporter !== a.reporter && b.sentAt < a.receivedAt && a.sentAt < b.receivedAt;

/** What one round counts (and the run sums). */
const roundStats = () => ({
  reports: 0,
  requests: 0,
  applied: 0,
  replayed: 0,
  stale: 0,
  doubleBothApplied: 0,
  doubleAppliedReplayed: 0,
  lateReplayed: 0,
  lateStale: 0,
  samples: 0,
  revisions: 0,
  overlappingApplies: 0,
});

/** The rollout view's status and revision: what anybody reading the rollout sees. */
interface Observation { status?: IImageRolloutStatus, revision: number }

const expectedStatusOf = (c: Counts): string => {
  if (c.observed === REQUIRED && c.healthy === REQUIRED && c.verified === REQUIRED) return 'succeeded';
  if (c.observed === REQUIRED && c.healthy === REQUIRED) return 'verifying';
  return c.observed > 0 ? 'deploying' : 'pending';
};

describe('snapshot reports across server processes', () => {
  let fleet: Fleet;
  let admin: string;
  let api: string;
  let tokens: string[];

  beforeAll(async () => {
    fleet = await startFleet({ processes: 2 });
    admin = await fleet.token('admin');
    api = await fleet.token('api');
    tokens = await Promise.all(CLUSTERS.map(async (c) => await fleet.token('cluster', { clusterId: c, subject: `coreflow-${c}` })));
    const caller = httpCaller(fleet.servers[0]!.url);
    for (const c of CLUSTERS) await registerCluster(caller, admin, c, nodesOf(c));
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  it(`3 clusters × ${NODES_PER_CLUSTER} nodes × ${REPLICAS_PER_NODE} replicas, 3 concurrent reporters, 2 processes, interleaved retries: ` +
    `succeeded exactly at the last verified replica (${ROUNDS} rounds)`, async ({ onTestFailed }) => {
    onTestFailed(() => {
      const logs = fleet.servers.map((s) => s.logs.slice(-40).map((line) => `[server ${s.index}] ${line}`).join('\n')).join('\n');
      console.error(`reports.fleet: failed with REPORTS_FLEET_SEED=${SEED} ` +
        `(rerun: REPORTS_FLEET_SEED=${SEED} npx vitest run test/http/reports.fleet.test.ts)\n${logs}`);
    });
    const totals = { ...roundStats(), ms: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const began = performance.now();
      const stats = await runRound(round, SEED + round * 7919);
      for (const key of Object.keys(stats) as Array<keyof typeof stats>) totals[key] += stats[key];
      totals.ms.push(Math.round(performance.now() - began));
    }
    console.log(`reports.fleet seed ${SEED}: ${JSON.stringify(totals)}`);
    // No process logged an error (the fleet keeps each process's last 200 lines).
    const errors = fleet.servers.flatMap((s) => s.logs.filter((line) => /"level":(50|60)/.test(line)));
    expect(errors, `seed ${SEED}`).toEqual([]);
  }, 90_000);

  async function runRound (round: number, seed: number) {
    const rng = prng(seed);
    const where = `seed ${SEED}, round ${round}`;
    const callers = fleet.servers.map((s) => httpCaller(s.url));
    const svc = await createFixtureService(callers[0]!, admin, { clusterIds: [...CLUSTERS], replicasPerNode: REPLICAS_PER_NODE });
    const release = await pushRelease(callers[1]!, api, svc);
    const promoted = await promote(callers[0]!, api, svc.id, release.releaseId, { generation: 0 });
    expect(promoted.statusCode, promoted.body).toBe(200);
    const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    expect(plan.targetScope.requiredReplicaCount).toBe(REQUIRED);
    expect([...plan.targetScope.targetNodeNames].sort()).toEqual(CLUSTERS.flatMap(nodesOf).sort());

    let reads = 0;
    /** The status through the API (GET …/rollout), alternating between the processes. */
    const readStatus = async (): Promise<Observation> => {
      const res = await callers[reads++ % callers.length]!.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(admin) });
      const view = res.json() as { status?: IImageRolloutStatus, revision: number };
      return { status: view.status, revision: view.revision };
    };
    const start = await readStatus();
    const startRevision = start.revision;
    expect(start.status).toMatchObject({ status: 'pending', rolloutId: plan.rolloutId, reporters: [] });

    const closer = rng.int(0, CLUSTERS.length - 1);
    const scripts = CLUSTERS.map((_, i) => scriptFor(rng, plan, svc.id, i, i === closer, tokens[i]!, round));
    const byId = new Map(scripts.map((s) => [s.reporterId, s]));
    const finalSequence = (s: ReporterScript): number => s.snapshots[s.snapshots.length - 1]!.sequence;

    const violations: string[] = [];
    /** Shared by the concurrent loops: `aborted` after the first violation, `observing` until the reporters are through, `closerDone`. */
    const run = { aborted: false, observing: true, closerDone: false };
    const violation = (message: string): void => {
      if (violations.length < 30) violations.push(`${where}: ${message}`);
      run.aborted = true;
    };
    const deadline = performance.now() + ROUND_DEADLINE_MS;

    /** Per reporter: (time the `applied` answer arrived, sequence), for the lost-update checks. */
    const appliedAt: Array<Array<[number, number]>> = scripts.map(() => []);
    const lowestAllowed = (reporter: number, at: number): number =>
      appliedAt[reporter]!.reduce((max, [t, seq]) => (t < at && seq > max ? seq : max), -1);

    /** Everything a status must satisfy, wherever it was seen. `since`: nothing applied before it may be missing. */
    function checkStatus (status: IImageRolloutStatus | undefined, what: string, since: number): void {
      if (!status) return violation(`${what}: no status`);
      const problems = validateImageRolloutStatus(status);
      if (problems.length > 0) violation(`${what}: the upstream validator rejects it: ${problems.join('; ')} ${JSON.stringify(status)}`);
      if (status.rolloutId !== plan.rolloutId || status.rolloutGeneration !== plan.rolloutGeneration || status.expectedDigest !== plan.requestedDigest) {
        violation(`${what}: not about the current rollout: ${JSON.stringify(status)}`);
      }
      if (status.requiredReplicaCount !== REQUIRED) violation(`${what}: requiredReplicaCount ${status.requiredReplicaCount}`);
      for (const key of ['observedReplicaCount', 'healthyReplicaCount', 'verifiedReplicaCount'] as const) {
        if (!(status[key] >= 0 && status[key] <= REQUIRED)) violation(`${what}: ${key} ${status[key]} outside 0..${REQUIRED}`);
      }
      if (status.failedReplicaCount !== 0 || status.mismatchReason !== undefined) {
        violation(`${what}: failed ${status.failedReplicaCount} / ${status.mismatchReason ?? ''}`);
      }
      const ids = status.reporters.map((r) => r.reporterId);
      if (new Set(ids).size !== ids.length) violation(`${what}: a reporter twice: ${ids.join(', ')}`);
      const sums: Counts = { observed: 0, healthy: 0, verified: 0 };
      for (const entry of status.reporters) {
        const script = byId.get(entry.reporterId);
        if (!script) { violation(`${what}: unknown reporter ${entry.reporterId}`); continue; }
        const snapshot = script.snapshots.find((s) => s.sequence === entry.reportSequence);
        if (!snapshot) { violation(`${what}: ${entry.reporterId} at sequence ${entry.reportSequence}, which it never sent`); continue; }
        if (entry.reporterSessionId !== script.session || entry.clusterId !== script.cluster || entry.rolloutId !== plan.rolloutId ||
          JSON.stringify(entry.reporterNodeNames) !== JSON.stringify(script.nodes)) {
          violation(`${what}: ${entry.reporterId}'s entry has the wrong identity: ${JSON.stringify(entry)}`);
        }
        const want = snapshot.expected;
        if (entry.requiredReplicaCount !== PER_REPORTER || entry.observedReplicaCount !== want.observed || entry.healthyReplicaCount !== want.healthy ||
          entry.verifiedReplicaCount !== want.verified || entry.failedReplicaCount !== 0) {
          violation(`${what}: ${entry.reporterId} sequence ${entry.reportSequence} counts ${JSON.stringify(entry)}, ` +
            `expected ${JSON.stringify(want)} of ${PER_REPORTER}`);
        }
        sums.observed += entry.observedReplicaCount;
        sums.healthy += entry.healthyReplicaCount;
        sums.verified += entry.verifiedReplicaCount;
      }
      if (status.observedReplicaCount !== sums.observed || status.healthyReplicaCount !== sums.healthy || status.verifiedReplicaCount !== sums.verified) {
        violation(`${what}: aggregate ${status.observedReplicaCount}/${status.healthyReplicaCount}/${status.verifiedReplicaCount} ` +
          `is not the reporters' sum ${sums.observed}/${sums.healthy}/${sums.verified}`);
      }
      if (status.status !== expectedStatusOf(sums)) {
        violation(`${what}: status '${status.status}' with counts ${JSON.stringify(sums)}, expected '${expectedStatusOf(sums)}'`);
      }
      const allFinal = scripts.every((s) => status.reporters.find((r) => r.reporterId === s.reporterId)?.reportSequence === finalSequence(s));
      if ((status.status === 'succeeded') !== allFinal) violation(`${what}: status '${status.status}' while every reporter at its final report is ${allFinal}`);
      for (const s of scripts) {
        const must = lowestAllowed(s.index, since);
        const seen = status.reporters.find((r) => r.reporterId === s.reporterId)?.reportSequence ?? -1;
        if (seen < must) violation(`${what}: lost update — ${s.reporterId} at ${seen} although sequence ${must} was applied before`);
      }
    }

    /** What a report answers: the aggregate (the reporters list is in the rollout view), consistent with its own counts. */
    function checkAggregate (status: Omit<IImageRolloutStatus, 'reporters'> | undefined, what: string): void {
      if (!status) return violation(`${what}: no status`);
      if (status.rolloutId !== plan.rolloutId || status.rolloutGeneration !== plan.rolloutGeneration || status.requiredReplicaCount !== REQUIRED) {
        violation(`${what}: not about the current rollout: ${JSON.stringify(status)}`);
      }
      const counts = { observed: status.observedReplicaCount, healthy: status.healthyReplicaCount, verified: status.verifiedReplicaCount };
      if (status.status !== expectedStatusOf(counts) || status.failedReplicaCount !== 0 || status.mismatchReason !== undefined) {
        violation(`${what}: status '${status.status}' with counts ${JSON.stringify(status)}`);
      }
    }

    // The observer: reads the status through the API as fast as it can while the reporters run.
    const observed = { samples: 0, revisions: 0, firstSucceededAt: -1, lastRevision: -1, lastJson: '' };
    const storedSequences = new Map<string, number>();
    const observer = (async () => {
      let lastJson = '';
      while (run.observing && !run.aborted) {
        const at = performance.now();
        const { status, revision } = await readStatus();
        const answeredAt = performance.now();
        observed.samples++;
        const json = JSON.stringify(status);
        // Revisions count status events: the same event log on every process, never going back.
        if (revision < observed.lastRevision) violation(`the status revision went backwards: ${observed.lastRevision} → ${revision}`);
        observed.lastRevision = Math.max(observed.lastRevision, revision);
        if (json === lastJson) continue;
        observed.revisions++;
        lastJson = json;
        observed.lastJson = json;
        checkStatus(status, `status read at revision ${revision}`, at);
        // When the answer arrived: a read answered before the final report was even sent must not see success (one that
        // began before may: the server can serve it after applying the report).
        if (status?.status === 'succeeded' && observed.firstSucceededAt < 0) observed.firstSucceededAt = answeredAt;
        for (const entry of status?.reporters ?? []) {
          const before = storedSequences.get(entry.reporterId) ?? -1;
          if (entry.reportSequence < before) {
            violation(`stored: ${entry.reporterId} went back from sequence ${before} to ${entry.reportSequence} (revision ${revision})`);
          }
          storedSequences.set(entry.reporterId, entry.reportSequence);
        }
        for (const id of storedSequences.keys()) {
          if (!status?.reporters.some((r) => r.reporterId === id)) violation(`stored: ${id} disappeared at revision ${revision}`);
        }
      }
    })();

    const stats = roundStats();
    const exchanges: Exchange[] = [];
    const counters = scripts.map((s) => s.index);
    const nextServer = (reporter: number): number => counters[reporter]!++ % fleet.servers.length;

    async function send (script: ReporterScript, j: number, kind: Kind, server = nextServer(script.index)): Promise<Exchange> {
      if (performance.now() > deadline) throw new Error(`${where}: the round took longer than ${ROUND_DEADLINE_MS} ms`);
      const snapshot = script.snapshots[j]!;
      const sentAt = performance.now();
      const res = await request<Exchange['res']['json']>(fleet.servers[server]!.url, {
        path: '/v1/deployment-snapshots', token: script.token, body: snapshot.body, timeoutMs: 10_000,
      });
      const exchange: Exchange = { reporter: script.index, sequence: snapshot.sequence, kind, server, sentAt, receivedAt: performance.now(), res };
      exchanges.push(exchange);
      const what = `${kind} of ${script.reporterId} sequence ${snapshot.sequence} via process ${server} (HTTP ${res.status})`;
      if (res.status === 200) {
        const outcome = res.json.outcome;
        if (outcome !== 'applied' && outcome !== 'replayed') violation(`${what}: outcome ${outcome ?? res.text}`);
        checkAggregate(res.json.status, what);
        if (outcome === 'applied') appliedAt[script.index]!.push([exchange.receivedAt, snapshot.sequence]);
      } else if (res.status === 409 && res.json?.code === 'stale-rollout-report') {
        if (res.json.currentRolloutId !== plan.rolloutId || res.json.currentGeneration !== plan.rolloutGeneration) violation(`${what}: ${res.text}`);
      } else {
        violation(`${what}: ${res.text}`);
      }
      return exchange;
    }
    const outcomeOf = (e: Exchange): string => (e.res.status === 200 ? e.res.json.outcome ?? '?' : e.res.json?.code ?? String(e.res.status));
    const expectOutcome = (e: Exchange, allowed: string[]): void => {
      if (!allowed.includes(outcomeOf(e))) {
        violation(`${e.kind} of ${scripts[e.reporter]!.reporterId} sequence ${e.sequence} via process ${e.server}: ` +
          `${outcomeOf(e)}, expected ${allowed.join(' or ')}: ${e.res.text}`);
      }
    };

    /** Everything the closer checks and sees around its final report. */
    const closing = {
      before: undefined as IImageRolloutStatus | undefined,
      beforeRevision: -1,
      after: undefined as IImageRolloutStatus | undefined,
      afterRevision: -1,
      sentAt: -1,
      answers: [] as Exchange[],
    };

    async function sendReport (script: ReporterScript, j: number): Promise<void> {
      const step = script.steps[j]!;
      const kind: Kind = script.closer && j === script.snapshots.length - 1 ? 'final' : 'report';
      const primary = step.double
        ? Promise.all([0, 1].map(async (server) => await send(script, j, kind === 'final' ? 'final' : 'double', server)))
        : send(script, j, kind).then((e) => [e]);
      const late = step.lateDuplicate ? send(script, j - 1, 'late-duplicate') : undefined;
      const answers = await primary;
      if (kind === 'final') closing.answers = answers;
      const outcomes = answers.map(outcomeOf).sort();
      if (answers.length === 1) expectOutcome(answers[0]!, ['applied']);
      else if (outcomes[0] === 'applied' && outcomes[1] === 'applied') stats.doubleBothApplied++;
      else if (outcomes[0] === 'applied' && outcomes[1] === 'replayed') stats.doubleAppliedReplayed++;
      else {
        violation(`report to both processes of ${script.reporterId} sequence ${script.snapshots[j]!.sequence}: ` +
          `${outcomes.join(', ')} — ${answers.map((a) => a.res.text).join(' / ')}`);
      }
      if (late) {
        // A retry of report j-1 racing report j: harmless either way.
        const e = await late;
        expectOutcome(e, ['replayed', 'stale-rollout-report']);
        if (outcomeOf(e) === 'replayed') stats.lateReplayed++;
        else stats.lateStale++;
      }
      stats.reports++;
      for (let k = 0; k < step.replays && !run.aborted; k++) expectOutcome(await send(script, j, 'replay'), ['replayed']);
      for (const older of step.stale) {
        if (run.aborted) break;
        expectOutcome(await send(script, older, 'stale'), ['stale-rollout-report']);
      }
      if (step.jitterMs > 0) await sleep(step.jitterMs);
    }

    async function runReporter (script: ReporterScript, others: Promise<void>): Promise<void> {
      const last = script.snapshots.length - 1;
      for (let j = 0; j < last && !run.aborted; j++) await sendReport(script, j);
      if (run.aborted) return;
      if (!script.closer) {
        await sendReport(script, last);
        return;
      }
      // The closer's final report is the one that verifies the last replica: the others are done.
      await others;
      if (run.aborted) return;
      const before = await readStatus();
      closing.before = before.status;
      closing.beforeRevision = before.revision;
      closing.sentAt = performance.now();
      await sendReport(script, last);
      const after = await readStatus();
      closing.after = after.status;
      closing.afterRevision = after.revision;
    }

    /** After its final report, a reporter keeps retrying (replays, old reports) until the closer is through. */
    async function tail (script: ReporterScript): Promise<void> {
      const rng = prng(seed ^ (0x5bd1e995 * (script.index + 1)));
      for (let k = 0; k < 40 && !run.closerDone && !run.aborted; k++) {
        const j = rng.chance(0.5) ? script.snapshots.length - 1 : rng.int(0, script.snapshots.length - 2);
        const e = await send(script, j, j === script.snapshots.length - 1 ? 'tail-replay' : 'tail-stale');
        expectOutcome(e, [j === script.snapshots.length - 1 ? 'replayed' : 'stale-rollout-report']);
        await sleep(1);
      }
    }

    try {
      const nonClosers = scripts.filter((s) => !s.closer).map(async (s) => {
        await runReporter(s, Promise.resolve());
        await tail(s);
      });
      const othersDone = Promise.all(nonClosers.map(async (p) => await p.then(() => undefined, () => undefined))).then(() => undefined);
      const closerRun = runReporter(scripts[closer]!, othersDone).finally(() => { run.closerDone = true; });
      const settled = await Promise.allSettled([closerRun, ...nonClosers]);
      for (const s of settled) if (s.status === 'rejected') violation(`a reporter failed: ${String(s.reason)}`);
    } finally {
      // The observer checks every state it sees: it is stopped once it has seen the final state (or the round was
      // aborted), so the final state is checked too — a barrier on the state, not a guess of time.
      const finalJson = JSON.stringify((await readStatus()).status);
      await eventually('the observer saw the final state', async () => run.aborted || observed.lastJson === finalJson, 400, 5)
        .catch((err: Error) => { violation(err.message); });
      run.observing = false;
      await observer;
    }

    const final = await readStatus();
    const finalStatus = final.status;
    const applied = exchanges.filter((e) => e.res.status === 200 && e.res.json.outcome === 'applied');
    Object.assign(stats, {
      requests: exchanges.length,
      applied: applied.length,
      replayed: exchanges.filter((e) => e.res.status === 200 && e.res.json.outcome === 'replayed').length,
      stale: exchanges.filter((e) => e.res.status === 409).length,
      samples: observed.samples,
      revisions: observed.revisions,
      overlappingApplies: applied.filter((a) => applied.some((b) => overlapping(a, b))).length,
    });
    const context = `${where}\n${violations.join('\n')}\n${JSON.stringify(stats)}`;
    expect(violations.length, context).toBe(0);

    // Exactly when the last replica is verified: one short before, succeeded right after.
    const closerScript = scripts[closer]!;
    expect(closing.before, context).toMatchObject({
      status: 'verifying', observedReplicaCount: REQUIRED, healthyReplicaCount: REQUIRED, verifiedReplicaCount: REQUIRED - 1, failedReplicaCount: 0,
    });
    const closerBefore = closing.before!.reporters.find((r) => r.reporterId === closerScript.reporterId);
    expect(closerBefore?.reportSequence).toBe(closerScript.snapshots[closerScript.snapshots.length - 2]!.sequence);
    for (const e of exchanges.filter((x) => x.receivedAt < closing.sentAt && x.res.status === 200)) {
      expect(e.res.json.status?.status, `${context}\n${e.kind} ${e.sequence} answered before the final report was sent`).not.toBe('succeeded');
    }
    expect(closing.answers.filter((a) => outcomeOf(a) === 'applied').length, context).toBeGreaterThanOrEqual(1);
    for (const answer of closing.answers) {
      const status = answer.res.json.status!;
      expect(status, context).toMatchObject({
        status: 'succeeded',
        requiredReplicaCount: REQUIRED,
        observedReplicaCount: REQUIRED,
        healthyReplicaCount: REQUIRED,
        verifiedReplicaCount: REQUIRED,
        failedReplicaCount: 0,
      });
    }
    // The reporters list and the validator's verdict are the rollout's, read after the final report.
    expect(closing.after?.reporters.map((r) => r.reporterId), context).toEqual(scripts.map((s) => s.reporterId));
    expect(validateImageRolloutStatus(closing.after!), context).toEqual([]);
    const appliedFinals = closing.answers.filter((a) => outcomeOf(a) === 'applied');
    const { reporters: _entries, ...afterAggregate } = closing.after!;
    const answeredTheStored = appliedFinals.some((a) => canonical(a.res.json.status) === canonical(afterAggregate));
    expect(answeredTheStored, `${context}\n${JSON.stringify(closing.after)}`).toBe(true);
    // One status event: verifying → succeeded.
    expect(closing.afterRevision, context).toBe(closing.beforeRevision + 1);
    expect(observed.firstSucceededAt === -1 || observed.firstSucceededAt > closing.sentAt, context).toBe(true);

    // The end state: succeeded, exact counts, nothing lost, at most one status event per applied report.
    expect(finalStatus, context).toEqual(closing.after);
    expect(validateImageRolloutStatus(finalStatus!), context).toEqual([]);
    for (const s of scripts) {
      const lastApplied = Math.max(...appliedAt[s.index]!.map(([, seq]) => seq));
      expect(lastApplied, context).toBe(finalSequence(s));
      expect(finalStatus!.reporters.find((r) => r.reporterId === s.reporterId)?.reportSequence, context).toBe(lastApplied);
    }
    expect(final.revision, context).toBeGreaterThan(startRevision);
    expect(final.revision, context).toBeLessThanOrEqual(startRevision + applied.length);
    for (const caller of callers) {
      const read = await caller.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: { authorization: `Bearer ${admin}` } });
      expect(read.json().service.data.imageRolloutStatus, context).toEqual(finalStatus);
    }
    const stored = await storedDeploymentsOf({ db: () => fleet.db(), caller: callers[0]!, token: admin })(svc.id);
    const lastReported = scripts.flatMap((s) => s.snapshots[s.snapshots.length - 1]!.deploymentIds);
    expect(stored.map((d) => d.deploymentId).sort(), context).toEqual(lastReported.sort());
    return stats;
  }
});
