import { describe, expect, it } from 'vitest';
import type { ReplicaDetail, RolloutView } from '../../../src/cli/release/api.js';
import { LiveView, nodeRows, renderLive, slotState, stabilityNote } from '../../../src/cli/release/live.js';

/** The visible text of a line: without its colour escapes. */
const visible = (line: string): string => line.replaceAll('\x1b[0m', '').replace(new RegExp(`${String.fromCharCode(27)}\\[\\d+m`, 'g'), '');

const digest: `sha256:${string}` = `sha256:${'ab'.repeat(32)}`;

/** The time the frames are drawn at: 4 s after n1-task-1 began running verified. */
const NOW = 1_700_000_059_000;

const replica = (nodeName: string, i: number, over: Partial<ReplicaDetail> = {}): ReplicaDetail => ({
  nodeName, deploymentId: `${nodeName}-task-${i}`, deploymentStatus: 'running', health: 'healthy', verification: 'verified', counted: true, ...over,
});

/** Three nodes × two replicas: n1 fine (one not yet stable), n2 one failed and one missing, n3 not reported. */
function fixture (): RolloutView {
  return {
    serviceId: 'svc_1',
    revision: 7,
    plan: {
      policy: 'immutable-digest',
      rolloutId: 'ro_9',
      rolloutGeneration: 3,
      releaseId: 'rel_2',
      registryHost: 'registry.example.com',
      repository: 'team/app',
      requestedDigest: digest,
      digestPinnedImageReference: `registry.example.com/team/app@${digest}`,
      manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
      createdAt: 1_700_000_000_000,
      mode: 'promotion',
      targetScope: { targetClusterIds: ['c1'], targetNodeNames: ['n1', 'n2', 'n3'], replicasPerNode: 2, requiredReplicaCount: 6 },
    },
    status: {
      rolloutId: 'ro_9',
      rolloutGeneration: 3,
      expectedDigest: digest,
      status: 'deploying',
      requiredReplicaCount: 6,
      observedReplicaCount: 3,
      healthyReplicaCount: 2,
      verifiedReplicaCount: 1,
      failedReplicaCount: 1,
      updatedAt: 1_700_000_060_000,
      reporters: [],
    },
    reporters: [{
      reporterId: 'c1/coreflow',
      clusterId: 'c1',
      reporterSessionId: 's1',
      lastSequence: 4,
      lastReportAt: 1_700_000_060_000,
      observedGeneration: 3,
      nodeNames: ['n1', 'n2'],
      requiredReplicaCount: 4,
      observedReplicaCount: 3,
      healthyReplicaCount: 2,
      verifiedReplicaCount: 1,
      failedReplicaCount: 1,
      replicas: [
        replica('n1', 1, { stability: { state: 'not-yet-stable', windowMs: 10_000, runningVerifiedSince: 1_700_000_055_000 } }),
        replica('n1', 0, { stability: { state: 'stable', windowMs: 10_000 } }),
        replica('n2', 0, { health: 'failed', deploymentStatus: 'failed' }),
        replica('n2', 9, { counted: false, verification: 'other-rollout' }),
      ],
    }],
    blocking: [
      { kind: 'replicas-missing', reason: 'required-replica-missing', nodeName: 'n2', detail: "node 'n2' has 1 of 2 replicas" },
      { kind: 'replica-unhealthy', reason: 'replica-failed', nodeName: 'n2', deploymentId: 'n2-task-0', detail: "replica 'n2-task-0' failed" },
      { kind: 'node-not-reported', reason: 'required-replica-missing', nodeName: 'n3', detail: "no reporter covers node 'n3'" },
    ],
  };
}

describe('the live view of a rollout', () => {
  it('a slot: failed over mismatched over unhealthy over unverified; verified but inside the stability window is not yet stable', () => {
    expect(slotState(undefined)).toBe('missing');
    expect(slotState(replica('n', 0, { health: 'failed', verification: 'mismatched' }))).toBe('failed');
    expect(slotState(replica('n', 0, { health: 'unhealthy', verification: 'mismatched' }))).toBe('mismatched');
    expect(slotState(replica('n', 0, { health: 'unhealthy' }))).toBe('unhealthy');
    expect(slotState(replica('n', 0, { verification: 'missing' }))).toBe('healthy-unverified');
    expect(slotState(replica('n', 0, { verification: 'other-rollout' }))).toBe('healthy-unverified');
    expect(slotState(replica('n', 0, { stability: { state: 'waiting-for-report', windowMs: 10_000 } }))).toBe('not-yet-stable');
    expect(slotState(replica('n', 0, { stability: { state: 'stable', windowMs: 10_000 } }))).toBe('verified');
    expect(slotState(replica('n', 0))).toBe('verified');
  });

  it('one row per target node, counted replicas by deployment id, the first blocking reason of the node', () => {
    expect(nodeRows(fixture(), NOW)).toEqual([
      { nodeName: 'n1', slots: ['verified', 'not-yet-stable'], note: 'not yet stable 4 s of 10 s', blocking: false },
      { nodeName: 'n2', slots: ['failed', 'missing'], note: "required-replica-missing: node 'n2' has 1 of 2 replicas", blocking: true },
      { nodeName: 'n3', slots: ['missing', 'missing'], note: "required-replica-missing: no reporter covers node 'n3'", blocking: true },
    ]);
  });

  it('renders header, node rows, legend and status line; without colour there is not one escape', () => {
    const lines = renderLive({ view: fixture(), width: 160, height: 40, color: false, now: NOW });
    expect(lines).toEqual([
      'service svc_1 · release rel_2 sha256:abababababab · promotion · 3 nodes × 2 replicas',
      'NODE  REPLICAS  STATE',
      'n1    ● ○       not yet stable 4 s of 10 s',
      "n2    ✗ ·       required-replica-missing: node 'n2' has 1 of 2 replicas",
      "n3    · ·       required-replica-missing: no reporter covers node 'n3'",
      '● verified  ○ verified, not yet stable  ◐ healthy, not verified  ▲ unhealthy  ✗ failed  ≠ mismatched  · missing',
      'rollout ro_9 (generation 3) deploying: observed 3/6, healthy 2/6, verified 1/6, failed 1  (updated 2023-11-14T22:14:20Z)',
    ]);
  });

  it('colour: glyphs and reasons are styled; the visible text is the same', () => {
    const plain = renderLive({ view: fixture(), width: 160, height: 40, color: false });
    const coloured = renderLive({ view: fixture(), width: 160, height: 40, color: true });
    expect(coloured[2]).toContain('\x1b[32m●\x1b[0m');
    expect(coloured[3]).toContain('\x1b[31m✗\x1b[0m');
    expect(coloured.map((l) => visible(l))).toEqual(plain);
  });

  it('a newer event overrides the status line; the footer (the final state) replaces it', () => {
    const snapshot = {
      rolloutId: 'ro_9',
      rolloutGeneration: 3,
      status: 'verifying',
      requiredReplicaCount: 6,
      observedReplicaCount: 6,
      healthyReplicaCount: 6,
      verifiedReplicaCount: 5,
      failedReplicaCount: 0
    };
    expect(renderLive({ view: fixture(), snapshot, width: 160, height: 40, color: false }).at(-1))
      .toBe('rollout ro_9 (generation 3) verifying: observed 6/6, healthy 6/6, verified 5/6  (updated 2023-11-14T22:14:20Z)');
    const footer = ['rollout ro_9 (generation 3) failed: replica-failed (…)', 'blocking'];
    const final = renderLive({ view: fixture(), footer, width: 160, height: 40, color: false });
    expect(final.slice(-2)).toEqual(['rollout ro_9 (generation 3) failed: replica-failed (…)', 'blocking']);
    expect(final.filter((l) => l.startsWith('rollout '))).toHaveLength(1);
  });

  it('fits the terminal: lines are clipped to the width, and on a short terminal blocking nodes come first', () => {
    const narrow = renderLive({ view: fixture(), width: 40, height: 40, color: true });
    for (const line of narrow) expect([...visible(line)].length).toBeLessThanOrEqual(39);
    // The final state is drawn once and never redrawn: it is not clipped (the reasons are read in full).
    const reason = "  replica-unhealthy: replica 'n1-task-1' on node 'n1' has run verified for the 10 s stability window: waiting for a report";
    const footer = ['rollout ro_9 (generation 3) mismatched: pulled-digest-mismatch', 'blocking', reason];
    const final = renderLive({ view: fixture(), footer, width: 40, height: 40, color: true });
    expect(final.slice(-3).map(visible)).toEqual(footer);
    for (const line of final.slice(0, -3)) expect([...visible(line)].length).toBeLessThanOrEqual(39);
    const view = fixture();
    view.plan!.targetScope.targetNodeNames = ['n1', ...Array.from({ length: 30 }, (_, i) => `m${i}`), 'n3'];
    const short = renderLive({ view, width: 160, height: 10, color: false });
    expect(short.length).toBeLessThanOrEqual(10);
    expect(short[2]).toMatch(/^n3 /); // the one blocking node comes before n1 and the m nodes, which block nothing
    expect(short.slice(3, 6).map((l) => l.split(' ')[0])).toEqual(['n1', 'm0', 'm1']);
    expect(short.find((l) => l.startsWith('…'))).toMatch(/^… 28 more nodes \(1 blocking in all\)/);
  });

  it('many replicas per node are counted, not drawn one by one', () => {
    const view = fixture();
    view.plan!.targetScope.replicasPerNode = 30;
    expect(renderLive({ view, width: 160, height: 40, color: false, now: NOW })[2]).toMatch(/^n1 {4}1● 1○ 28· +not yet stable 4 s of 10 s$/);
  });

  it('not yet stable: counted on the clock from the server\'s runningVerifiedSince, the replica with the least time decides; ' +
    'then waiting for the next report; a blocking reason of another kind wins', () => {
    const unstable = (since: number) => replica('n1', 0, { stability: { state: 'not-yet-stable', windowMs: 10_000, runningVerifiedSince: since } });
    expect(stabilityNote([unstable(NOW - 4_500)], 2, NOW)).toBe('not yet stable 4 s of 10 s');
    expect(stabilityNote([unstable(NOW - 9_000), unstable(NOW - 2_000)], 2, NOW)).toBe('not yet stable 2 s of 10 s (2 of 2 replicas)');
    expect(stabilityNote([unstable(NOW - 10_000)], 2, NOW)).toBe('stable for the window, waiting for the next report');
    expect(stabilityNote([replica('n1', 0, { stability: { state: 'waiting-for-report', windowMs: 10_000 } })], 1, NOW))
      .toBe('stable for the window, waiting for the next report');
    expect(stabilityNote([unstable(NOW + 3_000)], 1, NOW)).toBe('not yet stable 0 s of 10 s'); // a clock behind the server's
    const view = fixture();
    view.blocking.unshift({ kind: 'replica-not-stable', reason: 'replica-unhealthy', nodeName: 'n1', deploymentId: 'n1-task-1', detail: 'server text' });
    expect(nodeRows(view, NOW)[0]).toMatchObject({ note: 'not yet stable 4 s of 10 s', blocking: true });
    // Whatever the order: the server lists a node's reasons replica by replica, so a not-yet-stable one may come first.
    const starting = { kind: 'replica-unhealthy', reason: 'replica-unhealthy', nodeName: 'n1', deploymentId: 'n1-task-0', detail: "'n1-task-0' starting" };
    view.blocking.splice(1, 0, starting);
    expect(nodeRows(view, NOW)[0]).toMatchObject({ note: "replica-unhealthy: 'n1-task-0' starting", blocking: true });
    view.blocking.unshift({ kind: 'replicas-missing', reason: 'required-replica-missing', nodeName: 'n1', detail: "node 'n1' has 1 of 2" });
    expect(nodeRows(view, NOW)[0]).toMatchObject({ note: "required-replica-missing: node 'n1' has 1 of 2", blocking: true });
  });

  it('the lifecycle under the legend: the deadline counting down while in progress, a push waiting; nothing once it failed', () => {
    const view = fixture();
    view.lifecycle = {
      policy: { progressDeadlineSeconds: 600, stabilityWindowSeconds: 10, autoRollback: { enabled: false, triggers: [] } },
      lastProgressAt: NOW - 8_000,
      deadlineAt: NOW + 592_000,
      queuedPromotion: { releaseId: 'rel_3', tag: 'v3' },
    };
    const lines = renderLive({ view, width: 200, height: 40, color: false, now: NOW });
    expect(lines.slice(-3)).toEqual([
      'deadline  fails at 2023-11-14T22:24:11Z unless it progresses (in 9m 52s; 600 s allowed without progress)',
      'queued    release rel_3 (tag v3) promotes automatically once this rollout settles',
      'rollout ro_9 (generation 3) deploying: observed 3/6, healthy 2/6, verified 1/6, failed 1  (updated 2023-11-14T22:14:20Z)',
    ]);
    expect(renderLive({ view, width: 200, height: 40, color: false, now: NOW + 60_000 }).at(-3)).toContain('(in 8m 52s;');
    expect(renderLive({ view, width: 200, height: 40, color: false, now: NOW + 600_000 }).at(-3)).toContain('(due now;');
    // Failed: nothing to wait for any more; the footer says why (the milestones are for `status`).
    view.lifecycle = {
      lastProgressAt: NOW - 600_000,
      failure: { status: 'failed', reason: 'required-replica-missing', at: NOW, by: 'deadline' },
      deadlineExceeded: { at: NOW, reason: 'required-replica-missing', lastProgressAt: NOW - 600_000, deadlineSeconds: 600 },
    };
    expect(renderLive({ view, width: 200, height: 40, color: false, now: NOW }).at(-2)).toMatch(/^● verified /);
  });

  it('LiveView redraws on its own once a second (the counters move), writes nothing while nothing moves, stops at finish', async () => {
    const writes: string[] = [];
    const live = new LiveView({ write: (c: string) => writes.push(c), columns: 160, rows: 40 }, { color: false, tickMs: 20 });
    const view = fixture();
    view.reporters[0]!.replicas[0]!.stability = { state: 'not-yet-stable', windowMs: 60_000, runningVerifiedSince: Date.now() - 1_000 };
    live.view(view);
    expect(writes[0]).toMatch(/not yet stable 1 s of 60 s/);
    for (let i = 0; i < 150 && !/not yet stable 2 s of 60 s/.test(writes.at(-1) ?? ''); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(writes.at(-1)).toMatch(/not yet stable 2 s of 60 s/);
    // About 50 ticks went by, but only the frames that changed were written: one a second.
    expect(writes.map((w) => /not yet stable (\d+) s/.exec(w)?.[1])).toEqual(['1', '2']);
    live.finish('done');
    const count = writes.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(writes).toHaveLength(count);
  });

  it('LiveView draws in place: back up over the previous frame, clear each line; log lines are written between suspend and resume', () => {
    const writes: string[] = [];
    const live = new LiveView({ write: (c: string) => writes.push(c), columns: 160, rows: 40 }, { color: false });
    live.view(fixture());
    expect(writes[0]?.startsWith('\r\x1b[2Kservice svc_1')).toBe(true);
    expect(writes[0]?.endsWith('\x1b[J')).toBe(true);
    live.view(fixture()); // nothing changed: nothing drawn
    expect(writes).toHaveLength(1);
    live.update({
      rolloutId: 'ro_9',
      rolloutGeneration: 3,
      status: 'verifying',
      requiredReplicaCount: 6,
      observedReplicaCount: 6,
      healthyReplicaCount: 6,
      verifiedReplicaCount: 5,
      failedReplicaCount: 0
    });
    expect(writes[1]?.startsWith('\r\x1b[7A\x1b[2K')).toBe(true); // seven lines up, then redraw
    live.suspend();
    expect(writes[2]).toBe('\r\x1b[7A\x1b[J');
    live.resume();
    expect(writes[3]?.startsWith('\r\x1b[2Kservice')).toBe(true);
    live.finish('rollout ro_9 (generation 3) succeeded: observed 6/6, healthy 6/6, verified 6/6');
    expect(writes[4]).toContain('succeeded');
    // The final frame may wrap (it is not clipped): the old frame is erased before it, not only line by line.
    expect(writes[4]?.startsWith('\r\x1b[7A\x1b[J\x1b[2Kservice')).toBe(true);
    live.update({
      rolloutId: 'ro_9',
      rolloutGeneration: 3,
      status: 'deploying',
      requiredReplicaCount: 6,
      observedReplicaCount: 1,
      healthyReplicaCount: 1,
      verifiedReplicaCount: 1,
      failedReplicaCount: 0
    });
    expect(writes).toHaveLength(5); // after finish nothing moves
  });
});
