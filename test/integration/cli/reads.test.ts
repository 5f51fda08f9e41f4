import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, promote, rollback, type Caller } from '../../support/fixtures.js';
import { verifiedReplica } from '../../support/reports.js';
import { startCliFleet, type CliFleet } from './cliFleet.js';
import { killCliChildren, runCli, startCli } from './harness.js';

/**
 * The read commands and their output formats (-o table|json|yaml), `history`, `status --watch`
 * without a terminal, and `--version` — the built CLI against a real server process.
 */

const ESC = String.fromCharCode(27);

describe('cloudly-release reads', () => {
  let cf: CliFleet;
  let caller: Caller;

  beforeAll(async () => {
    cf = await startCliFleet({ processes: 1 });
    caller = cf.callers[0]!;
  }, 120_000);

  afterAll(async () => {
    killCliChildren();
    await cf?.fleet.close();
  });

  it('--version prints the version of package.json and exits 0, with no configuration', async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string };
    const run = await runCli(['--version'], { CLOUDLY_URL: undefined, CLOUDLY_TOKEN: undefined });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${pkg.version}\n`);
    expect(run.stderr).toBe('');
  });

  it('--service takes a service\'s name as well as its id; an unknown name exits 1 with service-not-found; the server\'s 404 hints at ?name=',
    async () => {
      const { svc, a } = await cf.service();
      expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
      const name = (await caller.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(cf.admin) })).json().service.data.name as string;
      const byId = await runCli(['status', '--service', svc.id, '--json']);
      const byName = await runCli(['status', '--service', name, '--json']);
      expect(byId.code, byId.stderr).toBe(0);
      expect(byName.code, byName.stderr).toBe(0);
      const { rolloutId, rolloutGeneration } = (byId.json() as { plan: { rolloutId: string, rolloutGeneration: number } }).plan;
      expect(rolloutId).toMatch(/^ro_/);
      expect(byName.json()).toMatchObject({ ok: true, command: 'status', serviceId: svc.id, plan: { rolloutId, rolloutGeneration } });

      const unknown = await runCli(['status', '--service', 'no-such-service', '--json']);
      expect(unknown.code).toBe(1);
      expect(unknown.json()).toMatchObject({ ok: false, exitCode: 1, error: { code: 'service-not-found', status: 404 } });

      // A name where the REST API wants an id: the 404 says how to find it by name.
      const res = await caller.inject({ method: 'GET', url: `/v1/services/${name}`, headers: bearer(cf.admin) });
      expect(res.statusCode).toBe(404);
      expect(res.json().detail).toContain(`GET /v1/services?name=${name}`);
    });

  it('version prints this CLI\'s version and the server\'s (GET /v1/version, which needs a token)', async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'package.json'), 'utf8')) as { name: string, version: string };
    const run = await runCli(['version', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toEqual({
      ok: true, command: 'version', exitCode: 0, client: { version: pkg.version }, server: { name: pkg.name, version: pkg.version },
    });
    const text = await runCli(['version']);
    expect(text.stdout).toBe(`client  ${pkg.version}\nserver  ${pkg.version} (${pkg.name})\n`);
    expect((await caller.inject({ method: 'GET', url: '/v1/version' })).statusCode).toBe(401);
  });

  it('history: every rollout newest first as a table; json and yaml carry the entries exactly as the server sent them; pages', async () => {
    const { svc, a, b } = await cf.service();
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    expect((await promote(caller, cf.api, svc.id, b, { generation: 1 })).statusCode).toBe(200);
    const second = await cf.planOf(svc.id);
    expect((await rollback(caller, cf.api, svc.id, a, { generation: 2, currentRolloutId: second.rolloutId })).statusCode).toBe(200);
    const server = (await caller.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollouts?limit=20`, headers: bearer(cf.admin) })).json();

    const text = await runCli(['history', '--service', svc.id]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^GEN\s+ROLLOUT\s+MODE\s+TRIGGER\s+RELEASE\s+DIGEST\s+CREATED\s+OUTCOME\s+OUTCOME AT\s+BY\s+REASON$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['3', '2', '1']);
    const [third, , first] = server.rollouts as Array<{ rolloutId: string }>;
    // A manual rollback (no trigger), in progress; the rollout it replaced ended rolled back, the first one superseded.
    expect(lines[1]).toMatch(new RegExp(`^3\\s+${third!.rolloutId}\\s+rollback of ${second.rolloutId}\\s+-\\s+${a}\\s+sha256:[0-9a-f]{12}\\s+` +
      '\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+in-progress\\s+-\\s+ci-bot\\s'));
    expect(lines[2]).toMatch(new RegExp(`^2\\s+${second.rolloutId}\\s+promotion\\s+-\\s+.*\\s+rolled-back by ${third!.rolloutId}\\s+\\S+Z\\s+ci-bot\\s`));
    expect(lines[3]).toMatch(new RegExp(`^1\\s+${first!.rolloutId}\\s+promotion\\s+-\\s+.*\\s+superseded by ${second.rolloutId}\\s+\\S+Z\\s+ci-bot\\s`));

    const json = await runCli(['history', '--service', svc.id, '--json']);
    expect(json.json()).toEqual({ ok: true, command: 'history', exitCode: 0, serviceId: svc.id, ...server });
    const yaml = await runCli(['history', '--service', svc.id, '-o', 'yaml']);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(parseYaml(yaml.stdout)).toEqual(json.json());

    const page = await runCli(['history', '--service', svc.id, '--limit', '2', '-o', 'json']);
    expect(page.json().rollouts.map((r: { generation: number }) => r.generation)).toEqual([3, 2]);
    expect(page.json().nextCursor).toEqual(expect.any(String));
    const rest = await runCli(['history', '--service', svc.id, '--limit', '2', '--cursor', page.json().nextCursor]);
    expect(rest.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['1']);
    const more = await runCli(['history', '--service', svc.id, '--limit', '2']);
    expect(more.stdout).toContain(`more: cloudly-release history --service ${svc.id} --limit 2 --cursor ${page.json().nextCursor}`);
  });

  it('services: found by name with their rollout state and automation hold; json and yaml as the server sent them; pages', async () => {
    const { svc, a, b } = await cf.service();
    const name = (await caller.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(cf.admin) })).json().service.data.name as string;
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    expect((await promote(caller, cf.api, svc.id, b, { generation: 1 })).statusCode).toBe(200);
    const second = await cf.planOf(svc.id);
    expect((await rollback(caller, cf.api, svc.id, a, { generation: 2, currentRolloutId: second.rolloutId })).statusCode).toBe(200);
    const third = await cf.planOf(svc.id);
    const untouched = await cf.service();

    const text = await runCli(['services', '--name', name]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SERVICE\s+NAME\s+GEN\s+ROLLOUT\s+MODE\s+STATUS\s+VERIFIED\s+RELEASE\s+UPDATED\s+HOLD$/);
    expect(lines.slice(1)).toEqual([expect.stringMatching(new RegExp(
      `^${svc.id}\\s+${name}\\s+3\\s+${third.rolloutId}\\s+rollback\\s+rolling-back\\s+0/2\\s+${a}\\s+\\S+Z\\s+on hold since \\S+Z$`))]);

    const server = (await caller.inject({ method: 'GET', url: `/v1/services?name=${encodeURIComponent(name)}`, headers: bearer(cf.admin) })).json();
    const json = await runCli(['services', '--name', name, '-o', 'json']);
    expect(json.json()).toEqual({ ok: true, command: 'services', exitCode: 0, ...server });
    const yaml = await runCli(['services', '--name', name, '-o', 'yaml']);
    expect(parseYaml(yaml.stdout)).toEqual(json.json());

    // Without a name: every service, a page at a time; the table names the next page's command line.
    const page = await runCli(['services', '--limit', '1', '--json']);
    expect(page.json().services).toHaveLength(1);
    const more = await runCli(['services', '--limit', '1']);
    expect(more.stdout.trim().split('\n').at(-1)).toBe(`more: cloudly-release services --limit 1 --cursor ${page.json().nextCursor}`);
    const all = await runCli(['services', '--limit', '200', '--json']);
    expect(all.json().services.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining([svc.id, untouched.svc.id]));
    expect(all.json().services.find((s: { id: string }) => s.id === untouched.svc.id).rollout).toBeUndefined();
    expect(all.json().nextCursor).toBeUndefined();

    const none = await runCli(['services', '--name', 'no-such-service']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('no services named "no-such-service"\n');
  });

  it('-o yaml is the same document as -o json (list, status); -o table is the default text', async () => {
    const { svc, a } = await cf.service();
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    for (const command of [['list', '--service', svc.id], ['status', '--service', svc.id]]) {
      const json = await runCli([...command, '-o', 'json']);
      const yaml = await runCli([...command, '--output', 'yaml']);
      expect(yaml.code, yaml.stderr).toBe(0);
      expect(parseYaml(yaml.stdout)).toEqual(json.json());
      const table = await runCli([...command, '-o', 'table']);
      const plain = await runCli(command);
      expect(table.code, table.stderr).toBe(0);
      expect(plain.code, plain.stderr).toBe(0);
      // The status text counts the progress deadline down ("in 9m 48s"): two runs a second apart differ there only.
      const countdown = (out: string): string => out.replace(/unless it progresses \(in [^;]+;/, 'unless it progresses (in …;');
      expect(countdown(table.stdout)).toBe(countdown(plain.stdout));
      expect(plain.stdout).toMatch(command[0] === 'list' ? /^RELEASE\s+TAGS\s+DIGEST\s/ : /^service {3}svc_\S+\nrollout {3}ro_/);
    }
    const error = await runCli(['status', '--service', 'svc_missing', '-o', 'yaml']);
    expect(error.code).toBe(1);
    expect(parseYaml(error.stdout)).toMatchObject({ ok: false, command: 'status', exitCode: 1, error: { code: 'service-not-found', status: 404 } });
  });

  it('status --watch without a terminal: plain lines only on change, no escape codes, the final status once; exit 0', async () => {
    const { svc, a } = await cf.service();
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    const rolloutId = (await cf.planOf(svc.id)).rolloutId;
    const watching = startCli(['status', '--service', svc.id, '--watch']);
    await watching.waitForStderr(/waiting for rollout \S+ \(generation 1\) of service \S+, until it ends/);
    expect(await cf.report(svc.id, (plan) => [verifiedReplica(plan, svc.id, 'n1', 0)])).toBe('deploying');
    expect(await cf.allVerified(svc.id)).toBe('succeeded');
    const run = await watching.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(ESC);
    expect(run.stdout).not.toContain('\r');
    const lines = run.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual([
      `rollout ${rolloutId} (generation 1) pending: observed 0/2, healthy 0/2, verified 0/2`,
      `rollout ${rolloutId} (generation 1) deploying: observed 1/2, healthy 1/2, verified 1/2`,
    ]);
    // Then the status text, once: its status line is the only line with the final counts (no progress line
    // "rollout … succeeded" before it); the other line naming success is the rollout's milestone (succeededAt).
    expect(lines[2]).toBe(`service   ${svc.id}`);
    expect(lines.filter((l) => /^service /.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /succeeded/.test(l))).toEqual([
      expect.stringMatching(/^status {4}succeeded: observed 2\/2, healthy 2\/2, verified 2\/2 \(updated \S+Z\)$/),
      expect.stringMatching(/^succeeded \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    ]);
    expect(lines.filter((l) => /^rollout ro_\S+ \(generation 1\) /.test(l))).toHaveLength(2);
  });

  it('status --watch follows a newer rollout that replaces the watched one; -o json is one document at the end', async () => {
    const { svc, a, b } = await cf.service();
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    const watching = startCli(['status', '--service', svc.id, '--watch', '--timeout', '25s', '-o', 'json']);
    await watching.waitForStderr(/\(generation 1\) pending/);
    expect((await promote(caller, cf.api, svc.id, b, { generation: 1 })).statusCode).toBe(200);
    await watching.waitForStderr(/superseded by rollout \S+ \(generation 2\) before it finished; following it/);
    await watching.waitForStderr(/waiting for rollout \S+ \(generation 2\)/);
    expect(await cf.allVerified(svc.id)).toBe('succeeded');
    const run = await watching.done;
    expect(run.code, run.stderr).toBe(0);
    const second = await cf.planOf(svc.id);
    expect(run.json()).toMatchObject({
      ok: true,
      command: 'status',
      exitCode: 0,
      serviceId: svc.id,
      plan: { rolloutId: second.rolloutId, releaseId: b },
      status: { status: 'succeeded' },
      watch: { outcome: 'succeeded', rolloutId: second.rolloutId },
    });
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('status --watch --timeout ends with exit 2 where the rollout stands; a service without a rollout has nothing to watch (exit 0)', async () => {
    const { svc, a } = await cf.service();
    const idle = await runCli(['status', '--service', svc.id, '--watch']);
    expect(idle.code, idle.stderr).toBe(0);
    expect(idle.stdout).toContain('rollout   none yet');
    expect((await promote(caller, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    const run = await runCli(['status', '--service', svc.id, '--watch', '--timeout', '3s', '--json']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.json()).toMatchObject({ ok: false, exitCode: 2, status: { status: 'pending' }, watch: { outcome: 'timeout' } });
    expect(run.stderr).toMatch(/timed out after 3s waiting for rollout \S+ \(generation 1\): pending/);
  });
});
