import type { IncomingMessage } from 'node:http';

/**
 * `?access_token=` (EventSource cannot send headers). Fastify's `rewriteUrl` hook calls
 * `stripAccessToken` on EVERY request before routing and before anything is logged: the
 * parameter is removed from `req.url` (and `originalUrl`), so no log line, problem
 * document or later handler ever sees it, and the token is kept aside for the one route
 * that accepts it (GET …/rollout/events; every other route ignores it and needs the header).
 */
const queryTokens = new WeakMap<IncomingMessage, string | null>();

/** The decoded key of one `key=value` segment, or undefined when it cannot be decoded. */
const keyOf = (segment: string): string | undefined => {
  const eq = segment.indexOf('=');
  const key = eq < 0 ? segment : segment.slice(0, eq);
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
};

/**
 * Keys that look like a credential sent the wrong way (another spelling or case of access_token, a bare
 * token or jwt): never accepted, but removed from the URL too, so that a client's mistake is not logged.
 */
const CREDENTIAL_KEYS = new Set(['access_token', 'access-token', 'accesstoken', 'token', 'jwt', 'id_token', 'bearer', 'authorization', 'auth']);
const looksLikeCredential = (segment: string): boolean => {
  const key = keyOf(segment);
  return key !== undefined && CREDENTIAL_KEYS.has(key.trim().toLowerCase());
};

/** A JSON Web Token, wherever it stands in a URL: a base64url header that opens with `{"`, a payload and a signature. */
const JWT_IN_TEXT = /eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g;

export function stripAccessToken (req: IncomingMessage): string {
  const stripped = stripCredentialParameters(req);
  const q = stripped.indexOf('?');
  if (q < 0 || !stripped.includes('eyJ', q)) return stripped;
  // Any token left in the query — under a name not listed, after a second `?`, with an encoded `=` — is
  // never accepted from there, and never kept in the URL that is logged either.
  const clean = stripped.slice(0, q) + stripped.slice(q).replace(JWT_IN_TEXT, '[redacted]');
  if (clean !== stripped) (req as IncomingMessage & { originalUrl?: string }).originalUrl = clean;
  return clean;
}

function stripCredentialParameters (req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if (q < 0 || !/token|jwt|bearer|auth/i.test(url.slice(q))) return url;
  const pairs = url.slice(q + 1).split('&');
  const tokens = pairs.filter((pair) => keyOf(pair) === 'access_token').map((pair) => {
    const eq = pair.indexOf('=');
    try {
      return eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      return '';
    }
  });
  // Every credential-looking segment goes, also one written after a `;` inside another pair.
  const kept = pairs.flatMap((pair) => {
    if (looksLikeCredential(pair)) return [];
    const parts = pair.split(';');
    const clean = parts.filter((part, i) => i === 0 || !looksLikeCredential(part)).join(';');
    return [clean];
  });
  if (tokens.length > 0) {
    // One non-empty value, or null: present but unusable (empty, repeated, badly encoded).
    queryTokens.set(req, tokens.length === 1 && tokens[0] ? tokens[0] : null);
  }
  const rest = kept.join('&');
  if (rest === url.slice(q + 1)) return url;
  const clean = url.slice(0, q) + (rest === '' ? '' : `?${rest}`);
  (req as IncomingMessage & { originalUrl?: string }).originalUrl = clean;
  return clean;
}

/** The `access_token` query value of this request: a string, null when present but unusable, undefined when absent. */
export const queryAccessToken = (req: IncomingMessage): string | null | undefined => queryTokens.get(req);
