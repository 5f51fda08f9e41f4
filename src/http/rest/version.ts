import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { permissions } from '../../domain/principal.js';
import { packageVersion } from '../../packageVersion.js';
import type { TokenVerifier } from '../auth.js';
import { guardWith, replies } from './guard.js';

/** The package this server was built from (package.json above the code, in the image, a checkout or the tests), read once. */
export const serverVersion = { name: 'cloudly-release-control-plane', version: packageVersion() ?? 'unknown' } as const;

export const ServerVersion = Type.Object({
  name: Type.Literal('cloudly-release-control-plane'),
  version: Type.String({ description: 'its version (package.json)' }),
}, { examples: [{ name: 'cloudly-release-control-plane', version: '0.1.0' }] });

/** GET /v1/version: which server answers (any role that may read; `cloudly-release version` prints it beside its own). */
export const versionRoutes: FastifyPluginAsyncTypebox<{ verifier: TokenVerifier }> = async (app, { verifier }) => {
  const guard = guardWith(verifier);
  app.get('/v1/version', guard(permissions.readServices, {
    tags: ['operations'],
    summary: 'The server\'s name and version (admin, user, api)',
    description: 'The package version of the server that answers (`cloudly-release version` prints it beside its own).' +
      ' Needs a token: it tells a caller which server it talks to, not the world.',
    response: replies(ServerVersion),
  }), async () => serverVersion);
};
