import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleContentSecurityPolicy, consoleFiles } from '../../../src/console/plugin.js';
import { buildTestApp, type TestApp } from '../../support/app.js';

const publicDir = new URL('../../../src/console/public/', import.meta.url);

describe('the console\'s static files (GET /console/…)', () => {
  let t: TestApp;
  beforeAll(async () => { t = await buildTestApp(); });
  afterAll(async () => { await t.close(); });

  it('redirects /console to /console/ with a relative Location (works behind a path prefix)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/console' });
    expect(res.statusCode).toBe(301);
    expect(res.headers['location']).toBe('./console/');
  });

  it('serves the page without a token, never cached, with a strict CSP and nosniff', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/console/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toBe(consoleContentSecurityPolicy);
    expect(consoleContentSecurityPolicy).toContain("script-src 'self'");
    expect(consoleContentSecurityPolicy).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.body).toBe(await readFile(new URL('index.html', publicDir), 'utf8'));
    // No inline script or style anywhere in the page: everything comes from the allowlisted files.
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
  });

  it('serves every allowlisted file with its content type, nosniff and an ETag that answers 304', async () => {
    for (const [name, contentType] of Object.entries(consoleFiles)) {
      if (name === 'index.html') continue;
      const res = await t.app.inject({ method: 'GET', url: `/console/${name}` });
      expect(res.statusCode, name).toBe(200);
      expect(res.headers['content-type'], name).toBe(contentType);
      expect(res.headers['x-content-type-options'], name).toBe('nosniff');
      expect(res.headers['cache-control'], name).toBe('no-cache');
      expect(res.rawPayload.equals(await readFile(new URL(name, publicDir))), name).toBe(true);
      const again = await t.app.inject({ method: 'GET', url: `/console/${name}`, headers: { 'if-none-match': String(res.headers['etag']) } });
      expect(again.statusCode, name).toBe(304);
    }
  });

  it('the allowlist names every file in src/console/public, and the page loads only allowlisted files', async () => {
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(publicDir)).sort()).toEqual(Object.keys(consoleFiles).sort());
    const page = await readFile(new URL('index.html', publicDir), 'utf8');
    const scripts = await Promise.all(Object.keys(consoleFiles).filter((f) => f.endsWith('.js')).map((f) => readFile(new URL(f, publicDir), 'utf8')));
    const referenced = [
      ...[...page.matchAll(/(?:src|href)="([^"#][^"]*)"/g)].map((m) => m[1]),
      ...scripts.flatMap((s) => [...s.matchAll(/from '\.\/([^']+)'/g)].map((m) => m[1])),
    ];
    expect(referenced.length).toBeGreaterThan(5);
    for (const file of referenced) expect(Object.keys(consoleFiles), file).toContain(file);
  });

  it('answers 404 (problem+json) for anything else: other names, traversal, dotfiles, the plugin\'s own source', async () => {
    const urls = [
      '/console/nope.js', '/console/..%2fplugin.ts', '/console/%2e%2e%2f%2e%2e%2fpackage.json', '/console/.env',
      '/console/public/app.js', '/console/../package.json', '/console/app.js/', '/console/constructor', '/console/__proto__',
    ];
    for (const url of urls) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type'], url).toContain('application/problem+json');
      expect(res.body, url).not.toContain('consolePlugin');
    }
  });

  it('is not part of the API document (no token scheme applies to it)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json().paths).filter((p) => p.startsWith('/console'))).toEqual([]);
  });
});
