import type { IncomingMessage } from 'node:http';

/**
 * `?access_token=` (EventSource cannot send headers). Fastify's `rewriteUrl` hook calls
 * `stripAccessToken` on EVERY request before routing and before anything is logged: the
 * parameter is removed from `req.url` (and `originalUrl`), so no log line, problem
 * document or later handler ever sees it, and the token is kept aside for the one route
 * that accepts it (GET …/rollout/events; every other route ignores it and needs the header).
 */
const queryTokens = new WeakMap<IncomingMessage, string | null>();

const isAccessTokenKey = (pair: string): boolean => {
  const eq = pair.indexOf('=');
  const key = eq < 0 ? pair : pair.slice(0, eq);
  try {
    return decodeURIComponent(key.replace(/\+/g, ' ')) === 'access_token';
  } catch {
    return false;
  }
};

export function stripAccessToken (req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if (q < 0 || !/access(_|%5f)token/i.test(url.slice(q))) return url;
  const pairs = url.slice(q + 1).split('&');
  const tokens = pairs.filter(isAccessTokenKey).map((pair) => {
    const eq = pair.indexOf('=');
    try {
      return eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      return '';
    }
  });
  if (tokens.length === 0) return url;
  // One non-empty value, or null: present but unusable (empty, repeated, badly encoded).
  queryTokens.set(req, tokens.length === 1 && tokens[0] ? tokens[0] : null);
  const rest = pairs.filter((p) => !isAccessTokenKey(p)).join('&');
  const clean = url.slice(0, q) + (rest === '' ? '' : `?${rest}`);
  (req as IncomingMessage & { originalUrl?: string }).originalUrl = clean;
  return clean;
}

/** The `access_token` query value of this request: a string, null when present but unusable, undefined when absent. */
export const queryAccessToken = (req: IncomingMessage): string | null | undefined => queryTokens.get(req);
