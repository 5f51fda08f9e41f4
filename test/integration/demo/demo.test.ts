import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startFleet, type Fleet } from '../../support/fleet.js';

/**
 * `npm run demo` as a newcomer runs it: the built demo (`node dist/src/demo/main.js`) as a
 * child process against a real server process, with a short report interval. Every outcome
 * is checked through the API (GET /v1/services/:id/rollout), not only through the demo's
 * own words. Run `npm run build` first. TEST_LOG=1 prints every run's output.
 */

const demoEntry = join(import.meta.dirname, '..', '..', '..', 'dist', 'src', 'demo', 'main.js');
/**
 * Fast enough for a test, slow enough that the progression is real: replicas settle within ~3 intervals,
 * then count once they have run (verified) for the service's 1 s stability window.
 */
const FAST = ['--interval', '200ms', '--stability-window', '1s', '--linger', '0', '--json'];

interface DemoRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The one JSON summary `--json` prints on stdout. */
  json: () => any; // the test reads fields freely
}

interface DemoChild {
  child: ChildProcess;
  done: Promise<DemoRun>;
  /** Resolves when the progress output (stderr with --json) has a line matching `re`. */
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<void>;
}

const liveChildren = new Set<ChildProcess>();
process.on('exit', () => { for (const c of liveChildren) c.kill('SIGKILL'); });

let fleet: Fleet;
let url: string;
let admin: string;

function startDemo (args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): DemoChild {
  const merged = { PATH: process.env['PATH'] ?? '', CLOUDLY_URL: url, AUTH_JWT_SECRET: fleet.secret, DATA_DIR: '/nonexistent', ...env };
  const child = spawn(process.execPath, [demoEntry, ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(child);
  const output = { stdout: '', stderr: '' };
  const watchers = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => { output.stdout += d; for (const w of [...watchers]) w(); });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => { output.stderr += d; for (const w of [...watchers]) w(); });
  const done = new Promise<DemoRun>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`demo ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${output.stdout}\nstderr: ${output.stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      liveChildren.delete(child);
      for (const w of [...watchers]) w();
      if (process.env['TEST_LOG']) console.log(`$ demo ${args.join(' ')}\n--- exit ${code}\n--- stdout\n${output.stdout}--- stderr\n${output.stderr}`);
      resolve({ code, ...output, json: () => JSON.parse(output.stdout) });
    });
  });
  const waitForOutput = (re: RegExp, ms = 30_000): Promise<void> => new Promise((resolve, reject) => {
    const finish = (err?: Error): void => {
      watchers.delete(check);
      clearTimeout(timer);
      if (err) reject(err); else resolve();
    };
    const check = (): void => {
      if (re.test(output.stderr) || re.test(output.stdout)) finish();
      else if (child.exitCode !== null || child.signalCode !== null) finish(new Error(`the demo exited before printing ${re}\n${output.stderr}`));
    };
    const timer = setTimeout(() => finish(new Error(`no ${re} within ${ms} ms\n${output.stderr}`)), ms);
    watchers.add(check);
    check();
  });
  return { child, done, waitForOutput };
}

const runDemo = async (args: string[], env?: Record<string, string>): Promise<DemoRun> => await startDemo(args, env).done;

async function rolloutOf (serviceId: string): Promise<any> {
  const res = await request(url, { path: `/v1/services/${serviceId}/rollout`, token: admin });
  expect(res.status).toBe(200);
  return res.json;
}

async function serviceIdOf (name: string): Promise<string> {
  const res = await request<any>(url, { path: `/v1/services?name=${name}`, token: admin });
  expect(res.json.services).toHaveLength(1);
  return res.json.services[0].id;
}

/** Polls `condition` (every 100 ms, at most 15 s): waiting for something to happen, never for nothing to. */
async function until (condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `kind:nodeName:reason` of every blocking entry, for readable assertions. */
const blockingOf = (view: any): string[] => view.blocking.map((b: any) => `${b.kind}:${b.nodeName}:${b.reason}`);

beforeAll(async () => {
  if (!existsSync(demoEntry)) throw new Error(`${demoEntry} does not exist: run \`npm run build\` first`);
  fleet = await startFleet({ processes: 1 });
  url = fleet.servers[0]!.url;
  admin = await fleet.token('admin');
}, 120_000);

afterAll(async () => {
  await fleet?.close();
});

describe('npm run demo', () => {
  it('without switches the rollout succeeds on every node, and a second run reuses the service and succeeds again', async () => {
    const first = await runDemo(['--name', 'ok', ...FAST]);
    expect(first.code, first.stderr).toBe(0);
    const one = first.json();
    expect(one).toMatchObject({ ok: true, exitCode: 0, name: 'ok', status: 'succeeded', expected: 'succeeded', release: 'v1', generation: 1 });
    const view = await rolloutOf(one.serviceId);
    expect(view.plan).toMatchObject({ rolloutId: one.rolloutId, releaseId: 'ok-v1' });
    expect(view.status).toMatchObject({
      rolloutId: one.rolloutId, status: 'succeeded', requiredReplicaCount: 12, verifiedReplicaCount: 12, healthyReplicaCount: 12,
    });
    expect(view.reporters.map((r: any) => [r.clusterId, r.nodeNames])).toEqual([
      ['ok-a', ['ok-a1', 'ok-a2', 'ok-a3']],
      ['ok-b', ['ok-b1', 'ok-b2', 'ok-b3']],
    ]);
    // Agents report on change and again without change: more than one report per agent.
    for (const r of view.reporters) expect(r.lastSequence).toBeGreaterThan(1);
    // The demo's stability window is the one in force; replicas were seen running before they counted.
    expect(view.lifecycle.policy).toMatchObject({ stabilityWindowSeconds: 1 });
    expect(first.stderr).toMatch(/deploying: observed \d+\/12, healthy \d+\/12, verified \d+\/12, not yet stable \d+/);
    // A replica still starting (pending evidence: no container to inspect) is "not verified yet", never a mismatch.
    expect(first.stderr).not.toContain('mismatched');
    expect(first.stderr).toContain(`npx cloudly-release wait --service ${one.serviceId}`);
    expect(first.stderr).toContain(`${url}/console`);

    // The second run's --stability-window replaces the first's on the reused service.
    const second = await runDemo(['--name', 'ok', ...FAST, '--stability-window', '0']);
    expect(second.code, second.stderr).toBe(0);
    const two = second.json();
    expect(two).toMatchObject({ serviceId: one.serviceId, status: 'succeeded', generation: 2 });
    expect(two.rolloutId).not.toBe(one.rolloutId);
    expect(second.stderr).toContain(`service ok exists: ${one.serviceId} (reused; stability window 0 s)`);
    expect((await rolloutOf(one.serviceId)).lifecycle.policy).toMatchObject({ stabilityWindowSeconds: 0 });
    expect((await rolloutOf(one.serviceId)).status).toMatchObject({ rolloutId: two.rolloutId, status: 'succeeded' });
    const releases = await request<any>(url, { path: `/v1/services/${one.serviceId}/image-releases`, token: admin });
    expect(releases.json.releases.map((r: any) => [r.id, r.data.observationCount]).sort()).toEqual([['ok-v1', 2], ['ok-v2', 2]]);
  });

  it('--then v2 promotes v2 after v1 succeeded', async () => {
    const run = await runDemo(['--name', 'then', '--then', 'v2', ...FAST]);
    expect(run.code, run.stderr).toBe(0);
    const summary = run.json();
    expect(summary.rollouts.map((r: any) => [r.release, r.generation, r.status])).toEqual([['v1', 1, 'succeeded'], ['v2', 2, 'succeeded']]);
    const view = await rolloutOf(summary.serviceId);
    expect(view.plan).toMatchObject({ releaseId: 'then-v2', rolloutGeneration: 2 });
    expect(view.status).toMatchObject({ status: 'succeeded', verifiedReplicaCount: 12 });
  });

  it('--mismatch NODE: that replica runs another digest and the rollout is mismatched because of it', async () => {
    const run = await runDemo(['--name', 'mm', '--mismatch', 'b2', ...FAST]);
    expect(run.code, run.stderr).toBe(0);
    const summary = run.json();
    expect(summary).toMatchObject({ status: 'mismatched', expected: 'mismatched', mismatchReason: 'pulled-digest-mismatch' });
    const view = await rolloutOf(summary.serviceId);
    expect(view.status).toMatchObject({ status: 'mismatched', mismatchReason: 'pulled-digest-mismatch', verifiedReplicaCount: 11, healthyReplicaCount: 12 });
    // Only the switched replica blocks, with the server's own reason.
    expect(blockingOf(view)).toEqual(['replica-unverified:mm-b2:pulled-digest-mismatch']);
  });

  it('--fail NODE: a replica on that node fails and the rollout is failed', async () => {
    const run = await runDemo(['--name', 'fl', '--fail', 'fl-a1', ...FAST]);
    expect(run.code, run.stderr).toBe(0);
    const view = await rolloutOf(run.json().serviceId);
    expect(view.status).toMatchObject({ status: 'failed', mismatchReason: 'replica-failed', failedReplicaCount: 1, healthyReplicaCount: 11 });
    expect(blockingOf(view)).toEqual(['replica-unhealthy:fl-a1:replica-failed']);
  });

  it('--silent NODE: nobody reports that node, the rollout stays unfinished, and the demo exits 0 at --timeout', async () => {
    const run = await runDemo(['--name', 'sl', '--silent', 'b3', '--timeout', '3s', ...FAST]);
    expect(run.code, run.stderr).toBe(0);
    const summary = run.json();
    expect(summary).toMatchObject({ expected: 'deploying', status: 'deploying' });
    expect(summary.message).toContain('still deploying after 3 s, as predicted');
    const view = await rolloutOf(summary.serviceId);
    expect(view.status.status).not.toBe('succeeded');
    expect(view.status).toMatchObject({ observedReplicaCount: 10, verifiedReplicaCount: 10, requiredReplicaCount: 12 });
    expect(blockingOf(view)).toEqual(['node-not-reported:sl-b3:required-replica-missing']);
    expect(view.reporters.flatMap((r: any) => r.nodeNames)).not.toContain('sl-b3');
  });

  it('exits 1 when the rollout does not end as predicted: another promotion supersedes it', async () => {
    // A silent node keeps the rollout open, so the promotion below lands while the demo watches.
    const demo = startDemo(['--name', 'sup', '--silent', 'a1', '--timeout', '50s', ...FAST]);
    await demo.waitForOutput(/deploying: observed 10\/12/);
    const serviceId = await serviceIdOf('sup');
    const promoted = await request<any>(url, {
      path: `/v1/services/${serviceId}/image-releases/sup-v2/promote`,
      token: admin,
      headers: { 'idempotency-key': `sup-${Date.now()}` },
      body: { expectedRolloutGeneration: 1, enableImmutableImage: true },
    });
    expect(promoted.status).toBe(200);
    const run = await demo.done;
    expect(run.code, run.stderr).toBe(1);
    expect(run.json()).toMatchObject({ ok: false, exitCode: 1, rollouts: [{ end: 'superseded' }] });
    expect(run.json().message).toMatch(/was superseded by/);
    expect((await rolloutOf(serviceId)).plan.rolloutId).toBe(promoted.json.service.data.imageDeployment.rolloutId);
  });

  it('--follow keeps the agents reporting after the verdict until SIGTERM, then stops cleanly with exit 0', async () => {
    const demo = startDemo(['--name', 'fw', '--follow', ...FAST]);
    await demo.waitForOutput(/agents keep reporting until Ctrl-C/);
    const serviceId = await serviceIdOf('fw');
    const sequences = async (): Promise<number[]> => (await rolloutOf(serviceId)).reporters.map((r: any) => r.lastSequence);
    const atVerdict = await sequences();
    await until(async () => (await sequences()).every((s, i) => s > (atVerdict[i] ?? Infinity)), 'both agents report again after the verdict');
    demo.child.kill('SIGTERM');
    const run = await demo.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ ok: true, status: 'succeeded' });
    expect(run.stderr).toMatch(/agents of rollout ro_\S+ stopped/);
  });
});

describe('npm run demo: configuration', () => {
  it('without AUTH_JWT_SECRET and without the development secret: one line saying to run npm start, exit 3', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'demo-nosecret-'));
    try {
      const run = await runDemo([], { AUTH_JWT_SECRET: '', DATA_DIR: empty });
      expect(run.code).toBe(3);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain('npm start');
      expect(run.stderr).toContain(join(empty, 'dev-jwt-secret'));
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('with no server listening: one line saying to run npm start, exit 4', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const run = await runDemo([], { CLOUDLY_URL: `http://127.0.0.1:${port}` });
    expect(run.code).toBe(4);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('ECONNREFUSED');
    expect(run.stderr).toContain('npm start');
  });

  it('a token the server does not accept, an unknown node, an unknown option and a stability window of part of a second are exit 3', async () => {
    const wrongSecret = await runDemo(['--name', 'cfg'], { AUTH_JWT_SECRET: 'x'.repeat(40) });
    expect(wrongSecret.code).toBe(3);
    expect(wrongSecret.stderr).toContain('refused the demo\'s token');
    const unknownNode = await runDemo(['--mismatch', 'z9']);
    expect(unknownNode.code).toBe(3);
    expect(unknownNode.stderr).toContain("no node 'z9'");
    const unknownOption = await runDemo(['--bogus']);
    expect(unknownOption.code).toBe(3);
    expect(unknownOption.stderr).toContain('--bogus');
    const partSecond = await runDemo(['--stability-window', '1.5s']); // the policy field counts whole seconds
    expect(partSecond.code).toBe(3);
    expect(partSecond.stderr).toContain("--stability-window must be whole seconds from 0 to 86400 such as 0, 5s or 1m, got '1.5s'");
  });
});
