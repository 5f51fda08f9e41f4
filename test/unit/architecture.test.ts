import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The dependency direction (docs/architecture.md): http → operations → domain ← store, outbound;
 * checked on the imports of every file under src/ (eslint.config.js enforces the same per layer). Run it alone:
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

  it('the domain imports neither fastify, mongodb, the store, the adapters (inbound or outbound) nor the use cases', () => {
    const bad = of('domain').filter((i) => isPackage(i, 'fastify') || i.target.startsWith('@fastify/') || isPackage(i, 'mongodb') ||
      ['src/store', 'src/http', 'src/outbound', 'src/operations', 'src/app', 'src/server'].some((layer) => i.target.startsWith(layer)));
    expect(show(bad)).toEqual([]);
  });

  it('the use cases import neither fastify, mongodb, the store nor the adapters (inbound or outbound)', () => {
    const bad = of('operations').filter((i) => isPackage(i, 'fastify') || i.target.startsWith('@fastify/') || isPackage(i, 'mongodb') ||
      i.target.startsWith('src/store') || i.target.startsWith('src/http') || i.target.startsWith('src/outbound'));
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

/**
 * What opens a connection to the outside world: the global fetch, a request or connect function of
 * node:http(s)/net/tls/http2, undici, a WebSocket. Type-only imports and the server side
 * (createServer, STATUS_CODES) are not requests.
 */
const outboundPatterns: readonly RegExp[] = [
  /(?<![.\w])fetch\s*\(/,
  /\bnew\s+WebSocket\s*\(/,
  /^import\s+(?!type\b)[^;]*from\s+'(?:node:)?(?:https?|http2|net|tls|dgram)'/ms,
  /\bfrom\s+'undici(?:\/[^']*)?'|import\(\s*'undici'/,
  /\brequire\(\s*'(?:node:)?(?:https?|http2|net|tls|undici)'\s*\)/,
];

/** Value imports of a networking module that are the server side, never a request (checked by name). */
const serverSideOnly = (text: string): boolean => {
  const named = [...text.matchAll(/^import\s+(?!type\b)\{([^}]*)\}\s+from\s+'(?:node:)?(?:https?|net|tls)'/gm)];
  const defaults = /^import\s+(?!type\b)\w+[\s,]*(?:\{[^}]*\})?\s*from\s+'(?:node:)?(?:https?|http2|net|tls|dgram)'/m.test(text);
  return !defaults && named.every((m) => (m[1] as string).split(',').map((n) => n.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0])
    // Capitalised names are classes and constants (Server, Agent, STATUS_CODES): none sends anything by itself.
    .filter((n) => n !== undefined && n !== '' && !/^[A-Z]/.test(n))
    .every((n) => ['createServer', 'isIP', 'isIPv4', 'isIPv6', 'STATUS_CODES'].includes(n as string)));
};

/** Whether a source text makes an outbound request (comments dropped first). */
export function makesOutboundRequests (source: string): boolean {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return outboundPatterns.some((pattern, index) => pattern.test(text) && !(index === 2 && serverSideOnly(text)));
}

/**
 * Outside src/outbound/, only clients OF this server call out: the CLIs (src/cli/) and the demo
 * (src/demo/), which drive the server's own API; and the store, whose driver is the one connection
 * to the database. Everything the server itself sends to the world goes through an outbound port.
 */
const mayCallOut = (file: string): boolean =>
  ['src/outbound/', 'src/cli/', 'src/demo/', 'src/store/', 'src/console/public/'].some((dir) => file.startsWith(dir));

describe('the outbound side', () => {
  it('recognises a request and ignores the server side and type-only imports', () => {
    expect(makesOutboundRequests('const res = await fetch(url, init);')).toBe(true);
    expect(makesOutboundRequests("import http from 'node:http';\nhttp.request(options);")).toBe(true);
    expect(makesOutboundRequests("import { request } from 'node:https';")).toBe(true);
    expect(makesOutboundRequests("import { connect } from 'node:net';")).toBe(true);
    expect(makesOutboundRequests("import { request } from 'undici';")).toBe(true);
    expect(makesOutboundRequests("import type { IncomingMessage } from 'node:http';")).toBe(false);
    expect(makesOutboundRequests("import { STATUS_CODES, type Server } from 'node:http';")).toBe(false);
    expect(makesOutboundRequests("import { createServer } from 'node:http';")).toBe(false);
    expect(makesOutboundRequests('// a comment that says fetch(url)\nconst x = repo.fetch(1);')).toBe(false);
  });

  it('nothing outside src/outbound/ (and the clients of this server) makes outbound requests', () => {
    const files = filesUnder(src).map((f) => relative(root, f));
    const callers = files.filter((f) => makesOutboundRequests(readFileSync(join(root, f), 'utf8')));
    // The registry transport is found: the check sees real requests.
    expect(callers).toContain('src/outbound/registry/transport.ts');
    expect(callers.filter((f) => !mayCallOut(f))).toEqual([]);
  });

  it('every outbound adapter lives in src/outbound/ and only the composition root imports it', () => {
    const importers = all.filter((i) => i.target.startsWith('src/outbound') && !i.file.startsWith('src/outbound/'));
    expect(show(importers.filter((i) => !['src/app.ts', 'src/server.ts'].includes(i.file)))).toEqual([]);
    expect(importers.map((i) => i.file)).toContain('src/app.ts');
  });

  it('the outbound adapters import neither fastify, the store, the HTTP adapters nor the use cases', () => {
    const bad = of('outbound').filter((i) => isPackage(i, 'fastify') || i.target.startsWith('@fastify/') || isPackage(i, 'mongodb') ||
      ['src/store', 'src/http', 'src/operations', 'src/app', 'src/server'].some((layer) => i.target.startsWith(layer)));
    expect(show(bad)).toEqual([]);
  });

  it('no CLI module imports src/http (the CLIs are clients of the API, not parts of the server)', () => {
    const bad = all.filter((i) => i.file.startsWith('src/cli/') && (i.target.startsWith('src/http') || i.target.startsWith('src/store') ||
      i.target.startsWith('src/operations') || i.target.startsWith('src/app')));
    expect(show(bad)).toEqual([]);
  });
});
