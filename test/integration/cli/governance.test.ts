import { beforeAll, describe, expect, it } from 'vitest';
import { serviceData } from '../../support/app.js';
import { bearer, promote, pushRelease, registryHost, type FixtureService } from '../../support/fixtures.js';
import { useCliFleet } from './cliFleet.js';
import { runCli } from './harness.js';

/**
 * Governance from the command line (docs/cli.md "Governance"; docs/governance.md): a promotion that
 * needs approvals (202 approval-required → exit 5 and the approve command line), `requests`,
 * `approve` (self-approval refused; the second approval issues the rollout), break-glass through a
 * closed window, `governance stop-the-line on|off`, `pipeline` — the built CLI against a real server
 * process. The CLI runs as ci-bot (role api) unless a test gives another token.
 */

const approvals = { required: 2, approvers: [{ role: 'admin' }, { role: 'api' }], requestTtlSeconds: 3600 };

/** `2026-12-05T16:00`: a minute-precision UTC date-time, as a window's `start`. */
const utcMinute = (ms: number): string => new Date(ms).toISOString().slice(0, 16);

describe('cloudly-release governance', () => {
  const world = useCliFleet({ processes: 1 });
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    [alice, bob] = await Promise.all([world.cf.fleet.token('admin', { subject: 'alice' }), world.cf.fleet.token('api', { subject: 'bob' })]);
  });

  const createService = async (promotionPolicy?: Record<string, unknown>): Promise<FixtureService> => {
    const repository = `team/gov-${Math.random().toString(16).slice(2, 10)}`;
    const created = await world.caller.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(world.cf.admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost, repository },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        ...(promotionPolicy ? { promotionPolicy } : {}),
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    return { id: created.json().service.id, repository };
  };
  const release = async (svc: FixtureService, seed?: string): Promise<string> =>
    (await pushRelease(world.caller, world.cf.api, svc, { tag: 'v1', ...(seed ? { seed } : {}) })).releaseId;

  it('promote needing 2 approvals: exit 5 with the request and the approve command; the requester is refused; the second approver issues it', async () => {
    const svc = await createService({ approvals });
    const a = await release(svc);

    const promoted = await runCli(['promote', '--service', svc.id, '--release', a, '--idempotency-key', `gov-${svc.id}`]);
    expect(promoted.code, promoted.stderr).toBe(5);
    const requestId = /^promotion request (pr_\w+) created: promote of release (\S+) on service (\S+) needs 2 approvals/.exec(promoted.stdout);
    expect(requestId?.slice(2), promoted.stdout).toEqual([a, svc.id]);
    const id = requestId![1]!;
    expect(promoted.stdout).toContain(`\napprove   cloudly-release approve --service ${svc.id} --request ${id}\n`);
    expect(promoted.stdout).toMatch(/^state {5}pending approval \(expires \S+Z; the rollout is issued under generation 0\)$/m);
    expect(await world.cf.history(svc.id)).toHaveLength(0);

    // The same key again with -o json and --wait: the request replayed, carried in the document; --wait does not hang.
    const json = await runCli(['promote', '--service', svc.id, '--release', a, '--idempotency-key', `gov-${svc.id}`, '--wait', '-o', 'json']);
    expect(json.code, json.stderr).toBe(5);
    expect(json.json()).toMatchObject({
      ok: false,
      command: 'promote',
      exitCode: 5,
      state: 'pending-approval',
      replayed: true,
      promotionRequest: { requestId: id, releaseId: a, required: 2, approvals: 0, expectedRolloutGeneration: 0 },
      approveCommand: `cloudly-release approve --service ${svc.id} --request ${id}`,
    });
    expect(json.stderr).toMatch(/cloudly-release: not waiting: nothing is issued before the last approval; then follow it with: cloudly-release wait/);

    const listed = await runCli(['requests', '--service', svc.id]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^REQUEST\s+RELEASE\s+REQUESTER\s+APPROVALS\s+STATE\s+EXPIRES$/);
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+${a}\\s+ci-bot\\s+0/2\\s+pending\\s+\\S+Z$`, 'm'));
    expect((await runCli(['requests', '--service', svc.id, '-o', 'name'])).stdout).toBe(`${id}\n`);

    const self = await runCli(['approve', '--service', svc.id, '--request', id]);
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(/approval-not-allowed: the requester can never approve their own request \('ci-bot'/);

    const first = await runCli(['approve', '--service', svc.id, '--request', id], { CLOUDLY_TOKEN: alice });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout)
      .toMatch(new RegExp(`^approved promotion request ${id} \\(release ${a}\\): approvals 1/2 \\(alice\\)\\nstate {5}pending: 1 more approval needed`));
    expect(await world.cf.history(svc.id)).toHaveLength(0);

    const second = await runCli(['approve', '--service', svc.id, '--request', id], { CLOUDLY_TOKEN: bob });
    expect(second.code, second.stderr).toBe(0);
    const issued = /^quorum reached: rollout (ro_\S+) issued, generation 1 \(release (\S+)\)$/m.exec(second.stdout);
    expect(issued?.[2], second.stdout).toBe(a);
    const plan = await world.cf.planOf(svc.id);
    expect(plan.rolloutId).toBe(issued![1]);
    const status = await runCli(['status', '--service', svc.id]);
    expect(status.stdout).toMatch(new RegExp(`^rollout {3}${plan.rolloutId} \\(generation 1, promotion\\)`, 'm'));
    expect((await runCli(['requests', '--service', svc.id])).stdout)
      .toMatch(new RegExp(`^${id}\\s+${a}\\s+ci-bot\\s+2/2 \\(alice, bob\\)\\s+issued \\(${plan.rolloutId}\\)\\s`, 'm'));
  });

  it('break-glass: request, approval by another principal, promote --break-glass-grant through a closed window; the history records it', async () => {
    const now = Date.now();
    const closed = { name: 'freeze', kind: 'deny', start: utcMinute(now - 3_600_000), timeZone: 'UTC', durationSeconds: 6 * 3600 };
    const svc = await createService({ windows: [closed], breakGlass: { allowed: true, maxSeconds: 1800 } });
    const a = await release(svc);

    const refused = await runCli(['promote', '--service', svc.id, '--release', a]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/promotion-window-closed: .*freeze/);

    const requested = await runCli(['break-glass', 'request', '--service', svc.id, '--release', a, '--reason', 'hotfix for incident 4711']);
    expect(requested.code, requested.stderr).toBe(0);
    const grant = /^grant {5}(bg_\S+)$/m.exec(requested.stdout)?.[1];
    expect(grant, requested.stdout).toBeDefined();
    expect(requested.stdout).toMatch(/^state {5}awaiting-approval \(approve by \S+Z\)$/m);
    expect(requested.stdout).toContain(`approve (another principal): cloudly-release break-glass approve --service ${svc.id} --grant ${grant}`);

    const self = await runCli(['break-glass', 'approve', '--service', svc.id, '--grant', grant!]);
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(/approval-not-allowed: the requester can never approve/);

    const approved = await runCli(['break-glass', 'approve', '--service', svc.id, '--grant', grant!], { CLOUDLY_TOKEN: alice });
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(/^state {5}active \(until \S+Z\)$/m);
    expect(approved.stdout).toMatch(/^approved {2}\S+Z by alice \(admin\)$/m);
    expect(approved.stdout).toContain(`promote   cloudly-release promote --service ${svc.id} --release ${a} --break-glass-grant ${grant}`);

    const passed = await runCli(['promote', '--service', svc.id, '--release', a, '--break-glass-grant', grant!]);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stdout).toMatch(new RegExp(`^promoted release ${a} \\(\\S+\\) on service ${svc.id}: rollout (ro_\\S+), generation 1 ` +
      `\\(through a closed window with break-glass grant ${grant}\\)`));
    const history = await runCli(['history', '--service', svc.id, '-o', 'json']);
    expect(history.json().rollouts[0].breakGlass)
      .toMatchObject({ grantId: grant, reason: 'hotfix for incident 4711', requestedBy: 'ci-bot', approvedBy: 'alice' });

    const shown = await runCli(['break-glass', 'show', '--service', svc.id, '--grant', grant!, '-o', 'yaml']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^ {2}state: used$/m);
    expect((await runCli(['break-glass', 'show', '--service', svc.id, '--grant', grant!])).stdout)
      .toMatch(new RegExp(`^used {6}\\S+Z by rollout ${history.json().rollouts[0].rolloutId}$`, 'm'));
  });

  it('governance stop-the-line on|off: read-modify-write keeps the global windows; promotions refused while on', async () => {
    const yearEnd = { name: 'year-end', kind: 'deny', start: '2030-12-23T00:00', timeZone: 'Europe/Berlin', durationSeconds: 86_400 };
    const put = await world.caller.inject({
      method: 'PUT', url: '/v1/governance', headers: bearer(world.cf.admin), payload: { governance: { windows: [yearEnd] } },
    });
    expect(put.statusCode, put.body).toBe(200);
    const svc = await createService();
    const a = await release(svc);

    const before = await runCli(['governance']);
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toMatch(/^stop-the-line {2}off/);
    expect(before.stdout).toMatch(/^ {2}year-end\s+deny\s+2030-12-23T00:00\s+Europe\/Berlin\s+24h\s+once$/m);

    const forbidden = await runCli(['governance', 'stop-the-line', 'on', '--reason', 'incident 4711']);
    expect(forbidden.code).toBe(1);
    try {
      const on = await runCli(['governance', 'stop-the-line', 'on', '--reason', 'incident 4711: payments degraded'], { CLOUDLY_TOKEN: world.cf.admin });
      expect(on.code, on.stderr).toBe(0);
      expect(on.stdout).toMatch(/^stop-the-line switched ON\nstop-the-line {2}ON since \S+Z by fleet-admin: incident 4711: payments degraded/);
      const shown = await runCli(['governance', '-o', 'json']);
      expect(shown.json()).toMatchObject({
        ok: true,
        governance: { windows: [yearEnd], stopTheLine: { active: true, reason: 'incident 4711: payments degraded', by: 'fleet-admin' } },
      });
      const stopped = await runCli(['promote', '--service', svc.id, '--release', a]);
      expect(stopped.code).toBe(1);
      expect(stopped.stderr).toMatch(/stop-the-line: /);
    } finally {
      const off = await runCli(['governance', 'stop-the-line', 'off'], { CLOUDLY_TOKEN: world.cf.admin });
      expect(off.code, off.stderr).toBe(0);
      expect(off.stdout).toMatch(/^stop-the-line switched off\nstop-the-line {2}off/);
    }
    expect((await runCli(['governance', '-o', 'json'])).json().governance).toMatchObject({ windows: [yearEnd], stopTheLine: { active: false } });
    expect((await runCli(['promote', '--service', svc.id, '--release', a])).code).toBe(0);
  });

  it('pipeline: each stage of the digest, never promoted upstream, then satisfied once it succeeded there', async () => {
    const staging = await createService();
    const production = await createService({ pipeline: { requires: [{ serviceId: staging.id, soakSeconds: 0 }] } });
    const seed = `pipeline-${Date.now()}`;
    const upstream = await release(staging, seed);
    await release(production, seed);

    const never = await runCli(['pipeline', '--service', production.id]);
    expect(never.code, never.stderr).toBe(0);
    expect(never.stdout).toMatch(/^digest {4}sha256:[0-9a-f]{64} \(the newest release\)$/m);
    expect(never.stdout).toMatch(/^allowed {3}no$/m);
    expect(never.stdout).toMatch(/^STAGE\s+SOAK\s+STATE\s+ROLLOUT$/m);
    expect(never.stdout).toMatch(new RegExp(`^${staging.id}\\s+0s\\s+never promoted there\\s+-$`, 'm'));

    expect((await promote(world.caller, world.cf.api, staging.id, upstream, { generation: 0 })).statusCode).toBe(200);
    expect(await world.cf.allVerified(staging.id)).toBe('succeeded');
    const plan = await world.cf.planOf(staging.id);
    const satisfied = await runCli(['pipeline', '--service', production.id]);
    expect(satisfied.stdout).toMatch(/^allowed {3}yes: a promotion of this digest passes the pipeline now$/m);
    expect(satisfied.stdout).toMatch(new RegExp(`^${staging.id}\\s+0s\\s+satisfied \\(soaked \\S+Z\\)\\s+${plan.rolloutId}$`, 'm'));
    const json = await runCli(['pipeline', '--service', production.id, '--digest', plan.requestedDigest, '-o', 'json']);
    expect(json.json()).toMatchObject({ ok: true, digest: plan.requestedDigest, allowed: true, stages: [{ serviceId: staging.id, satisfied: true }] });
    expect((await runCli(['pipeline', '--service', production.id, '--digest', 'sha256:nope'])).code).toBe(3);
  });
});
