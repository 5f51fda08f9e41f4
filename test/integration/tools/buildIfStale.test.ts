import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * `npm start` (prestart: tools/build-if-stale.mjs) rebuilds only when a file the build reads is newer
 * than the last build. Run in a scratch project whose `build` script records that it ran.
 */
const script = resolve(import.meta.dirname, '..', '..', '..', 'tools', 'build-if-stale.mjs');
let dir: string | undefined;
afterEach(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

function scratchProject (): string {
  dir = mkdtempSync(join(tmpdir(), 'build-if-stale-'));
  const build = "require('fs').appendFileSync('builds.log','built\\n');require('fs').mkdirSync('dist/src',{recursive:true});" +
    "require('fs').writeFileSync('dist/src/server.js','')";
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, scripts: { build: `node -e "${build}"` } }));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'app.ts'), 'export {};\n');
  return dir;
}

const run = (cwd: string): string => execFileSync(process.execPath, [script], { cwd, encoding: 'utf8' });
const builds = (cwd: string): number => existsSync(join(cwd, 'builds.log'))
  ? readFileSync(join(cwd, 'builds.log'), 'utf8').split('\n').filter((l) => l === 'built').length
  : 0;

describe('tools/build-if-stale.mjs (npm start)', () => {
  it('builds when there is no build, not again while nothing changed, and again once a source file changed', () => {
    const cwd = scratchProject();
    run(cwd);
    expect(builds(cwd)).toBe(1);
    expect(existsSync(join(cwd, 'dist', '.build-stamp'))).toBe(true);

    expect(run(cwd)).toContain('the build is current');
    expect(builds(cwd)).toBe(1);

    // A source file changed after the build (its time set past the stamp's).
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(cwd, 'src', 'app.ts'), later, later);
    run(cwd);
    expect(builds(cwd)).toBe(2);
  });

  it('builds when the stamp is there but the built server is not', () => {
    const cwd = scratchProject();
    run(cwd);
    rmSync(join(cwd, 'dist', 'src', 'server.js'));
    run(cwd);
    expect(builds(cwd)).toBe(2);
  });
});
