import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { errors } from '../../errors.js';
import type { HttpTelemetry } from '../../domain/ports/telemetry.js';
import { bearerToken } from '../auth.js';
import { anyRoute, problemResponses } from '../schemas.js';
import { responseExamples as answers } from '../responseExamples.js';

export interface MetricsRoutesOptions {
  metrics: HttpTelemetry;
  /** When set, GET /metrics needs `Authorization: Bearer <token>` (METRICS_TOKEN). */
  token?: string;
}

const tokenNeeded = 'Needs `Authorization: Bearer <METRICS_TOKEN>`.';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * GET /metrics, Prometheus text format. Open by default, like /healthz: scrapers
 * reach it on the internal network; METRICS_TOKEN puts a static bearer token in
 * front of it (Prometheus `authorization.credentials`) where the port is exposed.
 */
export const metricsRoutes: FastifyPluginAsyncTypebox<MetricsRoutesOptions> = async (app, { metrics, token }) => {
  const expected = token === undefined ? undefined : digest(token);
  app.get('/metrics', {
    logLevel: 'warn',
    ...(expected === undefined
      ? {}
      : {
          onRequest: async (request: FastifyRequest) => {
            // Compared as digests: constant time, whatever the lengths.
            if (!timingSafeEqual(digest(bearerToken(request.headers.authorization)), expected)) {
              throw errors.unauthenticated('the bearer token is not METRICS_TOKEN');
            }
          },
        }),
    schema: {
      tags: ['operations'],
      summary: 'Prometheus metrics (text exposition format 0.0.4)',
      description: 'The series of this process: request counts and durations per route, error answers per code, rollout and lifecycle' +
        ` counters, database heartbeat failures. ${expected === undefined ? 'No token needed (METRICS_TOKEN is not set).' : tokenNeeded}`,
      security: expected === undefined ? [] : [{ bearer: [] }],
      response: {
        200: {
          description: 'the series of this process',
          content: { 'text/plain': { schema: Type.String(), example: answers.metrics } },
        },
        ...problemResponses(anyRoute, expected === undefined ? [] : ['unauthenticated']),
      },
    },
  }, async (_request, reply) => {
    const body = await metrics.exposition();
    return reply.type(metrics.contentType).send(body);
  });
};
