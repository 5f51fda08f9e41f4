import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { indexPlan } from '../../src/store/indexPlan.js';
import { errorCatalogue } from '../../src/errors.js';
import { buildTestApp } from '../support/app.js';

const readme = await readFile(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

/** The README is part of the product: these keep it true as the code moves. */
describe('README', () => {
  it('names every index of the index plan', () => {
    for (const entry of indexPlan) expect(readme, entry.name).toContain(`\`${entry.name}\``);
  });

  it('lists every public route', async () => {
    const t = await buildTestApp();
    try {
      // The OpenAPI document lists every route but the documentation UI's own pages.
      const paths = Object.keys((t.app.swagger() as { paths: Record<string, unknown> }).paths);
      const documented = paths.map((path) => path.replace(/\{([^}]+)\}/g, ':$1'));
      expect(documented.length).toBeGreaterThan(10);
      for (const route of documented) expect(readme, route).toContain(route);
    } finally {
      await t.close();
    }
  });

  it('documents every error code a client can receive', () => {
    for (const code of Object.keys(errorCatalogue)) expect(readme, code).toContain(`\`${code}\``);
  });
});
