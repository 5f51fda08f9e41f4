import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The dependency direction (STYLE.md): http → operations → domain ← store, checked on the
 * imports of every file under src/ (eslint.config.js enforces the same per layer). Run it alone:
 * `npx vitest run test/unit/architecture.test.ts`.
 */
const root = resolve(import.meta.dirname, '..', '..');
const src = join(root, 'src');

const filesUnder = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
  const path = join(dir, entry.name);
  if (entry.isDirectory()) return entry.name === 'public' ? [] : filesUnder(path);
  return entry.name.endsWith('.ts') ? [path] : [];
});

interface Import { file: string, specifier: string, target: string }

/** Every static import/export-from and literal dynamic import of a file, with what it resolves to (a path or a package). */
function importsOf (file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms),
    ...text.matchAll(/import\(\s*'([^']+)'\s*\)/g),
  ].map((m) => m[1] as string);
  return specifiers.map((specifier) => ({
    file: relative(root, file),
    specifier,
    target: specifier.startsWith('.') ? relative(root, resolve(dirname(file), specifier)) : specifier,
  }));
}

const all = filesUnder(src).flatMap(importsOf);
const of = (layer: string) => all.filter((i) => i.file.startsWith(`src/${layer}/`));
const isPackage = (i: Import, name: string) => i.target === name || i.target.startsWith(`${name}/`);
const show = (imports: Import[]) => imports.map((i) => `${i.file} imports ${i.specifier}`);

describe('the dependency direction', () => {
  it('finds the imports it checks', () => {
    expect(all.length).toBeGreaterThan(200);
    expect(of('domain').length).toBeGreaterThan(20);
  });

  it('the domain imports neither fastify, mongodb, the store, the adapters nor the use cases', () => {
    const bad = of('domain').filter((i) => isPackage(i, 'fastify') || i.target.startsWith('@fastify/') || isPackage(i, 'mongodb') ||
      i.target.startsWith('src/store') || i.target.startsWith('src/http') || i.target.startsWith('src/operations'));
    expect(show(bad)).toEqual([]);
  });

  it('the use cases import neither fastify, mongodb, the store nor the adapters', () => {
    const bad = of('operations').filter((i) => isPackage(i, 'fastify') || i.target.startsWith('@fastify/') || isPackage(i, 'mongodb') ||
      i.target.startsWith('src/store') || i.target.startsWith('src/http'));
    expect(show(bad)).toEqual([]);
  });

  it('the HTTP adapters import neither mongodb nor the store', () => {
    const bad = of('http').filter((i) => isPackage(i, 'mongodb') || i.target.startsWith('src/store'));
    expect(show(bad)).toEqual([]);
  });

  it('only the store imports the driver; only src/app.ts and src/checkDatabase.ts compose the store', () => {
    const driver = all.filter((i) => isPackage(i, 'mongodb') && !i.file.startsWith('src/store/'));
    expect(show(driver)).toEqual([]);
    const composers = ['src/app.ts', 'src/checkDatabase.ts'];
    const store = all.filter((i) => i.target.startsWith('src/store') && !i.file.startsWith('src/store/') && !composers.includes(i.file));
    expect(show(store)).toEqual([]);
  });

  it('the database check (an operator\'s command) composes the store alone: no app, no adapters, no use cases', () => {
    const check = all.filter((i) => i.file === 'src/checkDatabase.ts');
    expect(check.some((i) => i.target.startsWith('src/store'))).toBe(true);
    const bad = check.filter((i) => ['src/app', 'src/http', 'src/operations', 'src/outbound', 'src/server'].some((layer) => i.target.startsWith(layer)) ||
      isPackage(i, 'fastify') || i.target.startsWith('@fastify/'));
    expect(show(bad)).toEqual([]);
  });

  it('nothing in the runtime tree imports the development database launcher or the tests', () => {
    const bad = all.filter((i) => i.target.startsWith('tools/') || i.target.startsWith('test/'));
    expect(show(bad)).toEqual([]);
    // The start-up path reaches the launcher by a specifier the compiler does not follow (the image has no tools/).
    expect(readFileSync(join(src, 'server.ts'), 'utf8')).toContain("'../tools/dev-database/index.js'");
  });
});
