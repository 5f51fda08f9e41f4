import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DatabaseHealth } from '../../domain/ports/database.js';
import { errors } from '../../errors.js';
import { anyRoute, problemResponses, stored } from '../schemas.js';
import { responseExamples as answers } from '../responseExamples.js';

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
      description: 'Answers without touching the database (no token): restart the process when this fails.',
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ok') }, { examples: [answers.health] }), ...problemResponses(anyRoute) },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    logLevel: 'warn',
    schema: {
      tags: ['operations'],
      summary: 'Readiness: the database answers a ping within 1 s, passed the conformance check, and the unique indexes exist',
      description: 'No token. 503 `database-unavailable` while the database is away: take the process out of the load balancer, not restart it.' +
        ' 503 `database-refused` when the database answers but refused what the service needs (names what it refused and the server\'s answer).',
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ready') }, { examples: [answers.ready] }), ...problemResponses(stored) },
    },
  }, async () => {
    if (!(await database.ping(READY_PING_TIMEOUT_MS))) throw errors.databaseUnavailable();
    // The database came back after a failed start-up (or its data was mended): check it and create the indexes now.
    if (!database.ready) await database.prepare();
    return { status: 'ready' as const };
  });
};
