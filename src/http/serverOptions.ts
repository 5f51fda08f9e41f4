import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyHttpOptions, FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config.js';
import { errors, type ErrorCode } from '../errors.js';
import { stripAccessToken } from './accessToken.js';
import { instanceOf, problemDocument } from './errorHandler.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface ServerOptionsHooks {
  /** Told the code of every answer the router or Node's parser refuses before a route runs: the metrics count them. */
  onFrameworkError: (code: ErrorCode) => void;
  /** How long the start-up database check may take at most (the store's conformanceBoundMs): the onReady hook's timeout allows it. */
  databaseCheckBoundMs: number;
}

/**
 * Fastify's server options: request ids, body limit, timeouts and URL handling.
 * Slow or stuck clients cannot hold a connection forever. The request timeout must also reach
 * http.createServer: Node (20) enforces it on a trickled BODY only when headersTimeout <=
 * requestTimeout, which its constructor arranges but Fastify's later `server.requestTimeout = …`
 * does not (headersTimeout stayed 60 s and a body sent at 1 byte/s was never cut off). Node checks
 * these timeouts every connectionsCheckingInterval (default 30 s, which would double the limit):
 * check 10 times per period.
 */
export function serverOptions (config: AppConfig, { onFrameworkError, databaseCheckBoundMs }: ServerOptionsHooks): FastifyHttpOptions<Server> {
  return {
    // The start-up onReady hook runs the database check (bounded by databaseCheckBoundMs) and creates the
    // index plan: Fastify's default 10 s for a hook is less than a loaded machine takes for both (a crash
    // storm of 3 processes starting at once on 2 busy cores took longer), and a timed-out hook fails the start.
    pluginTimeout: databaseCheckBoundMs + 30_000,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // Ids in paths may be 128 characters (contracts `Id`); Fastify's default of 100 answers 414.
    routerOptions: { maxParamLength: 256 },
    requestIdHeader: 'x-request-id',
    genReqId: (req) => {
      const offered = req.headers['x-request-id'];
      return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
    },
    connectionTimeout: config.CONNECTION_TIMEOUT_MS,
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    http: {
      requestTimeout: config.REQUEST_TIMEOUT_MS,
      headersTimeout: Math.min(60_000, config.REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(config.REQUEST_TIMEOUT_MS / 10))),
    },
    // An idle keep-alive connection is an idle connection: never kept past CONNECTION_TIMEOUT_MS either.
    keepAliveTimeout: Math.min(5_000, config.CONNECTION_TIMEOUT_MS),
    forceCloseConnections: 'idle',
    // `?access_token=` (SSE only) leaves the URL before routing and logging: never logged.
    rewriteUrl: stripAccessToken,
    return503OnClosing: true,
    // Malformed URLs and over-long path parameters are rejected by the router before any hook:
    // answer them in the same coded problem+json shape as everything else.
    frameworkErrors: (err, request, reply) => {
      answerRouterRefusal(err, request as unknown as FastifyRequest, reply as unknown as FastifyReply, onFrameworkError);
    },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Socket) => { answerParserRefusal(err, socket, onFrameworkError); },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  };
}

/** A malformed URL or an over-long path parameter, refused by the router: 400 `validation-failed`. */
function answerRouterRefusal (err: { code?: string }, request: FastifyRequest, reply: FastifyReply, onFrameworkError: (code: ErrorCode) => void): void {
  const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
  const error = errors.validationFailed([{ field: '/params', message: tooLong ? 'longer than 256 characters' : 'malformed percent-encoding' }]);
  onFrameworkError(error.code);
  void reply.code(400).type('application/problem+json').header('x-request-id', request.id).header('cache-control', 'no-store')
    .send(problemDocument(error, request.id, instanceOf(request)));
}

/**
 * What Node's HTTP parser refuses before Fastify sees a request — a head over 16 KiB, a malformed
 * Content-Length or header, a request that did not arrive in time — is answered in the same coded
 * problem+json shape as everything else (Fastify's default is a bare JSON without code or headers),
 * written on the socket, which is then closed.
 */
function answerParserRefusal (err: NodeJS.ErrnoException, socket: Socket, onFrameworkError: (code: ErrorCode) => void): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? errors.requestTimeout()
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? errors.requestHeaderTooLarge()
      : errors.validationFailed([{ field: '/headers', message: 'malformed HTTP request (a header, Content-Length or the request line)' }]);
  onFrameworkError(error.code);
  const requestId = randomUUID();
  // No request was parsed: the document has no `instance`.
  const body = JSON.stringify(problemDocument(error, requestId));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? ''}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nx-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}
