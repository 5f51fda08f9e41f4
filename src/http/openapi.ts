import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

/**
 * The OpenAPI 3.0.3 document (`/docs/json`, `/docs/yaml`) and Swagger UI (`/docs`), generated from
 * the routes' TypeBox schemas. docs/openapi.md says what a client can rely on and how it is checked
 * (test/integration/http/openapi.test.ts, and the schemathesis run recorded there).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * The schemas are JSON Schema 2019 (TypeBox): `exclusiveMinimum: 0` is a number there, and a boolean
 * beside `minimum` in OpenAPI 3.0.3 (whose schema objects are JSON Schema draft 4/5). Rewritten in the
 * document only; validation keeps the route's own schema.
 */
export function toOpenApi30 (value: Json): Json {
  if (Array.isArray(value)) return value.map(toOpenApi30);
  if (value === null || typeof value !== 'object') return value;
  const out: { [key: string]: Json } = {};
  for (const [key, child] of Object.entries(value)) out[key] = toOpenApi30(child);
  for (const [exclusive, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    const limit = out[exclusive];
    if (typeof limit !== 'number') continue;
    const other = out[bound];
    // Both given: the stricter one wins (a draft-4 schema holds one bound per side).
    const exclusiveWins = typeof other !== 'number' || (bound === 'minimum' ? limit >= other : limit <= other);
    if (exclusiveWins) {
      out[bound] = limit;
      out[exclusive] = true;
    } else {
      delete out[exclusive];
    }
  }
  return out;
}

/** Registers the document and the UI; routes declared afterwards are documented. */
export async function registerOpenApi (app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Cloudly image-release control plane',
        version: '0.1.0',
        description: 'Promote, roll back and verify container images by immutable sha256 digest. Errors are RFC 9457' +
          ' `application/problem+json` with a stable `code` (each route lists the codes it answers). Writes that change a rollout' +
          ' take an `Idempotency-Key` header.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'a JWT with `role` admin, user, api or cluster (`npm run token`)' },
          accessToken: {
            type: 'apiKey',
            in: 'query',
            name: 'access_token',
            description: 'the same JWT as a query parameter, for EventSource (which cannot send headers); only on the status stream, never logged',
          },
        },
      },
      security: [{ bearer: [] }],
    },
    transformObject: (document) => {
      const generated = 'openapiObject' in document ? document.openapiObject : document.swaggerObject;
      return toOpenApi30(generated as unknown as Json) as Partial<typeof generated>;
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
}
