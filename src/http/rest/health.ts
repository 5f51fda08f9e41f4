import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DatabaseHealth } from '../../domain/ports.js';
import { errors } from '../../errors.js';

const READY_PING_TIMEOUT_MS = 1000;

export interface HealthRoutesOptions {
  database: DatabaseHealth;
}

/** Liveness and readiness. Neither needs a token: load balancers and orchestrators call them. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { database }) => {
  app.get('/healthz', {
    logLevel: 'warn',
    schema: {
      tags: ['operations'],
      summary: 'Liveness: the process is up',
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ok') }) },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    logLevel: 'warn',
    schema: {
      tags: ['operations'],
      summary: 'Readiness: the database answers a ping within 1 s and the indexes exist',
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ready') }) },
    },
  }, async () => {
    if (!(await database.ping(READY_PING_TIMEOUT_MS))) throw errors.databaseUnavailable();
    // The database came back after a failed start-up: create the indexes now.
    if (!database.indexesReady) await database.ensureIndexes();
    return { status: 'ready' as const };
  });
};
