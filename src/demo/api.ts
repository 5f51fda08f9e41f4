import { setTimeout as sleep } from 'node:timers/promises';
import type { Principal, TokenSource } from './config.js';

/**
 * The control plane's REST API as the demo uses it: JSON over global fetch, a token per
 * principal, and a few retries of network errors and 5xx. Retrying is safe for every call
 * the demo makes: cluster registration is a PUT, push events are deduplicated by eventId,
 * a promotion carries an Idempotency-Key, and a repeated report sequence is a harmless replay.
 */

/** The server refused the request: an RFC 9457 problem document with a stable `code`. */
export class ProblemError extends Error {
  constructor (readonly status: number, readonly code: string, readonly problem: Record<string, unknown>) {
    super(`${status} ${code}: ${typeof problem['detail'] === 'string' ? problem['detail'] : 'refused'}`);
    this.name = 'ProblemError';
  }
}

/** No answer from the server (connection refused, reset, timed out) after every retry. */
export class UnreachableError extends Error {
  constructor (readonly url: string, cause: unknown) {
    super(`cannot reach the control plane at ${url}: ${describeCause(cause)}`);
    this.name = 'UnreachableError';
  }
}

export interface Call {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  as: Principal;
  body?: unknown;
  headers?: Record<string, string>;
  /** Retries after the first attempt (default 3). */
  retries?: number;
}

export interface Api {
  readonly baseUrl: string;
  call<T>(call: Call): Promise<T>;
}

const REQUEST_TIMEOUT_MS = 10_000;
const RETRY_BASE_MS = 300;

function describeCause (cause: unknown): string {
  const err = cause as { cause?: { code?: string, message?: string }, name?: string, message?: string };
  if (err.name === 'TimeoutError') return 'timed out';
  return err.cause?.code ?? err.cause?.message ?? err.message ?? String(cause);
}

async function send (baseUrl: string, tokens: TokenSource, call: Call): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${await tokens.tokenFor(call.as)}`, ...call.headers };
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  return await fetch(`${baseUrl}${call.path}`, {
    method: call.method,
    headers,
    ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}

async function parsed (res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  try {
    return text === '' ? {} : JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

const retriable = (status: number, body: Record<string, unknown>): boolean =>
  status >= 500 || (status === 409 && body['code'] === 'idempotency-request-in-progress');

export function createApi (baseUrl: string, tokens: TokenSource): Api {
  return {
    baseUrl,
    async call<T>(call: Call): Promise<T> {
      const retries = call.retries ?? 3;
      for (let attempt = 0; ; attempt++) {
        let res: Response;
        try {
          res = await send(baseUrl, tokens, call);
        } catch (err) {
          if (attempt >= retries) throw new UnreachableError(baseUrl, err);
          await sleep(RETRY_BASE_MS * 2 ** attempt);
          continue;
        }
        const body = await parsed(res);
        if (res.ok) return body as T;
        if (!retriable(res.status, body) || attempt >= retries) {
          throw new ProblemError(res.status, typeof body['code'] === 'string' ? body['code'] : `http-${res.status}`, body);
        }
        await sleep(RETRY_BASE_MS * 2 ** attempt);
      }
    },
  };
}
