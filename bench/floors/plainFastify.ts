// Floor (a): plain Fastify on the same machine, answering the benchmarked routes without work.
// Same paths, same request bodies (parsed by Fastify's default JSON parser), and a canned answer
// of the same size as the real service's (captured from it by the bench and set through
// PUT /__bench/canned). No authentication, no schemas, no database, no logging.
import Fastify, { type FastifyReply } from 'fastify';

interface Canned { status: number, body: unknown }

const canned = new Map<string, Canned>();
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });

const answer = (route: string, reply: FastifyReply): unknown => {
  const c = canned.get(route);
  if (!c) return reply.code(500).send({ error: `no canned answer for ${route}` });
  return reply.code(c.status).send(c.body);
};

app.get('/healthz', async () => ({ status: 'ok' }));
app.put('/__bench/canned/:route', async (request) => {
  const { route } = request.params as { route: string };
  canned.set(route, request.body as Canned);
  return { ok: true };
});
app.post('/v1/deployment-snapshots', async (_request, reply) => answer('report', reply));
app.post('/v1/services/:serviceId/image-releases/:releaseId/promote', async (_request, reply) => answer('promote', reply));
app.get('/v1/services/:serviceId/image-releases', async (_request, reply) => answer('listing', reply));
app.get('/v1/services/:serviceId/rollout', async (_request, reply) => answer('rollout', reply));

process.once('SIGTERM', () => { void app.close(); });
await app.listen({ host: process.env['HOST'] ?? '127.0.0.1', port: Number(process.env['PORT'] ?? 0) });
