import { describe, expect, it } from 'vitest';
import { bearer, promote } from '../../support/fixtures.js';
import { verifiedReplica } from '../../support/reports.js';
import { useCliFleet } from './cliFleet.js';
import { runCli } from './harness.js';

/**
 * kubectl's habits in cloudly-release (issue 23): `get services|releases|rollouts` with
 * -o table|wide|name|json, `-o wide` / `-o name` on the listings, and `describe service` — the
 * built CLI against a real server process.
 */

describe('cloudly-release get / describe / -o wide|name', () => {
  const world = useCliFleet({ processes: 1 });
  const promoteAs = async (serviceId: string, releaseId: string, generation: number): Promise<void> => {
    expect((await promote(world.caller, world.cf.api, serviceId, releaseId, { generation })).statusCode).toBe(200);
  };
  const nameOf = async (serviceId: string): Promise<string> =>
    (await world.caller.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(world.cf.admin) })).json().service.data.name as string;

  it('-o name prints one identifier a line and nothing else: service names, release ids, rollout ids', async () => {
    const { svc, a, b } = await world.cf.service();
    const name = await nameOf(svc.id);
    await promoteAs(svc.id, a, 0);
    await promoteAs(svc.id, b, 1);
    const rollouts = (await world.cf.history(svc.id)).map((r) => r.rolloutId);

    for (const argv of [['services', '--name', name, '-o', 'name'], ['get', 'services', '--name', name, '-o', 'name']]) {
      const run = await runCli(argv);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${name}\n`);
    }
    for (const argv of [['list', '--service', svc.id, '-o', 'name'], ['get', 'releases', '--service', name, '-o', 'name']]) {
      const run = await runCli(argv);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${b}\n${a}\n`); // newest observation first
    }
    for (const argv of [['history', '--service', svc.id, '-o', 'name'], ['get', 'rollouts', '-s', svc.id, '-o', 'name']]) {
      const run = await runCli(argv);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${rollouts.join('\n')}\n`);
    }
    // A page with more after it: stdout stays ids only, the next page's command line goes to stderr.
    const page = await runCli(['get', 'rollouts', '--service', svc.id, '--limit', '1', '-o', 'name']);
    expect(page.stdout).toBe(`${rollouts[0]}\n`);
    expect(page.stderr).toMatch(/^cloudly-release: more: cloudly-release history --service \S+ --limit 1 --cursor \S+\n$/);
    // Nothing to list: nothing at all on stdout (not a blank line, not "no services").
    const none = await runCli(['get', 'services', '--name', 'no-such-service', '-o', 'name']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('');
  });

  it('-o wide adds columns to the table of each listing; get is the same read as services, list and history', async () => {
    const { svc, a } = await world.cf.service();
    const name = await nameOf(svc.id);
    await promoteAs(svc.id, a, 0);

    const services = await runCli(['get', 'services', '--name', name, '-o', 'wide']);
    expect(services.code, services.stderr).toBe(0);
    const [serviceHeader, serviceRow] = services.stdout.split('\n');
    expect(serviceHeader)
      .toMatch(/^SERVICE\s+NAME\s+GEN\s+ROLLOUT\s+MODE\s+STATUS\s+VERIFIED\s+RELEASE\s+UPDATED\s+HOLD\s+DIGEST\s+OBSERVED\s+HEALTHY\s+FAILED$/);
    expect(serviceRow).toMatch(new RegExp(`^${svc.id}\\s+${name}\\s+1\\s+ro_\\S+\\s+promotion\\s+pending\\s+0/2\\s+${a}\\s+\\S+Z\\s+-\\s+` +
      'sha256:[0-9a-f]{12}\\s+0/2\\s+0/2\\s+0$'));

    const releases = await runCli(['get', 'releases', '--service', svc.id, '-o', 'wide']);
    expect(releases.code, releases.stderr).toBe(0);
    expect(releases.stdout.split('\n')[0])
      .toMatch(/^RELEASE\s+TAGS\s+DIGEST\s+FIRST OBSERVED\s+ACCEPTED\s+LAST OBSERVED\s+OBSERVATIONS\s+PROMOTIONS\s+LAST PROMOTED\s+IMAGE$/);
    const promoted = `^${a}\\s+v1\\s+sha256:\\S+\\s+\\S+Z\\s+yes \\(\\S+Z\\)\\s+\\S+Z\\s+1\\s+1\\s+\\S+Z\\s+\\S+@sha256:[0-9a-f]{64}$`;
    expect(releases.stdout).toMatch(new RegExp(promoted, 'm'));

    const rollouts = await runCli(['get', 'rollouts', '--service', svc.id, '-o', 'wide']);
    expect(rollouts.code, rollouts.stderr).toBe(0);
    expect(rollouts.stdout.split('\n')[0]).toMatch(/\bBY\s+PREVIOUS RELEASE\s+TARGETS\s+REASON$/);
    expect(rollouts.stdout.split('\n')[1]).toMatch(/\sci-bot\s+-\s+c1 \(2 replicas\)\s/);
    // The plain table has none of the wide columns.
    expect((await runCli(['get', 'rollouts', '--service', svc.id])).stdout.split('\n')[0]).not.toContain('TARGETS');

    // The document is the listing's, under the command the user typed.
    for (const [get, plain] of [[['get', 'services', '--name', name], ['services', '--name', name]],
      [['get', 'releases', '--service', svc.id], ['list', '--service', svc.id]],
      [['get', 'rollouts', '--service', svc.id], ['history', '--service', svc.id]]] as const) {
      const g = await runCli([...get, '--json']);
      const p = await runCli([...plain, '--json']);
      expect(g.code, g.stderr).toBe(0);
      expect({ ...g.json(), command: plain[0] }).toEqual(p.json());
      expect(g.json().command).toBe('get');
    }
  });

  it('describe service (by name or id): the service, its current rollout, what blocks it and its newest rollouts', async () => {
    const { svc, a, b } = await world.cf.service();
    const name = await nameOf(svc.id);
    await promoteAs(svc.id, a, 0);
    await promoteAs(svc.id, b, 1);
    expect(await world.cf.report(svc.id, (plan) => [verifiedReplica(plan, svc.id, 'n1', 0)])).toBe('deploying');
    const [current, first] = await world.cf.history(svc.id);

    const run = await runCli(['describe', 'service', name]);
    expect(run.code, run.stderr).toBe(0);
    const text = run.stdout;
    const sections = text.split('\n').filter((l) => /^\S/.test(l));
    const recent = /^Recent history \(newest 5; all of it: cloudly-release get rollouts --service svc_\S+\)$/;
    expect(sections).toEqual(['Service', 'Current rollout', 'Blocking', expect.stringMatching(recent)]);
    expect(text).toContain(`\n  name      ${name}\n  id        ${svc.id}\n`);
    expect(text).toMatch(/\n {2}placement clusters c1; 1 per node\n/);
    expect(text).toContain(`\n  rollout   ${current!.rolloutId} (generation 2, promotion) issued `);
    expect(text).toMatch(/\n {2}status {4}deploying: observed 1\/2, healthy 1\/2, verified 1\/2 /);
    // n2 has not reported the new rollout: that is what blocks it.
    expect(text.split('Blocking\n')[1]!.split('\n\n')[0]).toMatch(/n2/);
    const history = text.split(/\nRecent history[^\n]*\n/)[1]!.trimEnd().split('\n');
    expect(history[0]).toMatch(/^ {2}GEN\s+ROLLOUT\s+MODE\s/);
    expect(history.slice(1).map((l) => l.trim().split(/\s+/).slice(0, 2))).toEqual([['2', current!.rolloutId], ['1', first!.rolloutId]]);

    const json = await runCli(['describe', 'service', svc.id, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json()).toMatchObject({
      ok: true,
      command: 'describe',
      serviceId: svc.id,
      service: { id: svc.id, data: { name } },
      rollout: { plan: { rolloutId: current!.rolloutId }, status: { status: 'deploying' }, blocking: [expect.objectContaining({ nodeName: 'n2' })] },
      history: [expect.objectContaining({ rolloutId: current!.rolloutId }), expect.objectContaining({ rolloutId: first!.rolloutId })],
    });

    const fresh = await world.cf.service();
    const idle = await runCli(['describe', 'service', fresh.svc.id]);
    expect(idle.code, idle.stderr).toBe(0);
    expect(idle.stdout).toContain('\n  rollout   none yet (no release was ever promoted)\n');
    expect(idle.stdout).toContain('\n  no rollouts issued\n');

    const unknown = await runCli(['describe', 'service', 'no-such-service', '--json']);
    expect(unknown.code).toBe(1);
    expect(unknown.json()).toMatchObject({ ok: false, command: 'describe', error: { code: 'service-not-found' } });
  });

  it('usage: -o wide|name only on listings, get needs a known resource, --service where the listing is a service\'s', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['status', '--service', 'svc_x', '-o', 'name'], /-o name goes with the listings/],
      [['describe', 'service', 'svc_x', '-o', 'wide'], /-o wide goes with the listings/],
      [['get'], /'get' needs what to list: services, releases or rollouts/],
      [['get', 'pods'], /get: unknown resource 'pods'/],
      [['get', 'releases'], /'get releases' needs --service/],
      [['get', 'services', '--service', 'svc_x'], /'get services' takes --name, not --service/],
      [['describe', 'service'], /'describe service' needs the service's id or name/],
      [['describe', 'cluster', 'c1'], /describe: unknown resource 'cluster'/],
    ];
    for (const [argv, message] of cases) {
      const run = await runCli(argv);
      expect(run.code, argv.join(' ')).toBe(3);
      expect(run.stderr, argv.join(' ')).toMatch(message);
    }
  });
});
