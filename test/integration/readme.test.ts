import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvSchema } from '../../src/config.js';
import { errorCatalogue } from '../../src/errors.js';
import { typedRequestMethods } from '../../src/http/typedRequest/methods.js';
import { Metrics } from '../../src/outbound/metrics.js';
import type { Operations } from '../../src/operations/index.js';
import { indexPlan } from '../../src/store/indexPlan.js';
import { buildTestApp } from '../support/app.js';
import { request, startFleet, type Fleet } from '../support/fleet.js';

const root = join(import.meta.dirname, '..', '..');
const read = async (path: string): Promise<string> => await readFile(join(root, path), 'utf8');
const readme = await read('README.md');
const docs = {
  api: await read('docs/api.md'),
  errors: await read('docs/errors.md'),
  metrics: await read('docs/metrics.md'),
  architecture: await read('docs/architecture.md'),
};

/** The README and docs/ are part of the product: these keep them true as the code moves. */
describe('README and docs/', () => {
  it('the README stays a short entry point (at most about 250 lines)', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });

  it('every relative link of the README and of docs/*.md names a file that exists', async () => {
    const files = ['README.md', 'docs/api.md', 'docs/errors.md', 'docs/metrics.md', 'docs/architecture.md', 'docs/decisions.md', 'docs/lifecycle.md',
      'docs/operations.md', 'docs/cli.md', 'docs/console.md', 'docs/demo.md', 'docs/benchmarks.md', 'docs/trust.md'];
    const missing: string[] = [];
    for (const file of files) {
      const text = await read(file);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (!target || /^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(root, dirname(file), target))) missing.push(`${file} → ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('the README configuration table names every environment variable the server reads', () => {
    for (const variable of Object.keys(EnvSchema.properties)) expect(readme, variable).toContain(`\`${variable}\``);
  });

  it('docs/architecture.md names every index of the index plan', () => {
    for (const entry of indexPlan) expect(docs.architecture, entry.name).toContain(`\`${entry.name}\``);
  });

  it('docs/api.md lists every public route and every TypedRequest method', async () => {
    const t = await buildTestApp();
    try {
      // The OpenAPI document lists every route but the documentation UI's own pages.
      const paths = Object.keys((t.app.swagger() as { paths: Record<string, unknown> }).paths);
      const documented = paths.map((path) => path.replace(/\{([^}]+)\}/g, ':$1'));
      expect(documented.length).toBeGreaterThan(10);
      for (const route of documented) expect(docs.api, route).toContain(route);
    } finally {
      await t.close();
    }
    // The method list only needs the methods' names: no use case is called.
    const methods = typedRequestMethods(new Proxy({}, { get: () => ({}) }) as Operations).map((m) => m.method);
    expect(methods.length).toBeGreaterThan(10);
    for (const method of methods) expect(docs.api, method).toContain(`\`${method}\``);
  });

  it('docs/errors.md documents every error code a client can receive', () => {
    for (const code of Object.keys(errorCatalogue)) expect(docs.errors, code).toContain(`\`${code}\``);
  });

  it('docs/metrics.md names every series of /metrics', async () => {
    const names = (await new Metrics().registry.getMetricsAsJSON()).map((m) => m.name).filter((name) => !/^(process|nodejs)_/.test(name));
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) expect(docs.metrics, name).toContain(`\`${name}\``);
  });
});

/** The walk-through's shell block, as a newcomer pastes it. */
function walkThrough (): string {
  const section = readme.slice(readme.indexOf('## Walk-through'));
  const match = /```sh\n([\s\S]*?)```/.exec(section);
  if (!match?.[1]) throw new Error('README: no ```sh block under "## Walk-through"');
  return match[1];
}

describe('README walk-through', () => {
  let fleet: Fleet;
  beforeAll(async () => { fleet = await startFleet({ processes: 1 }); }, 90_000);
  afterAll(async () => { await fleet?.close(); });

  it('runs as written against a real server (only BASE points at it), every command succeeding', async () => {
    const base = fleet.servers[0]!.url;
    const script = walkThrough();
    expect(script).toMatch(/^BASE=http:\/\/127\.0\.0\.1:3000$/m);
    const pointed = script.replace(/^BASE=.*$/m, `BASE=${base}`);
    // The shell a newcomer has: the repository as working directory, the server's secret for `npm run token`.
    const env = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', AUTH_JWT_SECRET: fleet.secret, DATA_DIR: '/nonexistent' };
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', pointed], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    const lines = stdout.split('\n');
    expect(code, `exit ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);

    // What each step prints is what its comment says.
    expect(lines).toContain('pending');
    expect(lines).toContain('rollback');
    expect(stdout).toMatch(/^sha256:[0-9a-f]{64}$/m);
    expect(stdout).toMatch(/aborted rollout ro_\S+ of service svc_\S+: rolling back to release demo-shop-v1/);

    // And the server holds what the walk-through did: v1 succeeded, v3 promoted and aborted, v2 succeeded, then rolled back.
    const token = await fleet.token('admin');
    const services = await request<{ services: Array<{ id: string }> }>(`${base}/v1/services?name=demo-shop`, { token });
    const serviceId = services.json.services[0]!.id;
    const history = await request<{ rollouts: Array<Record<string, any>> }>(`${base}/v1/services/${serviceId}/rollouts`, { token });
    const summary = history.json.rollouts.map((r) => `${r['mode']} ${r['releaseId']} ${r['outcome']}`).reverse();
    expect(summary).toEqual([
      'promotion demo-shop-v1 succeeded',
      'promotion demo-shop-v3 aborted',
      'rollback demo-shop-v1 superseded',
      'promotion demo-shop-v2 succeeded',
      'rollback demo-shop-v1 in-progress',
    ]);
    expect(history.json.rollouts[0]!['reason']).toBe('v2 regressed');
  }, 240_000);
});
