/**
 * Found by an independent acceptance run (each test failed on the code before its fix): README "The CLI in
 * CI" / docs/cli.md exit codes — `0`: "the rollout reached `succeeded` / `rolled-back`"; `1`: "… or was
 * superseded by a newer rollout before it finished". docs/lifecycle.md: "`succeededAt` — the first time
 * its status was `succeeded` … **Sticky**: the status may change later (a replica restarts), the milestone
 * does not"; the history's `outcome` is `succeeded` "once it ever succeeded". A CI gate that waits for a
 * rollout which DID reach succeeded must pass, also when the wait starts after that moment (a slow job, a
 * retried step) and the status moved on since.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, promote } from '../../support/fixtures.js';
import { fullReplicas, verifiedReplica } from '../../support/reports.js';
import { startCliFleet, type CliFleet } from './cliFleet.js';
import { killCliChildren, runCli } from './harness.js';

describe('cloudly-release wait for a rollout that already succeeded', () => {
  let f: CliFleet;
  beforeAll(async () => { f = await startCliFleet({ processes: 1 }); }, 180_000);
  afterAll(async () => {
    killCliChildren();
    await f?.fleet.close();
  });

  it('succeeded, then superseded by the next promotion: `wait --rollout-id <it>` exits 0 (it finished before it was superseded)', async () => {
    const { svc, a, b } = await f.service();
    const first = await promote(f.callers[0]!, f.api, svc.id, a, { generation: 0 });
    expect(first.statusCode, first.body).toBe(200);
    const rolloutId = first.json().service.data.imageDeployment.rolloutId as string;
    expect(await f.allVerified(svc.id)).toBe('succeeded');
    const [hist] = await f.history(svc.id);
    expect(hist?.rolloutId).toBe(rolloutId);
    expect((await promote(f.callers[0]!, f.api, svc.id, b, { generation: 1 })).statusCode).toBe(200);
    const [, older] = await f.history(svc.id);
    expect(older).toMatchObject({ rolloutId, outcome: 'succeeded' });

    const run = await runCli(['wait', '--service', svc.id, '--rollout-id', rolloutId, '--timeout', '5s', '--json']);
    expect({ code: run.code, outcome: run.json().outcome }, run.stderr).toEqual({ code: 0, outcome: 'succeeded' });
  }, 60_000);

  it('succeeded, then a replica restarted (status back to deploying): `wait --rollout-id <it>` exits 0, not a timeout', async () => {
    const { svc, a } = await f.service();
    const first = await promote(f.callers[0]!, f.api, svc.id, a, { generation: 0 });
    const rolloutId = first.json().service.data.imageDeployment.rolloutId as string;
    expect(await f.allVerified(svc.id)).toBe('succeeded');
    const restarted = (plan: Parameters<typeof fullReplicas>[0]) =>
      [...fullReplicas(plan, svc.id, ['n1']), verifiedReplica(plan, svc.id, 'n2', 0, { status: 'starting', evidence: null })];
    expect(await f.report(svc.id, restarted))
      .toBe('deploying');
    const view = (await f.callers[0]!.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(f.admin) })).json();
    expect(view.lifecycle?.succeededAt, 'the milestone is sticky').toBeDefined();

    const run = await runCli(['wait', '--service', svc.id, '--rollout-id', rolloutId, '--timeout', '5s', '--json'], {}, 30_000);
    expect({ code: run.code, outcome: run.json().outcome }, run.stderr).toEqual({ code: 0, outcome: 'succeeded' });
  }, 60_000);
});
