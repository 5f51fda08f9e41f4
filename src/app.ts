import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { TypeBoxValidatorCompiler, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { AppConfig, AuthKey } from './config.js';
import { Database } from './store/mongo.js';
import { createTokenVerifier, type TokenVerifier } from './http/auth.js';
import { problemDocument, registerErrorHandling } from './http/errorHandler.js';
import { AppError } from './errors.js';
import { healthRoutes } from './http/healthRoutes.js';
import { typedRequestRoutes } from './http/typedRequest.js';
import { serviceRoutes } from './http/serviceRoutes.js';
import { releaseRoutes } from './http/releaseRoutes.js';
import { clusterRoutes } from './http/clusterRoutes.js';
import { createOperations } from './http/operations.js';
import { serviceOperations } from './domain/services.js';
import { createStores } from './store/index.js';
import { releaseLifecycle } from './domain/releaseLifecycle.js';
import { computeTargetScope } from './domain/clusters.js';
import { rolloutHistory } from './domain/history.js';
import { lifecycleRoutes } from './http/lifecycleRoutes.js';
import { reportRoutes } from './http/reportRoutes.js';
import { reportOperations } from './domain/reports.js';
import { faultHookFromConfig, type FaultHook } from './faults.js';
import { rolloutRoutes } from './http/rolloutRoutes.js';
import { StatusHub, stripAccessToken } from './http/statusStream.js';
import { Metrics } from './metrics.js';
import { instrumentRequests, metricsRoutes } from './http/metricsRoutes.js';
import { consolePlugin } from './console/plugin.js';

export type ResolvedConfig = AppConfig & { mongodbUri: string, auth: AuthKey };

export interface BuildAppOptions {
  config: ResolvedConfig;
  /** Fastify logger options; defaults to pino at `config.logLevel` with secrets redacted. */
  logger?: FastifyServerOptions['logger'];
  /** Crash injection for tests; defaults to FAULT_INJECTION (off). */
  fault?: FaultHook;
  /** SSE status stream timing (tests); defaults: poll every 250 ms, keep-alive every 15 s. */
  statusStream?: { pollIntervalMs?: number, heartbeatMs?: number };
}

declare module 'fastify' {
  interface FastifyInstance {
    database: Database;
    verifier: TokenVerifier;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Never logged: tokens, in headers and in TypedRequest identities. */
export const redactPaths = ['req.headers.authorization', 'req.headers.cookie', 'request.identity.jwt', '*.identity.jwt', 'token'];

/**
 * Wires the service together and returns it un-started (tests use `inject` or
 * `listen` on port 0). The database is connected lazily; indexes are created
 * at ready time, or later by /readyz when the database was away at start-up.
 */
export async function buildApp (opts: BuildAppOptions): Promise<FastifyInstance> {
  const { config } = opts;
  // One registry per app: buildApp runs many times in one test process.
  const metrics = new Metrics();
  const app = Fastify({
    logger: opts.logger ?? { level: config.logLevel, redact: { paths: redactPaths, censor: '[redacted]' } },
    bodyLimit: config.bodyLimitBytes,
    // Ids in paths may be 128 characters (contracts `Id`); Fastify's default of 100 answers 414.
    routerOptions: { maxParamLength: 256 },
    requestIdHeader: 'x-request-id',
    genReqId: (req) => {
      const offered = req.headers['x-request-id'];
      return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
    },
    // Slow or stuck clients cannot hold a connection forever. The request timeout must also reach
    // http.createServer: Node (20) enforces it on a trickled BODY only when headersTimeout <= requestTimeout,
    // which its constructor arranges but Fastify's later `server.requestTimeout = …` does not (headersTimeout
    // stayed 60 s and a body sent at 1 byte/s was never cut off). Node checks these timeouts every
    // connectionsCheckingInterval (default 30 s, which would double the limit): check 10 times per period.
    connectionTimeout: config.connectionTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(config.requestTimeoutMs / 10))),
    },
    keepAliveTimeout: 5_000,
    forceCloseConnections: 'idle',
    // `?access_token=` (SSE only) leaves the URL before routing and logging: never logged.
    rewriteUrl: stripAccessToken,
    return503OnClosing: true,
    // Malformed URLs and over-long path parameters are rejected by the router before any hook:
    // answer them in the same coded problem+json shape as everything else.
    frameworkErrors: (err, request, reply) => {
      const error = new AppError('validation-failed', err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path parameter is too long' : 'the URL is malformed', {
        details: { problems: [{ field: '/params', message: err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'longer than 256 characters' : 'malformed percent-encoding' }] },
      });
      const raw = reply as unknown as FastifyReply;
      metrics.errorAnswered(error.code);
      void raw.code(400).type('application/problem+json').header('x-request-id', request.id).send(problemDocument(error, request as unknown as FastifyRequest));
    },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  // Before any route: every route declared from here on is timed under its pattern.
  instrumentRequests(app, metrics);
  // The API speaks JSON only: anything else is 415, not a string that fails validation later.
  app.removeContentTypeParser(['text/plain']);

  app.decorate('database', new Database({
    uri: config.mongodbUri,
    dbName: config.mongodbDb,
    timeoutMs: config.mongodbTimeoutMs,
    onMonitorHung: (info) => { app.log.error(info, 'the database driver\'s server monitor hung; reconnecting the client'); },
  }));
  app.decorate('verifier', await createTokenVerifier(config.auth));
  app.addHook('onClose', async () => { await app.database.close(); });
  app.database.onHeartbeatFailed(() => { metrics.databaseHeartbeatFailures.inc(); });
  app.addHook('onReady', async () => {
    try {
      await app.database.ensureIndexes();
    } catch (err) {
      app.log.warn({ err }, 'database not reachable at start-up; /readyz fails until it is');
    }
  });
  // Shutting down (close() called): every answer closes its connection. Without this, a keep-alive
  // connection whose request finishes during the drain stays open until keepAliveTimeout, and the
  // exit waits for it (Node closes idle connections once, when the listening socket closes).
  let closing = false;
  app.addHook('preClose', async () => { closing = true; });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) reply.header('connection', 'close');
  });

  registerErrorHandling(app, { onErrorAnswered: (code) => { metrics.errorAnswered(code); } });

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Cloudly image-release control plane',
        version: '0.1.0',
        description: 'Promote, roll back and verify container images by immutable sha256 digest.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const stores = createStores(app.database);
  const lifecycle = releaseLifecycle({
    repos: stores,
    computeTargetScope,
    now: Date.now,
    leaseMs: config.idempotencyLeaseMs,
    fault: opts.fault ?? faultHookFromConfig(config.faultInjection),
  });
  const reports = reportOperations({ repos: { ...stores, services: metrics.countStatusConflicts(stores.services) }, now: Date.now });
  const operations = createOperations({ stores, lifecycle, reports, metrics });
  await app.register(healthRoutes);
  await app.register(metricsRoutes, { metrics, ...(config.metricsToken === undefined ? {} : { token: config.metricsToken }) });
  await app.register(typedRequestRoutes, { operations: Object.values(operations), verifier: app.verifier });
  await app.register(serviceRoutes, {
    operations,
    verifier: app.verifier,
    serviceView: (id) => stores.services.findWithHold(id),
    services: serviceOperations({ services: stores.services, now: Date.now }),
  });
  await app.register(reportRoutes, { operations, verifier: app.verifier });
  await app.register(lifecycleRoutes, {
    operations,
    verifier: app.verifier,
    rolloutHistory: (serviceId, limit, cursor) => rolloutHistory({
      serviceExists: (id) => stores.services.exists(id),
      listRollouts: (id, n, before) => stores.rollouts.list(id, n, before),
    }, serviceId, limit, cursor),
  });
  await app.register(releaseRoutes, { operations, verifier: app.verifier });
  await app.register(clusterRoutes, { operations, verifier: app.verifier });
  await app.register(consolePlugin);

  // Expired idempotency records: MongoDB's TTL index removes them; the local development
  // database has no TTL, so every process also sweeps (idempotent, a few per interval).
  const sweep = setInterval(() => {
    stores.idempotency.sweepExpired(Date.now()).then((deleted) => {
      if (deleted > 0) app.log.info({ deleted }, 'removed expired idempotency records');
    }, (err: unknown) => { app.log.warn({ err }, 'idempotency sweep failed; retrying at the next interval'); });
  }, config.idempotencySweepIntervalMs);
  sweep.unref();
  app.addHook('preClose', async () => { clearInterval(sweep); });

  // One status hub per process: polls the database for services with SSE listeners.
  const statusHub = new StatusHub({
    source: stores.services,
    log: app.log,
    ...(opts.statusStream?.pollIntervalMs === undefined ? {} : { pollIntervalMs: opts.statusStream.pollIntervalMs }),
    ...(opts.statusStream?.heartbeatMs === undefined ? {} : { heartbeatMs: opts.statusStream.heartbeatMs }),
  });
  // preClose, not onClose: the HTTP server waits for open connections before onClose hooks
  // run, so the streams must end first or close() (SIGTERM) would hang on them.
  app.addHook('preClose', async () => { statusHub.close(); });
  await app.register(rolloutRoutes, { verifier: app.verifier, rolloutState: (id) => stores.services.findRolloutState(id), hub: statusHub });

  return app;
}
