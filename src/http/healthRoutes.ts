import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { databaseUnavailable } from '../errors.js';

const READY_PING_TIMEOUT_MS = 1000;

/** Liveness and readiness. Neither needs a token: load balancers and orchestrators call them. */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', {
    logLevel: 'warn',
    schema: {
      tags: ['operations'],
      summary: 'Liveness: the process is up',
      response: { 200: Type.Object({ status: Type.Literal('ok') }) },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    logLevel: 'warn',
    schema: {
      tags: ['operations'],
      summary: 'Readiness: the database answers a ping within 1 s and the indexes exist',
      response: { 200: Type.Object({ status: Type.Literal('ready') }) },
    },
  }, async () => {
    const answered = await app.database.ping(READY_PING_TIMEOUT_MS);
    if (!answered) throw databaseUnavailable();
    if (!app.database.indexesReady) {
      // The database came back after a failed start-up: create the indexes now.
      await app.database.ensureIndexes();
    }
    return { status: 'ready' as const };
  });
};
