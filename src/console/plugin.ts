import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { errors, type AppError } from '../errors.js';

/**
 * The operators' console: a static page under `/console/` that talks to the REST API and the
 * SSE stream with the operator's token. This plugin only serves the page's files; it needs no
 * token itself (the page holds none of the data), every API call the page makes carries one.
 *
 * Only the files named here are served, from memory, read once at start-up: a request names a
 * key of this table, never a path, so nothing outside it can be reached (no traversal, no
 * directory listing, no dotfiles).
 */
export const consoleFiles = {
  'index.html': 'text/html; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'api.js': 'text/javascript; charset=utf-8',
  'dom.js': 'text/javascript; charset=utf-8',
  'overview.js': 'text/javascript; charset=utf-8',
  'service.js': 'text/javascript; charset=utf-8',
  'grid.js': 'text/javascript; charset=utf-8',
  'tables.js': 'text/javascript; charset=utf-8',
  'actions.js': 'text/javascript; charset=utf-8',
  'live.js': 'text/javascript; charset=utf-8',
  'banner.js': 'text/javascript; charset=utf-8',
  'governance.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const satisfies Record<string, string>;

export type ConsoleFileName = keyof typeof consoleFiles;

/** Self only, no inline script or style, nothing may frame the page, forms post nowhere. */
export const consoleContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsolePluginOptions {
  /** Where the page's files are; default `public/` beside this module (src/console/public, or dist/src/console/public after the build). */
  root?: URL;
}

interface LoadedFile {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** Reads every allowlisted file; a missing one is reported, not fatal (a build that skipped the copy step still serves the API). */
async function loadFiles (root: URL): Promise<{ files: Map<string, LoadedFile>, missing: string[] }> {
  const files = new Map<string, LoadedFile>();
  const missing: string[] = [];
  await Promise.all(Object.entries(consoleFiles).map(async ([name, contentType]) => {
    try {
      const body = await readFile(new URL(name, root));
      files.set(name, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });
    } catch {
      missing.push(name);
    }
  }));
  return { files, missing: missing.sort() };
}

function setSecurityHeaders (reply: FastifyReply): void {
  reply
    .header('content-security-policy', consoleContentSecurityPolicy)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin');
}

/**
 * The HTML is never cached (a new version must load at once); scripts and styles are
 * revalidated on every load (ETag), so the page and its modules never come from two versions.
 */
function sendFile (request: FastifyRequest, reply: FastifyReply, file: LoadedFile, name: string): FastifyReply {
  setSecurityHeaders(reply);
  reply.header('cache-control', name === 'index.html' ? 'no-store' : 'no-cache').header('etag', file.etag);
  if (name !== 'index.html' && request.headers['if-none-match'] === file.etag) return reply.code(304).send();
  return reply.type(file.contentType).send(file.body);
}

const notServed = (request: FastifyRequest): AppError => errors.notFound(request.method, request.url.split('?')[0] ?? '');

/** GET /console → /console/, GET /console/ (the page) and GET /console/<allowlisted file>. */
export const consolePlugin: FastifyPluginAsync<ConsolePluginOptions> = async (app, opts) => {
  const { files, missing } = await loadFiles(opts.root ?? new URL('./public/', import.meta.url));
  if (missing.length > 0) {
    app.log.warn({ missing }, 'console files are missing (was the build\'s copy step skipped?); /console answers 404 for them');
  }
  const routeOptions = { schema: { hide: true }, logLevel: 'warn' } as const;

  // Relative URLs in the page (`app.js`, `../v1/…`) resolve against the trailing slash. The
  // Location is relative too, so the console also works behind a proxy that adds a path prefix.
  app.get('/console', routeOptions, async (_request, reply) => reply.redirect('./console/', 301));

  app.get('/console/', routeOptions, async (request, reply) => {
    const file = files.get('index.html');
    if (!file) throw notServed(request);
    return sendFile(request, reply, file, 'index.html');
  });

  app.get<{ Params: { file: string } }>('/console/:file', routeOptions, async (request, reply) => {
    const name = request.params.file;
    const file = Object.hasOwn(consoleFiles, name) ? files.get(name) : undefined;
    if (!file) throw notServed(request);
    return sendFile(request, reply, file, name);
  });
};
