import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promote } from '../../support/fixtures.js';
import { verifiedReplica } from '../../support/reports.js';
import { startCliFleet, type CliFleet } from './cliFleet.js';
import { github, killCliChildren, runCli, startCli } from './harness.js';

/**
 * The CLI against the server's rollout lifecycle control (docs/lifecycle.md "Lifecycle control"): abort,
 * the history's outcomes and triggers, a rollout failed by its progress deadline, and the
 * stability window — the built CLI as a child process against a real server process whose
 * lifecycle sweeper runs every 100 ms (so a 2 s progress deadline is noticed at once).
 */
describe('cloudly-release and the rollout lifecycle', () => {
  let cf: CliFleet;
  let runSeq = 0;

  beforeAll(async () => {
    cf = await startCliFleet({ processes: 1, env: { LIFECYCLE_SWEEP_INTERVAL_MS: '100' } });
  }, 120_000);

  afterAll(async () => {
    killCliChildren();
    await cf?.fleet.close();
  });

  const caller = () => cf.callers[0]!;

  /** a promoted and verified (generation 1), then b promoted (generation 2, in progress). */
  async function verifiedThenPromoted () {
    const s = await cf.service();
    expect((await promote(caller(), cf.api, s.svc.id, s.a, { generation: 0 })).statusCode).toBe(200);
    const first = await cf.planOf(s.svc.id);
    expect(await cf.allVerified(s.svc.id)).toBe('succeeded');
    expect((await promote(caller(), cf.api, s.svc.id, s.b, { generation: 1, currentRolloutId: first.rolloutId })).statusCode).toBe(200);
    return { ...s, first, second: await cf.planOf(s.svc.id) };
  }

  describe('abort', () => {
    it('rolls back to the last verified release and --wait follows it to rolled-back; the same CI step again replays it; ' +
      'the history names it an abort and the aborted rollout aborted', async () => {
      const { svc, a, first, second } = await verifiedThenPromoted();
      const ci = github(`abort-${++runSeq}`);
      const aborting = startCli(['abort', '--service', svc.id, '--reason', 'v2 looks wrong', '--wait', '--timeout', '30s', '--json'], ci);
      await aborting.waitForStderr(/\(generation 3\) rolling-back/);
      expect(await cf.allVerified(svc.id)).toBe('rolled-back');
      const run = await aborting.done;
      expect(run.code, run.stderr).toBe(0);
      const out = run.json();
      expect(out).toMatchObject({
        ok: true,
        command: 'abort',
        operation: 'abort',
        mode: 'rollback',
        releaseId: a,
        generation: 3,
        abortedRolloutId: second.rolloutId,
        replayed: false,
        idempotencyKeySource: 'github-actions',
        wait: { outcome: 'rolled-back', rolloutId: out.rolloutId, generation: 3 },
      });
      expect(out.idempotencyKey).toMatch(/^cr1-gha-abort-[0-9a-f]{32}$/);
      expect(run.stderr).toMatch(new RegExp(`service ${svc.id} is at generation 2 \\(rollout ${second.rolloutId}, `));

      // The step runs again in the same job attempt: the key was used at generation 2, the service is at 3 —
      // the CLI finds the abort by its key's hash and gets the stored outcome back, nothing new is issued.
      const again = await runCli(['abort', '--service', svc.id, '--reason', 'v2 looks wrong', '--json'], ci);
      expect(again.code, again.stderr).toBe(0);
      expect(again.json()).toMatchObject({ rolloutId: out.rolloutId, generation: 3, replayed: true, abortedRolloutId: second.rolloutId });
      expect(again.stderr).toMatch(/this Idempotency-Key already issued rollout \S+ \(generation 3\): asking for its stored outcome/);

      const entries = await cf.history(svc.id);
      expect(entries.map((e) => e.generation)).toEqual([3, 2, 1]);
      expect(entries[0]).toMatchObject({
        rolloutId: out.rolloutId,
        mode: 'rollback',
        releaseId: a,
        rollbackOfRolloutId: second.rolloutId,
        trigger: { kind: 'abort' },
        reason: 'v2 looks wrong',
        issuedBy: { subject: 'ci-bot' },
        outcome: 'rolled-back',
        succeededAt: expect.any(Number),
      });
      expect(entries[1]).toMatchObject({ rolloutId: second.rolloutId, outcome: 'aborted', endedBy: { kind: 'aborted', rolloutId: out.rolloutId } });
      expect(entries[2]).toMatchObject({ rolloutId: first.rolloutId, outcome: 'succeeded', endedBy: { kind: 'superseded', rolloutId: second.rolloutId } });

      // The history as a table: outcome, when it was reached, and what triggered the rollout.
      const table = await runCli(['history', '--service', svc.id]);
      expect(table.code, table.stderr).toBe(0);
      const lines = table.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^GEN\s+ROLLOUT\s+MODE\s+TRIGGER\s+RELEASE\s+DIGEST\s+CREATED\s+OUTCOME\s+OUTCOME AT\s+BY\s+REASON$/);
      const at = (ms: number | undefined) => new Date(ms ?? 0).toISOString().replace(/\.\d{3}Z$/, 'Z');
      expect(lines[1]).toMatch(new RegExp(`^3\\s+${out.rolloutId}\\s+rollback of ${second.rolloutId}\\s+abort\\s+${a}\\s+sha256:\\w{12}\\s+\\S+Z\\s+` +
        `rolled-back\\s+${at(entries[0]!.succeededAt)}\\s+ci-bot\\s+v2 looks wrong$`));
      expect(lines[2]).toMatch(new RegExp(`^2\\s+${second.rolloutId}\\s+promotion\\s+-\\s+.*\\s+aborted by ${out.rolloutId}\\s+${at(entries[1]!.endedAt)}\\s`));
      expect(lines[3]).toMatch(new RegExp(`^1\\s+${first.rolloutId}\\s+promotion\\s+-\\s+.*\\s+succeeded\\s+${at(entries[2]!.succeededAt)}\\s`));
      // json carries the server's entries as they are (outcome, times, trigger included).
      const json = await runCli(['history', '--service', svc.id, '--json']);
      expect(json.json().rollouts).toEqual(entries);
    });

    it('without a verified release to return to: 409 no-verified-release, exit 1, a message that says what to do; nothing changed', async () => {
      const { svc, a } = await cf.service();
      expect((await promote(caller(), cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
      const plan = await cf.planOf(svc.id);
      const run = await runCli(['abort', '--service', svc.id, '--json'], github(`abort-${++runSeq}`));
      expect(run.code, run.stderr).toBe(1);
      expect(run.json()).toMatchObject({
        ok: false, command: 'abort', exitCode: 1, error: { code: 'no-verified-release', status: 409, currentGeneration: 1, currentRolloutId: plan.rolloutId },
      });
      const line = run.stderr.trim().split('\n').at(-1)!;
      expect(line).toMatch(/^cloudly-release: no-verified-release: nothing to abort to/);
      expect(line).toContain(`rollout ${plan.rolloutId} goes on`);
      expect(line).toContain('cloudly-release rollback --service ID --release ID');
      expect(run.stderr).not.toMatch(/retry \d/);
      expect(await cf.history(svc.id)).toHaveLength(1);

      // A rollout that succeeded is the only verified release: still nothing to abort to (text output, same exit code).
      expect(await cf.allVerified(svc.id)).toBe('succeeded');
      const text = await runCli(['abort', '--service', svc.id]);
      expect(text.code, text.stderr).toBe(1);
      expect(text.stdout).toBe('');
      expect(text.stderr).toMatch(/no-verified-release: nothing to abort to/);
    });

    it('text output: one line naming the aborted rollout and the release returned to; a service with no rollout has nothing to abort', async () => {
      const { svc, a, second } = await verifiedThenPromoted();
      const run = await runCli(['abort', '--service', svc.id], github(`abort-${++runSeq}`));
      expect(run.code, run.stderr).toBe(0);
      const [entry] = await cf.history(svc.id);
      expect(run.stdout).toMatch(new RegExp(`^aborted rollout ${second.rolloutId} of service ${svc.id}: rolling back to release ${a} ` +
        `\\(sha256:[0-9a-f]{12}\\): rollout ${entry!.rolloutId}, generation 3\n$`));
      expect(entry).toMatchObject({ generation: 3, mode: 'rollback', releaseId: a, trigger: { kind: 'abort' } });
      expect(run.stderr).toMatch(/^cloudly-release: Idempotency-Key cr1-gha-abort-[0-9a-f]{32} /m);

      const idle = await cf.service();
      const nothing = await runCli(['abort', '--service', idle.svc.id, '--json']);
      expect(nothing.code, nothing.stderr).toBe(1);
      expect(nothing.json()).toMatchObject({ ok: false, command: 'abort', exitCode: 1, error: { code: 'no-current-rollout', currentGeneration: 0 } });
      expect(nothing.stderr.trim().split('\n').at(-1)).toBe(`cloudly-release: no-current-rollout: service ${idle.svc.id} has no rollout to abort`);
      expect(await cf.history(idle.svc.id)).toHaveLength(0);
    });

    it('a stale expectation is a conflict: exit 1 naming the current generation and rollout, not retried, nothing changed', async () => {
      const { svc, first, second } = await verifiedThenPromoted();
      const stale = await runCli(['abort', '--service', svc.id, '--expect-generation', '1', '--json']);
      expect(stale.code, stale.stderr).toBe(1);
      expect(stale.json().error).toMatchObject({ code: 'rollout-generation-conflict', status: 409, currentGeneration: 2, currentRolloutId: second.rolloutId });
      expect(stale.stderr).toMatch(/rollout-generation-conflict: expected generation 1 but the service is at generation 2, .*Not retried/);

      const mismatch = await runCli(['abort', '--service', svc.id, '--expect-generation', '2', '--expect-rollout-id', first.rolloutId, '--json']);
      expect(mismatch.code, mismatch.stderr).toBe(1);
      expect(mismatch.json().error).toMatchObject({ code: 'current-rollout-mismatch', status: 409, currentRolloutId: second.rolloutId });
      expect(mismatch.stderr).toMatch(new RegExp(`current-rollout-mismatch: expected current rollout ${first.rolloutId} but .*Not retried`));
      expect(`${stale.stderr}${mismatch.stderr}`).not.toMatch(/retry \d/);
      expect(await cf.history(svc.id)).toHaveLength(2);
    });
  });

  describe('the progress deadline', () => {
    it('wait: a rollout the deadline failed exits 1, naming the deadline and what is missing (text)', async () => {
      const { svc, a } = await cf.service({ rolloutPolicy: { progressDeadlineSeconds: 2 } });
      expect((await promote(caller(), cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
      const rolloutId = (await cf.planOf(svc.id)).rolloutId;
      const run = await runCli(['wait', '--service', svc.id, '--timeout', '30s']);
      expect(run.code, run.stderr).toBe(1);
      const lines = run.stdout.trim().split('\n');
      const result = lines.find((l) => / failed: /.test(l));
      expect(result).toMatch(new RegExp(`^rollout ${rolloutId} \\(generation 1\\) failed: progress deadline exceeded \\(no progress for 2 s since \\S+Z\\): ` +
        'required-replica-missing \\(observed 0/2, healthy 0/2, verified 0/2\\)$'));
      expect(lines.slice(lines.indexOf(result!) + 1)).toEqual([
        'blocking',
        expect.stringMatching(/^ {2}required-replica-missing: no progress for 2 s \(last at \S+\): the rollout failed at \S+ \(required-replica-missing\); /),
        "  required-replica-missing: no reporter covers node 'n1': 1 required replica missing",
        "  required-replica-missing: no reporter covers node 'n2': 1 required replica missing",
      ]);
    });

    it('promote --wait -o json: the deadline\'s verdict is in the document; progress before it does not save the rollout', async () => {
      const { svc, a } = await cf.service({ rolloutPolicy: { progressDeadlineSeconds: 2 } });
      const promoting = startCli(['promote', '--service', svc.id, '--release', a, '--wait', '--timeout', '30s', '--json'], github(`dl-${++runSeq}`));
      await promoting.waitForStderr(/\(generation 1\) pending/);
      expect(await cf.report(svc.id, (plan) => [verifiedReplica(plan, svc.id, 'n1', 0)])).toBe('deploying');
      const run = await promoting.done;
      expect(run.code, run.stderr).toBe(1);
      const out = run.json();
      expect(out).toMatchObject({
        ok: false,
        exitCode: 1,
        command: 'promote',
        wait: {
          outcome: 'failed',
          status: 'failed',
          mismatchReason: 'required-replica-missing',
          observedReplicaCount: 1,
          verifiedReplicaCount: 1,
          deadlineExceeded: { deadlineSeconds: 2, reason: 'required-replica-missing', at: expect.any(Number), lastProgressAt: expect.any(Number) },
        },
      });
      expect(out.wait.deadlineExceeded.at - out.wait.deadlineExceeded.lastProgressAt).toBeGreaterThanOrEqual(2_000);
      expect(out.wait.blocking.map((b: { kind: string }) => b.kind)).toEqual(['progress-deadline-exceeded', 'replicas-missing']);
      // The CI log says why without parsing the document (the final state after the progress lines, on stderr).
      const final = /^rollout \S+ \(generation 1\) failed: progress deadline exceeded \(no progress for 2 s since \S+\): required-replica-missing /m;
      expect(run.stderr).toMatch(final);
      expect(run.stderr).toMatch(/^blocking\n {2}required-replica-missing: no progress for 2 s /m);
      const [entry] = await cf.history(svc.id);
      expect(entry).toMatchObject({ outcome: 'failed', failureReason: 'required-replica-missing', failedBy: 'deadline', failedAt: expect.any(Number) });
      const table = await runCli(['history', '--service', svc.id]);
      expect(table.stdout.split('\n')[1]).toContain('failed: required-replica-missing (progress deadline exceeded)');
    });

    it('status shows the deadline while the rollout is in progress, and the verdict once the deadline passed', async () => {
      const { svc, a } = await cf.service({ rolloutPolicy: { progressDeadlineSeconds: 3 } });
      expect((await promote(caller(), cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
      const before = await runCli(['status', '--service', svc.id]);
      expect(before.code, before.stderr).toBe(0);
      expect(before.stdout).toMatch(/^deadline {2}fails at \S+Z unless it progresses \(in [0-3]s; 3 s allowed without progress\)$/m);
      expect(before.stdout).toMatch(/^policy {4}progress deadline 3 s, stability window 0 s, automatic rollback off$/m);
      const failed = await runCli(['wait', '--service', svc.id, '--timeout', '30s']);
      expect(failed.code, failed.stderr).toBe(1);
      const after = await runCli(['status', '--service', svc.id]);
      expect(after.stdout).toMatch(/^status {4}failed: observed 0\/2, healthy 0\/2, verified 0\/2 \(required-replica-missing\)/m);
      expect(after.stdout).toMatch(/^failed {4}\S+Z: required-replica-missing \(the progress deadline\)$/m);
      expect(after.stdout).toMatch(/^deadline {2}progress deadline exceeded \(no progress for 3 s since \S+Z\): failed at \S+Z \(required-replica-missing\)$/m);
      expect(after.stdout).not.toMatch(/unless it progresses/);
    });
  });

  describe('the progress deadline, watched', () => {
    it('status --watch ends with exit 0 when the deadline fails the rollout (a read), showing the verdict; wait on it exits 1', async () => {
      const { svc, a } = await cf.service({ rolloutPolicy: { progressDeadlineSeconds: 2 } });
      expect((await promote(caller(), cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
      const rolloutId = (await cf.planOf(svc.id)).rolloutId;
      const run = await runCli(['status', '--service', svc.id, '--watch', '--timeout', '30s']);
      expect(run.code, run.stderr).toBe(0);
      const lines = run.stdout.trim().split('\n');
      // Before the status text at most the pending line (none when the deadline passed before the first read, on a slow machine).
      const head = lines.indexOf(`service   ${svc.id}`);
      expect(lines.slice(0, head)).toEqual(head === 0 ? [] : [`rollout ${rolloutId} (generation 1) pending: observed 0/2, healthy 0/2, verified 0/2`]);
      // The final state once: the status text (not a progress line) says failed, and why.
      expect(lines.filter((l) => /failed/.test(l))).toEqual([
        expect.stringMatching(/^status {4}failed: observed 0\/2, healthy 0\/2, verified 0\/2 \(required-replica-missing\) \(updated \S+Z\)$/),
        expect.stringMatching(/^failed {4}\S+Z: required-replica-missing \(the progress deadline\)$/),
        expect.stringMatching(/^deadline {2}progress deadline exceeded \(no progress for 2 s since \S+Z\): failed at \S+Z \(required-replica-missing\)$/),
        expect.stringMatching(/^ {2}required-replica-missing: no progress for 2 s /),
      ]);
      // A gate on the same rollout now, after the verdict: exit 1 at once.
      const gate = await runCli(['wait', '--service', svc.id, '--rollout-id', rolloutId, '--timeout', '30s', '--json']);
      expect(gate.code, gate.stderr).toBe(1);
      expect(gate.json()).toMatchObject({ ok: false, exitCode: 1, outcome: 'failed', rolloutId, deadlineExceeded: { deadlineSeconds: 2 } });
    });
  });

  describe('the stability window', () => {
    it('status --watch without a terminal ends at --timeout with the status: the replicas not yet stable, and the deadline', async () => {
      const { svc, a } = await cf.service({ rolloutPolicy: { stabilityWindowSeconds: 60 } });
      expect((await promote(caller(), cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
      expect(await cf.allVerified(svc.id)).toBe('deploying');
      const run = await runCli(['status', '--service', svc.id, '--watch', '--timeout', '2s']);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toMatch(/^deadline {2}fails at \S+Z unless it progresses \(in (10m|9m \d+s); 600 s allowed without progress\)$/m);
      expect(run.stdout).toMatch(/^policy {4}progress deadline 600 s, stability window 60 s, automatic rollback off$/m);
      expect(run.stdout).toMatch(/^ {2}replica-unhealthy: replica 'n1-task-0' on node 'n1' is not yet stable: running verified [0-4] s of 60 s$/m);
      expect(run.stdout).toMatch(/^ {2}replica-unhealthy: replica 'n2-task-0' on node 'n2' is not yet stable: running verified [0-4] s of 60 s$/m);
      expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^timed out after 2s waiting for rollout \S+ \(generation 1\): deploying, /);
      const json = await runCli(['status', '--service', svc.id, '--json']);
      expect(json.json().reporters[0].replicas[0].stability).toMatchObject({ state: 'not-yet-stable', windowMs: 60_000 });
    });
  });
});
