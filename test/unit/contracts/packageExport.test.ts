import { describe, expect, it } from 'vitest';
import * as source from '../../../src/contracts/index.js';

const helperNames = [
  'normalizeSha256Digest',
  'isSha256Digest',
  'buildDigestPinnedImageReference',
  'getDigestFromPinnedImageReference',
  'validateImmutableImageDeploymentPlan',
  'validateImageRolloutStatus',
] as const;

describe('the published ./contracts entry point', () => {
  it('resolves by package name after the build and exports the six helpers', async () => {
    // Self-reference through package.json "exports" (the build runs before the tests).
    const published = await import('cloudly-release-control-plane/contracts') as Record<string, unknown>;
    for (const name of helperNames) expect(typeof published[name], name).toBe('function');
    expect(Object.keys(published).sort()).toEqual(Object.keys(source).sort());
    const digest = `sha256:${'ab'.repeat(32)}` as const;
    const build = published['buildDigestPinnedImageReference'] as typeof source.buildDigestPinnedImageReference;
    expect(build('registry.example.com', 'team/app', digest)).toBe(`registry.example.com/team/app@${digest}`);
  });
});
