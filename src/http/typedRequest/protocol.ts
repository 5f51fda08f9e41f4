import { Type } from '@sinclair/typebox';
import type { AppError } from '../../errors.js';

/**
 * The TypedRequest protocol (`@api.global/typedrequest-interfaces` ITypedRequest), in one place:
 * the envelope, the answer for a failure, and the limits that keep the echo serializable.
 *
 * Extra envelope members the client may add (`localData`, `serverData`, …) are accepted and
 * ignored; the method's `request` payload is validated strictly by the dispatcher. The body parser
 * (src/http/jsonBody.ts) refuses nesting that the echo could not survive.
 */
export const TypedRequestEnvelope = Type.Object({
  method: Type.String({ minLength: 1, maxLength: 128 }),
  request: Type.Unknown(),
  response: Type.Optional(Type.Unknown()),
  correlation: Type.Optional(Type.Object({
    id: Type.String({ minLength: 1, maxLength: 256 }),
    phase: Type.Literal('request'),
  }, { additionalProperties: true })),
}, { additionalProperties: true });

/** A failure echoes the request only up to this size (never unbounded input in an error answer). */
const MAX_ECHO_BYTES = 4096;

/** Echoes the request payload back as the protocol expects, minus the caller's token. */
export function withoutIdentity (payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return {};
  const { identity: _identity, ...rest } = payload as Record<string, unknown>;
  return rest;
}

/** The request as a failure echoes it: without the token, and only when small (bodies nest at most MAX_BODY_DEPTH). */
function echoOf (request: unknown): Record<string, unknown> {
  const payload = withoutIdentity(request);
  return JSON.stringify(payload).length <= MAX_ECHO_BYTES ? payload : {};
}

/** The TypedRequest error payload: `error.data.code` is the stable code. */
const typedRequestError = (error: AppError, requestId: string): { text: string, data: Record<string, unknown> } =>
  ({ text: error.message, data: { code: error.code, requestId, ...error.details } });

/**
 * The TypedRequest reply for a failure. The real client turns any non-2xx into a bare error, so
 * failures are HTTP 200 with `error`, or with `retry` when the client should simply send the same
 * request again later.
 */
export function typedRequestFailure (error: AppError, body: unknown, requestId: string): Record<string, unknown> {
  const envelope = body as { method?: unknown, request?: unknown, correlation?: { id?: unknown } } | undefined;
  const answer: Record<string, unknown> = {
    // Cut to the envelope's own limits: a refused envelope may carry anything there.
    method: typeof envelope?.method === 'string' ? envelope.method.slice(0, 128) : '',
    request: echoOf(envelope?.request),
    response: null,
    correlation: { id: typeof envelope?.correlation?.id === 'string' ? envelope.correlation.id.slice(0, 256) : requestId, phase: 'response' },
  };
  const retryAfterMs = error.details['retryAfterMs'];
  if (error.code === 'idempotency-request-in-progress' && typeof retryAfterMs === 'number') {
    answer['retry'] = { waitForMs: retryAfterMs, reason: error.message };
  } else {
    answer['error'] = typedRequestError(error, requestId);
  }
  return answer;
}
