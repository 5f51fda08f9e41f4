import { Type } from '@sinclair/typebox';
import type { AppError } from '../../errors.js';

/**
 * The TypedRequest protocol (`@api.global/typedrequest-interfaces` ITypedRequest), in one place:
 * the envelope, the answer for a failure, and the limits that keep the echo serializable.
 *
 * Extra envelope members the client may add (`localData`, `serverData`, …) are accepted and
 * ignored; the method's `request` payload is validated strictly by the dispatcher.
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

/**
 * The deepest nesting a TypedRequest envelope may have. Anything deeper is refused before it is
 * echoed: serializing the echo (JSON.stringify recurses) overflows the stack at some thousands of
 * levels, which answered 500 for `request: {"a":{"a":…}}` 100 000 levels deep. Real payloads nest
 * less than 10 levels.
 */
export const MAX_ENVELOPE_DEPTH = 64;

/**
 * The path (keys and indexes) to an array or object nested more than `limit` levels deep
 * inside `value`, or undefined when there is none. Iterative: safe at any depth.
 */
export function pathNestedDeeperThan (value: unknown, limit: number): string[] | undefined {
  // Only arrays and objects are visited; a visit knows its parent, so the path is built only
  // for the one answer (every request body is walked, and most are shallow and fine).
  interface Visit { node: object, depth: number, key: string, parent: Visit | undefined }
  const isNode = (v: unknown): v is object => v !== null && typeof v === 'object';
  if (!isNode(value)) return undefined;
  const stack: Visit[] = [{ node: value, depth: 0, key: '', parent: undefined }];
  for (let visit = stack.pop(); visit !== undefined; visit = stack.pop()) {
    if (visit.depth >= limit) {
      const path: string[] = [];
      for (let v: Visit | undefined = visit; v?.parent !== undefined; v = v.parent) path.push(v.key);
      return path.reverse();
    }
    for (const [key, child] of Object.entries(visit.node)) {
      if (isNode(child)) stack.push({ node: child, depth: visit.depth + 1, key, parent: visit });
    }
  }
  return undefined;
}

/** Echoes the request payload back as the protocol expects, minus the caller's token. */
export function withoutIdentity (payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return {};
  const { identity: _identity, ...rest } = payload as Record<string, unknown>;
  return rest;
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
    method: typeof envelope?.method === 'string' ? envelope.method : '',
    request: pathNestedDeeperThan(envelope?.request, MAX_ENVELOPE_DEPTH) ? {} : withoutIdentity(envelope?.request),
    response: null,
    correlation: { id: typeof envelope?.correlation?.id === 'string' ? envelope.correlation.id : requestId, phase: 'response' },
  };
  const retryAfterMs = error.details['retryAfterMs'];
  if (error.code === 'idempotency-request-in-progress' && typeof retryAfterMs === 'number') {
    answer['retry'] = { waitForMs: retryAfterMs, reason: error.message };
  } else {
    answer['error'] = typedRequestError(error, requestId);
  }
  return answer;
}
