import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promote } from '../../support/fixtures.js';
import { tokenMinter } from '../../support/tokens.js';
import { startCliFleet, type CliFleet } from './cliFleet.js';
import { github, killCliChildren, runCli, startProxy, type Proxy, type ProxyOptions } from './harness.js';

/**
 * The rows of docs/cli.md's exit code table that the other files do not reach: a refusal by
 * authentication (401) and by role (403) is exit 1; a gateway that keeps answering 5xx is exit 4
 * after every retry (and exit 0 once it recovers in time); an answer that is not the control
 * plane's (a 2xx that is not JSON, a redirect). Failures are injected by a TCP proxy answering
 * in the server's place, so the server never sees those requests.
 */
describe('cloudly-release exit codes', () => {
  let cf: CliFleet;
  const proxies: Proxy[] = [];
  let runSeq = 0;

  beforeAll(async () => {
    cf = await startCliFleet({ processes: 1 });
  }, 120_000);

  afterAll(async () => {
    killCliChildren();
    await Promise.all(proxies.map(async (p) => await p.close()));
    await cf?.fleet.close();
  });

  const proxyTo = async (opts: ProxyOptions): Promise<Proxy> => {
    const p = await startProxy(cf.fleet.servers[0]!.url, opts);
    proxies.push(p);
    return p;
  };

  const unavailable = {
    respond: {
      status: 503,
      headers: { 'retry-after': '0' },
      body: JSON.stringify({ code: 'database-unavailable', status: 503, detail: 'the database is not reachable' }),
    },
  };

  it('1: a token the server does not accept (401 unauthenticated) — refused, not retried, nothing changed', async () => {
    const { svc, a } = await cf.service();
    const forged = await tokenMinter('not-the-server-secret-not-the-server-secret', 'forger')('api');
    const run = await runCli(['promote', '--service', svc.id, '--release', a, '--json'], { CLOUDLY_TOKEN: forged, ...github(`x-${++runSeq}`) });
    expect(run.code, run.stderr).toBe(1);
    expect(run.json()).toMatchObject({ ok: false, command: 'promote', exitCode: 1, error: { code: 'unauthenticated', status: 401 } });
    expect(run.stderr).not.toMatch(/retry \d/);
    expect(await cf.history(svc.id)).toHaveLength(0);
  });

  it('1: a role that may read but not write (403 forbidden): reads exit 0, promote and abort exit 1, nothing changed', async () => {
    const { svc, a } = await cf.service();
    expect((await promote(cf.callers[0]!, cf.api, svc.id, a, { generation: 0 })).statusCode).toBe(200);
    const user = await cf.fleet.token('user', { subject: 'dev-1' });
    const read = await runCli(['status', '--service', svc.id], { CLOUDLY_TOKEN: user });
    expect(read.code, read.stderr).toBe(0);
    for (const command of [['promote', '--release', a], ['abort']]) {
      const run = await runCli([command[0]!, '--service', svc.id, ...command.slice(1), '--json'], { CLOUDLY_TOKEN: user, ...github(`x-${++runSeq}`) });
      expect(run.code, run.stderr).toBe(1);
      expect(run.json()).toMatchObject({ ok: false, command: command[0], exitCode: 1, error: { code: 'forbidden', status: 403 } });
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^cloudly-release: forbidden: /);
      expect(run.stderr).not.toMatch(/retry \d/);
    }
    expect(await cf.history(svc.id)).toHaveLength(1);
  });

  it('4: a gateway answering 503 to every attempt — retried, then exit 4 naming the last answer; nothing reached the server', async () => {
    const { svc, a } = await cf.service();
    const gateway = await proxyTo({ policy: () => unavailable });
    const argv = ['promote', '--service', svc.id, '--release', a, '--retries', '2', '--json'];
    const run = await runCli(argv, { CLOUDLY_URL: gateway.url, ...github(`x-${++runSeq}`) });
    expect(run.code, run.stderr).toBe(4);
    expect(run.json()).toMatchObject({
      ok: false, exitCode: 4, error: { code: 'unreachable', attempts: 3, lastFailure: '503 database-unavailable: the database is not reachable' },
    });
    expect(run.stderr.match(/503 database-unavailable: the database is not reachable; retry \d\/2/g)).toHaveLength(2);
    // The first read (the service's generation) never got an answer: the promotion was never sent.
    expect(gateway.requests.map((r) => `${r.method} ${r.path}`)).toEqual(Array(3).fill(`GET /v1/services/${svc.id}`));
    expect(await cf.history(svc.id)).toHaveLength(0);
  });

  it('0: a gateway that answers 503 twice and then recovers is ridden out by the retries', async () => {
    const { svc, a } = await cf.service();
    let answered = 0;
    const gateway = await proxyTo({ policy: () => (++answered <= 2 ? unavailable : 'pass') });
    const run = await runCli(['promote', '--service', svc.id, '--release', a, '--json'], { CLOUDLY_URL: gateway.url, ...github(`x-${++runSeq}`) });
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ ok: true, exitCode: 0, generation: 1, replayed: false });
    expect(run.stderr.match(/retry \d\/6/g)).toHaveLength(2);
    expect(await cf.history(svc.id)).toHaveLength(1);
  });

  it('4: a 2xx that is not JSON (a login page in front of the API) is not the control plane: bad-response, not retried', async () => {
    const portal = await proxyTo({ policy: () => ({ respond: { status: 200, contentType: 'text/html', body: '<html>sign in</html>' } }) });
    const run = await runCli(['status', '--service', 'svc_any', '--json'], { CLOUDLY_URL: portal.url });
    expect(run.code, run.stderr).toBe(4);
    expect(run.json()).toMatchObject({ ok: false, exitCode: 4, error: { code: 'bad-response' } });
    expect(run.stderr).toMatch(/GET \/v1\/services\/svc_any\/rollout: 200 with a body that is not JSON/);
    expect(portal.requests).toHaveLength(1);
  });

  it('1: a redirect is not followed (it would carry the token elsewhere): the message says where to point CLOUDLY_URL', async () => {
    const moved = await proxyTo({ policy: () => ({ respond: { status: 308, headers: { location: 'https://cloudly.example.com/v1/services' } } }) });
    const run = await runCli(['services', '--json'], { CLOUDLY_URL: moved.url });
    expect(run.code, run.stderr).toBe(1);
    expect(run.json()).toMatchObject({ ok: false, exitCode: 1, error: { code: 'http-308', status: 308 } });
    expect(run.stderr).toMatch(/redirected to https:\/\/cloudly\.example\.com\/v1\/services: set CLOUDLY_URL to the final address/);
    expect(moved.requests).toHaveLength(1);
  });
});
