// The REST API as the page uses it: the token from sessionStorage on every call, RFC 9457
// problems turned into ApiError, and one place that sends the user back to the token form.

const TOKEN_KEY = 'cloudly-console-token';

/** The token lives in this tab's session storage only: gone when the tab closes, never in localStorage. */
export const token = {
  get: () => window.sessionStorage.getItem(TOKEN_KEY),
  set: (value) => { window.sessionStorage.setItem(TOKEN_KEY, value); },
  clear: () => { window.sessionStorage.removeItem(TOKEN_KEY); },
};

/** An API answer that is not 2xx (`problem` is the problem document), or no answer at all (`network`). */
export class ApiError extends Error {
  constructor (message, { status = 0, problem = {}, network = false } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
    this.code = problem.code ?? (network ? 'network-error' : `http-${status}`);
    this.network = network;
  }
}

let onUnauthenticated = () => {};

/** What to do when the server answers 401 (the app shows the token form with the server's message). */
export function whenUnauthenticated (handler) {
  onUnauthenticated = handler;
}

/** `/v1/…` relative to the page, so the console works behind a proxy that adds a path prefix. */
export const apiUrl = (path) => new URL(`..${path}`, window.location.href).toString();

const enc = encodeURIComponent;

async function problemOf (res) {
  try {
    return await res.json();
  } catch {
    return {};
  }
}

/**
 * One API call. Resolves with the JSON body; rejects with ApiError. `idempotencyKey` is
 * sent as the `Idempotency-Key` header (promote, roll back, abort).
 */
export async function call (path, { method = 'GET', body, idempotencyKey, bearer = token.get() } = {}) {
  const headers = { accept: 'application/json' };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  let res;
  try {
    res = await fetch(apiUrl(path), { method, headers, cache: 'no-store', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  } catch (err) {
    throw new ApiError(`no answer from the server (${err instanceof Error ? err.message : 'network error'})`, { network: true });
  }
  if (res.ok) return res.status === 204 ? {} : res.json();
  const problem = await problemOf(res);
  const error = new ApiError(problem.detail ?? `HTTP ${res.status}`, { status: res.status, problem });
  if (res.status === 401) onUnauthenticated(error.message);
  throw error;
}

/** Every service, following `nextCursor` (at most `maxPages` pages of 200). */
export async function listAllServices (maxPages = 25) {
  const services = [];
  let cursor;
  for (let page = 0; page < maxPages; page++) {
    const query = `limit=200${cursor ? `&cursor=${enc(cursor)}` : ''}`;
    const answer = await call(`/v1/services?${query}`);
    services.push(...answer.services);
    cursor = answer.nextCursor;
    if (!cursor) return { services, complete: true };
  }
  return { services, complete: false };
}

export const getService = (id) => call(`/v1/services/${enc(id)}`);
export const getRollout = (id) => call(`/v1/services/${enc(id)}/rollout`);
export const getReleases = (id, cursor) => call(`/v1/services/${enc(id)}/image-releases?limit=20${cursor ? `&cursor=${enc(cursor)}` : ''}`);
export const getHistory = (id) => call(`/v1/services/${enc(id)}/rollouts?limit=20`);

/**
 * The SSE stream. EventSource cannot send headers, so this one URL carries the token as
 * `access_token` (the server accepts it on this route only and strips it before logging).
 */
export const eventsUrl = (id) => `${apiUrl(`/v1/services/${enc(id)}/rollout/events`)}?access_token=${enc(token.get() ?? '')}`;

/** The token's claims, for showing who is signed in. Not verified here: the server verifies every call. */
export function claimsOf (jwt) {
  try {
    const payload = jwt.split('.')[1] ?? '';
    return JSON.parse(window.atob(payload.replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return {};
  }
}
