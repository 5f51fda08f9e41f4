import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../../src/packageVersion.js';

describe('cloudly-release --version', () => {
  it('is the version of the package.json above the code', async () => {
    const pkg = JSON.parse(await readFile(join(import.meta.dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(packageVersion()).toBe(pkg.version);
  });

  it('skips package.json files of other packages on the way up (an install under node_modules), none found: undefined', () => {
    const root = mkdtempSync(join(tmpdir(), 'cloudly-version-'));
    const code = join(root, 'node_modules', 'cloudly-release-control-plane', 'dist', 'src', 'cli', 'release');
    mkdirSync(code, { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'deploy-job', version: '9.9.9' }));
    expect(packageVersion(code)).toBeUndefined();
    const installed = join(root, 'node_modules', 'cloudly-release-control-plane', 'package.json');
    writeFileSync(installed, JSON.stringify({ name: 'cloudly-release-control-plane', version: '1.2.3' }));
    expect(packageVersion(code)).toBe('1.2.3');
  });
});
