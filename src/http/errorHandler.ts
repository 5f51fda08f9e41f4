import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors, isAppError, type AppError, type ErrorCode, type Problem } from '../errors.js';
import { typedRequestFailure } from './typedRequest/protocol.js';

interface FastifyValidationItem { instancePath?: string, message?: string }

/**
 * Turns whatever was thrown into an AppError. Fastify's own errors (body too large, bad JSON,
 * schema validation, prototype poisoning) become coded 4xx; everything else is an internal
 * error whose details stay in the log. (The store already turned an unreachable database into
 * `database-unavailable`.)
 */
export function toAppError (err: unknown, context: { bodyLimitBytes?: number, contentType?: string } = {}): AppError {
  if (isAppError(err)) return err;
  const fe = err as Partial<FastifyError> & { validation?: FastifyValidationItem[], validationContext?: string };
  if (Array.isArray(fe.validation)) {
    const part = fe.validationContext ?? 'body';
    const problems: Problem[] = fe.validation.map((v) => ({ field: `/${part}${v.instancePath ?? ''}`, message: v.message ?? 'is invalid' }));
    return errors.validationFailed(problems);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(context.bodyLimitBytes);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.unsupportedMediaType(context.contentType);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.validationFailed([{ field: '/body', message: fe.message ?? 'invalid JSON' }]);
    default:
      break;
  }
  // JSON.parse SyntaxError and secure-json-parse's prototype-poisoning error carry status 400.
  if (fe.statusCode === 400) return errors.validationFailed([{ field: '/body', message: fe.message ?? 'invalid body' }]);
  if (fe.statusCode === 413) return errors.payloadTooLarge(context.bodyLimitBytes);
  if (fe.statusCode === 415) return errors.unsupportedMediaType(context.contentType);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return errors.validationFailed([{ field: '/', message: fe.message ?? 'the request is not valid' }]);
  }
  return errors.internalError(err);
}

/**
 * The RFC 9457 problem document, the one builder of every error answer (the error handler, the
 * router's and Node's parser's refusals in src/http/serverOptions.ts): `code` is the stable machine
 * code, `requestId` finds the log lines, `instance` is the path asked for (absent when Node's parser
 * refused the request before it had one).
 */
export function problemDocument (error: AppError, requestId: string, instance?: string): Record<string, unknown> {
  return {
    type: `urn:cloudly-release:error:${error.code}`,
    title: error.title,
    status: error.statusCode,
    detail: error.message,
    code: error.code,
    ...(instance === undefined ? {} : { instance }),
    requestId,
    ...error.details,
  };
}

/** A problem document's `instance`: the request's path, without its query, at most 512 characters. */
export const instanceOf = (request: FastifyRequest): string => (request.url.split('?')[0] ?? '').slice(0, 512);

export interface ErrorHandlingOptions {
  /** Told the code of every error answer (REST or TypedRequest): the metrics count them. */
  onErrorAnswered?: (code: ErrorCode) => void;
  bodyLimitBytes?: number;
}

/** The one error handler: problem+json for REST, the TypedRequest error envelope on /typedrequest. */
export function registerErrorHandling (app: FastifyInstance, opts: ErrorHandlingOptions = {}): void {
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // The route's own limit: snapshot reports and /typedrequest take a larger one than the rest.
    const bodyLimitBytes = request.routeOptions.bodyLimit;
    const error = toAppError(err, { bodyLimitBytes, contentType: request.headers['content-type'] });
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
      return reply.code(200).send(typedRequestFailure(error, request.body, request.id));
    }
    for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
    return reply.code(error.statusCode).type('application/problem+json').send(problemDocument(error, request.id, instanceOf(request)));
  });

  app.setNotFoundHandler(async (request, reply) => {
    const error = errors.notFound(request.method, request.url.split('?')[0] ?? '');
    opts.onErrorAnswered?.(error.code);
    return reply.code(404).type('application/problem+json').send(problemDocument(error, request.id, instanceOf(request)));
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on POST /typedrequest: failures are answered as TypedRequest envelopes. */
    typedRequest?: boolean;
  }
}
