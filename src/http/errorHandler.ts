import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError, databaseUnavailable, validationFailed, type ErrorCode, type Problem } from '../errors.js';
import { isDatabaseUnavailableError } from '../store/mongo.js';

interface FastifyValidationItem { instancePath?: string, message?: string }

/**
 * Turns whatever was thrown into an AppError. Fastify's own errors (body too
 * large, bad JSON, schema validation, prototype poisoning) become coded 4xx;
 * an unreachable database becomes `database-unavailable`; everything else is
 * an internal error whose details stay in the log.
 */
export function toAppError (err: unknown): AppError {
  if (isAppError(err)) return err;
  if (isDatabaseUnavailableError(err)) return databaseUnavailable(err);
  const fe = err as Partial<FastifyError> & { validation?: FastifyValidationItem[], validationContext?: string };
  if (Array.isArray(fe.validation)) {
    const part = fe.validationContext ?? 'body';
    const problems: Problem[] = fe.validation.map((v) => ({
      field: `/${part}${v.instancePath ?? ''}`,
      message: v.message ?? 'is invalid',
    }));
    return validationFailed(problems);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload-too-large', fe.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('unsupported-media-type', fe.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return validationFailed([{ field: '/body', message: fe.message ?? 'invalid JSON' }]);
    default:
      break;
  }
  // JSON.parse SyntaxError and secure-json-parse's prototype-poisoning error carry status 400.
  if (fe.statusCode === 400) {
    return validationFailed([{ field: '/body', message: fe.message ?? 'invalid body' }]);
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new AppError(fe.statusCode === 413 ? 'payload-too-large' : fe.statusCode === 415 ? 'unsupported-media-type' : 'validation-failed', fe.message);
  }
  return new AppError('internal-error', 'An internal error occurred; the request id identifies it in the server log', { cause: err });
}

export function problemDocument (error: AppError, request: FastifyRequest): Record<string, unknown> {
  return {
    type: `urn:cloudly-release:error:${error.code}`,
    title: error.title,
    status: error.statusCode,
    detail: error.message,
    code: error.code,
    instance: (request.url.split('?')[0] ?? '').slice(0, 512),
    requestId: request.id,
    ...error.details,
  };
}

/** The TypedRequest error payload: `error.data.code` is the stable code. */
export function typedRequestError (error: AppError, request: FastifyRequest): { text: string, data: Record<string, unknown> } {
  return { text: error.message, data: { code: error.code, requestId: request.id, ...error.details } };
}

export interface ErrorHandlingOptions {
  /** Told the code of every error answer (REST or TypedRequest): the metrics count them. */
  onErrorAnswered?: (code: ErrorCode) => void;
}

export function registerErrorHandling (app: FastifyInstance, opts: ErrorHandlingOptions = {}): void {
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const error = toAppError(err);
    opts.onErrorAnswered?.(error.code);
    if (error.code === 'internal-error') {
      request.log.error({ err }, 'request failed');
    } else if (error.statusCode >= 500) {
      // Expected outages (database away): one line, no stack per request.
      request.log.warn({ code: error.code, cause: error.cause instanceof Error ? error.cause.message : undefined }, error.message);
    } else {
      request.log.info({ code: error.code, detail: error.message }, 'request rejected');
    }
    if (request.routeOptions.config.typedRequest === true) {
      return reply.code(200).send(typedRequestFailure(error, request));
    }
    for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
    return reply.code(error.statusCode).type('application/problem+json').send(problemDocument(error, request));
  });

  app.setNotFoundHandler(async (request, reply) => {
    const error = new AppError('not-found', `no route ${request.method} ${(request.url.split('?')[0] ?? '').slice(0, 512)}`);
    opts.onErrorAnswered?.(error.code);
    return reply.code(404).type('application/problem+json').send(problemDocument(error, request));
  });
}

/**
 * The TypedRequest reply for a failure. The real client turns any non-2xx into a
 * bare error, so failures are HTTP 200 with `error`, or with `retry` when the
 * client should simply send the same request again later.
 */
export function typedRequestFailure (error: AppError, request: FastifyRequest): Record<string, unknown> {
  const body = request.body as { method?: unknown, request?: unknown, correlation?: { id?: unknown } } | undefined;
  const envelope: Record<string, unknown> = {
    method: typeof body?.method === 'string' ? body.method : '',
    request: nestedDeeperThan(body?.request, MAX_ENVELOPE_DEPTH) ? {} : withoutIdentity(body?.request),
    response: null,
    correlation: { id: typeof body?.correlation?.id === 'string' ? body.correlation.id : request.id, phase: 'response' },
  };
  const retryAfterMs = error.details['retryAfterMs'];
  if (error.code === 'idempotency-request-in-progress' && typeof retryAfterMs === 'number') {
    envelope['retry'] = { waitForMs: retryAfterMs, reason: error.message };
  } else {
    envelope['error'] = typedRequestError(error, request);
  }
  return envelope;
}

/**
 * The deepest nesting a TypedRequest envelope may have. Anything deeper is refused before
 * it is echoed: serializing the echo (JSON.stringify recurses) overflows the stack at some
 * thousands of levels, which answered 500 for `request: {"a":{"a":…}}` 100 000 levels deep.
 * Real payloads nest less than 10 levels.
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

const nestedDeeperThan = (value: unknown, limit: number): boolean => pathNestedDeeperThan(value, limit) !== undefined;

/** Echoes the request payload back as the protocol expects, minus the caller's token. */
export function withoutIdentity (payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return {};
  const { identity: _identity, ...rest } = payload as Record<string, unknown>;
  return rest;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on POST /typedrequest: failures are answered as TypedRequest envelopes. */
    typedRequest?: boolean;
  }
}
