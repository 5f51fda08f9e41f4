import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onResponseHookHandler } from 'fastify';
import { UNMATCHED_ROUTE, type HttpTelemetry, type RequestLabels } from '../domain/ports/telemetry.js';

/**
 * Times every request into `http_request_duration_seconds`, labelled with the
 * route PATTERN (`/v1/services/:serviceId`), never the raw URL. Each route gets
 * its own onResponse hook (added as the route is declared) that keeps its label
 * objects by method and status code, so the hot path allocates nothing of its
 * own; Fastify's `reply.elapsedTime` is the duration. Requests no route matched
 * are counted once under `route="(unmatched)"`.
 *
 * Call before any route is registered (onRoute hooks only see later routes).
 */
export function instrumentRequests (app: FastifyInstance, metrics: HttpTelemetry): void {
  const timer = (route: string): onResponseHookHandler => {
    const labels = new Map<string, Map<number, RequestLabels>>();
    const labelsFor = (method: string, statusCode: number): RequestLabels => {
      let byStatus = labels.get(method);
      if (!byStatus) labels.set(method, byStatus = new Map());
      let found = byStatus.get(statusCode);
      if (!found) byStatus.set(statusCode, found = Object.freeze({ method, route, status_code: String(statusCode) }));
      return found;
    };
    return function observeRequestDuration (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
      metrics.observeRequest(labelsFor(request.method, reply.statusCode), reply.elapsedTime / 1000);
      done();
    };
  };

  app.addHook('onRoute', (route) => {
    const hook = timer(route.url);
    route.onResponse = route.onResponse === undefined ? [hook] : [...(Array.isArray(route.onResponse) ? route.onResponse : [route.onResponse]), hook];
  });
  const unmatched = timer(UNMATCHED_ROUTE);
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched.call(app, request, reply, done);
    else done();
  });
}
