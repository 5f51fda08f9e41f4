import type { FastifyInstance, FastifyLoggerOptions, FastifyServerOptions } from 'fastify';
import Fastify from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { authKeyOf, ConfigError, faultPointsOf, registrySettingsOf, trustedRootOf, type AppConfig } from './config.js';
import { consolePlugin } from './console/plugin.js';
import type { AttestationRegistry } from './domain/ports/attestations.js';
import type { DatabaseHealth } from './domain/ports/database.js';
import type { Repositories } from './domain/ports/index.js';
import { isAppError } from './errors.js';
import { faultHookFromConfig, type FaultHook } from './faults.js';
import { createTokenVerifier, type TokenVerifier } from './http/auth.js';
import { registerErrorHandling } from './http/errorHandler.js';
import { instrumentRequests } from './http/instrumentation.js';
import { registerJsonBody } from './http/jsonBody.js';
import { registerOpenApi } from './http/openapi.js';
import { serverOptions } from './http/serverOptions.js';
import { attestationRoutes } from './http/rest/attestations.js';
import { clusterRoutes } from './http/rest/clusters.js';
import { healthRoutes } from './http/rest/health.js';
import { metricsRoutes } from './http/rest/metrics.js';
import { releaseRoutes } from './http/rest/releases.js';
import { reportRoutes } from './http/rest/reports.js';
import { rolloutRoutes } from './http/rest/rollouts.js';
import { rolloutStatusRoutes } from './http/rest/rolloutStatus.js';
import { versionRoutes } from './http/rest/version.js';
import { governanceRoutes } from './http/rest/governance.js';
import { serviceRoutes } from './http/rest/services.js';
import { StatusHub } from './http/sse/hub.js';
import { typedRequestMethods } from './http/typedRequest/methods.js';
import { typedRequestRoute } from './http/typedRequest/route.js';
import { webhookTypedRequestMethods } from './http/typedRequest/webhookMethods.js';
import { validatorCompiler } from './http/validator.js';
import { Metrics } from './outbound/metrics.js';
import { attestationRegistryFrom, RegistryClient } from './outbound/registry/index.js';
import { attestationSignerFrom } from './outbound/signer/index.js';
import type { ImageRegistry } from './domain/ports/registry.js';
import { keylessVerifierFrom, LruVerificationCache } from './domain/trust/index.js';
import { trustChecker } from './operations/trustCheck.js';
import { AddressPolicy } from './outbound/webhooks/addressPolicy.js';
import { HttpWebhookSender, WebhookTargetRules } from './outbound/webhooks/sender.js';
import { abort, promote, rollBack } from './operations/manualRollout.js';
import { clusterOperations } from './operations/clusters.js';
import { governanceOperations } from './operations/governance.js';
import { approvalOperations } from './operations/approvals.js';
import { breakGlassOperations } from './operations/breakGlass.js';
import { promoteAfterWindows } from './operations/windowPromotion.js';
import { promoteDownstream } from './operations/pipelinePromotion.js';
import type { Operations } from './operations/index.js';
import { attestationIssuer } from './operations/attestations.js';
import { rolloutIssuer } from './operations/issueRollout.js';
import { rolloutLifecycle, type LifecycleLog } from './operations/lifecycle.js';
import { observePushEvent } from './operations/observePushEvent.js';
import { rolloutReads } from './operations/readRollout.js';
import { releaseReads } from './operations/releases.js';
import { reportSnapshot } from './operations/reportSnapshot.js';
import { serviceOperations } from './operations/services.js';
import { webhookDelivery } from './operations/webhookDelivery.js';
import { webhookOperations, type WebhookOperations } from './operations/webhooks.js';
import { webhookRoutes } from './http/rest/webhooks.js';
import type { Telemetry } from './domain/ports/telemetry.js';
import { conformanceBoundMs, InvalidConnectionString, openStore } from './store/index.js';
import { randomUUID } from 'node:crypto';

export interface BuildAppOptions {
  /** The configuration; MONGODB_URI and a JWT key must be set (src/server.ts provisions them for development). */
  config: AppConfig;
  /** Fastify logger options; defaults to the production logger (`loggerOptions`). */
  logger?: FastifyServerOptions['logger'];
  /** Crash injection for tests; defaults to FAULT_INJECTION (off). */
  fault?: FaultHook;
  /** SSE status stream timing (tests); defaults: poll every 250 ms, keep-alive every 15 s. */
  statusStream?: { pollIntervalMs?: number, heartbeatMs?: number };
  /** The use cases' clock (tests of deadlines and stability windows); defaults to Date.now. */
  now?: () => number;
  /**
   * Run the database conformance check before the repositories reach the database (fail closed: a
   * server that would break a guarantee is refused, docs/operations.md); default true. The tests' apps
   * turn it off (the suite's database is checked by test/integration/store/conformance.test.ts).
   */
  checkDatabase?: boolean;
}

/** Never logged: tokens, in headers and in TypedRequest identities. */
export const redactPaths = ['req.headers.authorization', 'req.headers.cookie', 'request.identity.jwt', '*.identity.jwt', 'token'];

/** The logger every process runs with: pino at LOG_LEVEL, secrets redacted. */
export const loggerOptions = (config: AppConfig): FastifyLoggerOptions & { redact: { paths: string[], censor: string } } =>
  ({ level: config.LOG_LEVEL, redact: { paths: redactPaths, censor: '[redacted]' } });

/** What a part built from one configuration variable throws when the value cannot be used: a ConfigError naming the variable. */
function configured<T> (variable: string, refusal: abstract new (...args: never[]) => Error, build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof refusal) throw new ConfigError(`${variable}: ${err.message}`);
    throw err;
  }
}

/** Snapshot reports carry a whole cluster's deployments: their routes take the larger of the two limits. */
const reportBodyLimit = (config: AppConfig): number => Math.max(config.BODY_LIMIT_BYTES, config.REPORT_BODY_LIMIT_BYTES);

/** Every use case, each from the module named after it. */
interface Composition {
  repos: Repositories;
  telemetry: Telemetry;
  config: AppConfig;
  fault: FaultHook;
  log: LifecycleLog;
  now: () => number;
  /** Where signatures are read from (verification before promotion). */
  registry: ImageRegistry;
  /** Where attestations are attached, when a registry allows writes. */
  attestationRegistry?: AttestationRegistry | undefined;
}

function composeOperations ({ repos, telemetry, config, fault, log, now, registry, attestationRegistry }: Composition): Operations {
  // Verification before promotion (docs/trust.md): the registry, the server's signer, the operator's trusted root.
  const root = trustedRootOf(config);
  const keyless = root === undefined ? undefined : keylessVerifierFrom(root);
  const signer = attestationSignerFrom(config);
  const trust = trustChecker({ repos, registry, signer, keyless, cache: new LruVerificationCache(), now });
  // Attestations owed by successes (docs/attestations.md), attached where a registry allows writes.
  const attestations = attestationIssuer({ repos, signer, now, log, fault, ...(attestationRegistry ? { registry: attestationRegistry } : {}) });
  // The one rollout issuer (compare-and-swap, Idempotency-Key): every use case that starts a rollout issues it through this.
  const issuer = rolloutIssuer({ repos, now, leaseMs: config.IDEMPOTENCY_LEASE_MS, fault, telemetry, log, trust, attestations });
  const eventsRetentionMs = config.EVENTS_RETENTION_DAYS * 24 * 60 * 60 * 1000;
  const promotions = {
    sweep: async (stopping: () => boolean) => await promoteDownstream({ repos, rollouts: issuer, now, log }, stopping) +
      (stopping() ? 0 : await promoteAfterWindows({ repos, rollouts: issuer, now, log }, stopping)),
  };
  const lifecycle = rolloutLifecycle({ repos, rollouts: issuer, telemetry, now, log, fault, eventsRetentionMs, attestations, promotions });
  return {
    lifecycle,
    attestations,
    abort: abort({ issuer, telemetry }),
    services: serviceOperations({ repos, now, trust: { trustedRootConfigured: root !== undefined } }),
    clusters: clusterOperations({ repos, now }),
    governance: governanceOperations({ repos, now }),
    approvals: approvalOperations({ repos, issuer, now, log }),
    breakGlass: breakGlassOperations({ repos, now }),
    releases: releaseReads({ repos }),
    rolloutReads: rolloutReads({ repos, now }),
    promote: promote({ issuer, telemetry }),
    rollBack: rollBack({ issuer, telemetry }),
    observePushEvent: observePushEvent({ repos, rollouts: issuer, telemetry, now }),
    reportSnapshot: reportSnapshot({ repos, telemetry, now, fault, afterStatusChange: lifecycle.afterStatusChange }),
  };
}

/**
 * Every answer carries its request id and `Cache-Control: no-store` (unless it says otherwise):
 * the real TypedRequest client caches successful answers per URL and replays them when the network
 * fails, which would hand a caller another request's answer. Shutting down (close() called): every
 * answer closes its connection.
 */
function registerAnswerHeaders (app: FastifyInstance): void {
  // Without `connection: close`, a keep-alive connection whose request finishes during the drain
  // stays open until keepAliveTimeout, and the exit waits for it (Node closes idle connections
  // once, when the listening socket closes).
  let closing = false;
  app.addHook('preClose', async () => { closing = true; });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    if (closing) reply.header('connection', 'close');
  });
}

/** Expired idempotency records: MongoDB's TTL index removes them; the local development database has no TTL, so every process also sweeps. */
function sweepIdempotencyRecords (app: FastifyInstance, repos: Repositories, intervalMs: number): void {
  const sweep = setInterval(() => {
    repos.idempotency.sweepExpired(Date.now()).then((deleted) => {
      if (deleted > 0) app.log.info({ deleted }, 'removed expired idempotency records');
    }, (err: unknown) => { app.log.warn({ err }, 'idempotency sweep failed; retrying at the next interval'); });
  }, intervalMs);
  sweep.unref();
  app.addHook('preClose', async () => { clearInterval(sweep); });
}

/**
 * At start-up (before listening): the conformance check, then the index plan, each told in the log.
 * A database that breaks a guarantee stops the start (the error is thrown: src/server.ts exits with its
 * line); one that does not answer is checked once it does (the repositories wait for it, /readyz
 * fails until then); refused indexes are named with the server's answer.
 */
async function prepareDatabase (app: FastifyInstance, health: DatabaseHealth): Promise<void> {
  try {
    const report = await health.verifyConformance();
    if (report !== undefined) {
      app.log.info({ server: report.server, elapsedMs: report.elapsedMs }, `database check passed in ${report.elapsedMs} ms (${report.server})`);
      for (const check of report.checks.filter((c) => c.outcome === 'degraded')) app.log.warn(`database: ${check.guarantee} degraded: ${check.detail}`);
    }
  } catch (err) {
    if (isAppError(err) && err.code === 'database-refused') throw err;
    app.log.warn({ err }, 'the database did not answer at start-up: it is checked, and its indexes created, once it does; /readyz fails until then');
    return;
  }
  try {
    const outcome = await health.ensureIndexes();
    for (const refusal of outcome.refused) {
      const fallback = refusal.ttl ? 'expired idempotency records are removed by the periodic sweep only' : 'the queries it serves scan its collection';
      app.log.warn(refusal, `the database refused the index ${refusal.name} on ${refusal.collection} (${refusal.reason}): ${fallback}`);
    }
  } catch (err) {
    if (isAppError(err) && err.code === 'database-refused') {
      app.log.error({ ...err.details }, `${err.message}; /readyz answers database-refused until it is mended`);
    } else {
      app.log.warn({ err }, 'the database did not answer while its indexes were created at start-up; /readyz creates them once it does');
    }
  }
}

/** The store, connected lazily; migrations that rewrote documents are logged. */
function openServiceStore (app: FastifyInstance, uri: string, config: AppConfig, checkConformance: boolean): ReturnType<typeof openStore> {
  return configured('MONGODB_URI', InvalidConnectionString, () => openStore({
    uri,
    dbName: config.MONGODB_DB,
    timeoutMs: config.MONGODB_TIMEOUT_MS,
    onMonitorHung: (info) => { app.log.error(info, 'the database driver\'s server monitor hung; reconnecting the client'); },
    checkConformance,
    onMigrated: (applied) => {
      // A migration with nothing to rewrite (every fresh database) is recorded, not logged.
      for (const m of applied.filter((a) => a.migrated > 0)) {
        app.log.info({ migration: m.version, migrated: m.migrated }, `database migration ${m.version} (${m.name}): ${m.migrated} documents rewritten`);
      }
    },
  }));
}

/** The verifier of access tokens; ConfigError naming AUTH_JWT_PUBLIC_KEY when the key is not one of its algorithm. */
async function tokenVerifierOf (authKey: NonNullable<ReturnType<typeof authKeyOf>>): Promise<Awaited<ReturnType<typeof createTokenVerifier>>> {
  return await createTokenVerifier(authKey).catch((err: unknown) => {
    // Only a public key can be refused here (a secret is used as given): it is not a key of that algorithm.
    const reason = err instanceof Error ? err.message.slice(0, 200) : 'not usable';
    const algorithm = authKey.kind === 'public-key' ? authKey.algorithm : 'HS256';
    throw new ConfigError(`AUTH_JWT_PUBLIC_KEY: not a public key for ${algorithm} (AUTH_JWT_ALGORITHM): ${reason}`);
  });
}

/**
 * Webhooks (docs/webhooks.md): the subscriptions' routes, and the delivery every process runs (a
 * subscription's lease decides which process delivers it), started once the app is ready.
 */
interface WebhookParts { repos: Repositories, metrics: Metrics, config: AppConfig, now: () => number, verifier: TokenVerifier }
async function composeWebhooks (app: FastifyInstance, parts: WebhookParts): Promise<WebhookOperations> {
  const { repos, metrics, config, now } = parts;
  const policy = new AddressPolicy(config.WEBHOOK_ALLOWED_HOSTS);
  const targets = new WebhookTargetRules(policy);
  const sender = new HttpWebhookSender(policy);
  const webhooks = webhookOperations({ repos, targets, now });
  await app.register(webhookRoutes, { webhooks, verifier: parts.verifier });
  const delivery = webhookDelivery({
    repos,
    sender,
    targets,
    telemetry: metrics,
    now,
    log: app.log,
    owner: `${process.pid}:${randomUUID()}`,
    retry: {
      maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
      maxAgeMs: config.WEBHOOK_MAX_AGE_SECONDS * 1000,
      baseDelayMs: config.WEBHOOK_RETRY_BASE_MS,
      maxDelayMs: config.WEBHOOK_RETRY_MAX_MS,
    },
    leaseMs: config.WEBHOOK_LEASE_MS,
    deliveryLogRetentionMs: config.EVENTS_RETENTION_DAYS * 24 * 3600 * 1000,
    source: config.WEBHOOK_EVENT_SOURCE,
    // Longer than a relay takes: a crashed writer's outbox is relayed by the next lifecycle sweep.
    gapGraceMs: 5_000 + 6 * config.LIFECYCLE_SWEEP_INTERVAL_MS,
  });
  let running: { stop: () => Promise<void> } | undefined;
  app.addHook('onReady', async () => { running = delivery.start(config.WEBHOOK_POLL_INTERVAL_MS); });
  app.addHook('preClose', async () => { await running?.stop(); sender.close(); });
  return webhooks;
}

/**
 * Composes the service and returns it un-started (tests use `inject` or `listen` on port 0):
 * the store, the use cases, the REST and TypedRequest adapters and the error handler. The
 * database is connected lazily; indexes are created at ready time, or later by /readyz when the
 * database was away at start-up.
 */
export async function buildApp (opts: BuildAppOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const authKey = authKeyOf(config);
  const uri = config.MONGODB_URI;
  if (!uri || !authKey) throw new Error('buildApp needs MONGODB_URI and a JWT key (AUTH_JWT_SECRET or AUTH_JWT_PUBLIC_KEY)');
  // One registry per app: buildApp runs many times in one test process.
  const metrics = new Metrics();
  const server = serverOptions(config, {
    onFrameworkError: (code) => { metrics.errorAnswered(code); },
    databaseCheckBoundMs: conformanceBoundMs(config.MONGODB_TIMEOUT_MS),
  });
  const app = Fastify({ logger: opts.logger ?? loggerOptions(config), ...server }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  // Before any route: every route declared from here on is timed under its pattern.
  instrumentRequests(app, metrics);
  // The API speaks JSON only: anything else is 415, not a string that fails validation later.
  app.removeContentTypeParser(['text/plain']);
  registerJsonBody(app);

  const store = openServiceStore(app, uri, config, opts.checkDatabase ?? true);
  app.addHook('onClose', async () => { await store.close(); });
  store.onHeartbeatFailed(() => { metrics.databaseHeartbeatFailures.inc(); });
  app.addHook('onReady', async () => { await prepareDatabase(app, store.health); });
  registerAnswerHeaders(app);
  registerErrorHandling(app, { onErrorAnswered: (code) => { metrics.errorAnswered(code); }, bodyLimitBytes: config.BODY_LIMIT_BYTES });

  await registerOpenApi(app);
  const repos = store.repositories;
  const registry = new RegistryClient(registrySettingsOf(config));
  app.addHook('onClose', async () => { registry.close(); });
  // Registry writes (attaching attestations) only where the registry configuration allows them.
  const attestationRegistry = attestationRegistryFrom(registrySettingsOf(config));
  if (attestationRegistry) app.addHook('onClose', async () => { attestationRegistry.close(); });
  const operations = composeOperations({
    repos,
    telemetry: metrics,
    config,
    fault: opts.fault ?? faultHookFromConfig(faultPointsOf(config)),
    log: app.log,
    now: opts.now ?? Date.now,
    registry,
    attestationRegistry,
  });
  const verifier = await tokenVerifierOf(authKey);
  // One status hub per process: polls the database for services with SSE listeners.
  const hub = new StatusHub({
    source: {
      statusEventsAfter: async (id, revision) => {
        const read = await operations.rolloutReads.readStatusEvents(id, revision);
        return read.ok ? read.value : null;
      },
    },
    log: app.log,
    ...opts.statusStream,
  });
  // preClose, not onClose: the HTTP server waits for open connections before onClose hooks
  // run, so the streams must end first or close() (SIGTERM) would hang on them.
  app.addHook('preClose', async () => { hub.close(); });

  await app.register(healthRoutes, { database: store.health });
  await app.register(metricsRoutes, { metrics, token: config.METRICS_TOKEN });
  const webhooks = webhookTypedRequestMethods(await composeWebhooks(app, { repos, metrics, config, now: opts.now ?? Date.now, verifier }));
  await app.register(typedRequestRoute, { methods: [...typedRequestMethods(operations), ...webhooks], verifier, bodyLimit: reportBodyLimit(config) });
  await app.register(serviceRoutes, { services: operations.services, clusters: operations.clusters, verifier });
  await app.register(clusterRoutes, { clusters: operations.clusters, verifier });
  await app.register(releaseRoutes, { operations, verifier });
  await app.register(rolloutRoutes, { operations, verifier });
  await app.register(reportRoutes, { operations, verifier, bodyLimit: reportBodyLimit(config) });
  await app.register(rolloutStatusRoutes, { rolloutReads: operations.rolloutReads, verifier, hub });
  await app.register(versionRoutes, { verifier });
  await app.register(governanceRoutes, { ...operations, verifier });
  await app.register(attestationRoutes, { attestations: operations.attestations, verifier });
  await app.register(consolePlugin);
  sweepIdempotencyRecords(app, repos, config.IDEMPOTENCY_SWEEP_INTERVAL_MS);
  // Progress deadlines, milestones and follow-ups of rollouts in progress, and the domain-event log's
  // relays and retention: every process sweeps (compare-and-swap decides).
  let sweeper: { stop: () => Promise<void> } | undefined;
  app.addHook('onReady', async () => { sweeper = operations.lifecycle.startSweeper(config.LIFECYCLE_SWEEP_INTERVAL_MS); });
  app.addHook('preClose', async () => { await sweeper?.stop(); });
  return app;
}
