import neostandard from 'neostandard';

/**
 * The dependency direction (docs/architecture.md): http → operations → domain ← store, outbound. The
 * domain imports neither fastify, mongodb, the store nor an adapter; the adapters import neither mongodb
 * nor the store; only src/outbound/ calls the outside world (and the CLIs and the demo, which are clients
 * of the server's own API; the store's driver is the database connection); the
 * runtime tree never imports the development database launcher (src/server.ts reaches it by a
 * dynamic import the compiler does not follow). Two files compose the store: src/app.ts (the service)
 * and src/checkDatabase.ts (the database check, which imports nothing of the app).
 * test/unit/architecture.test.ts checks the same.
 */
const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const forbidden = {
  fastify: { group: ['fastify', 'fastify/*', '@fastify/*'], message: 'the domain and the use cases know nothing of HTTP' },
  mongodb: { group: ['mongodb', 'mongodb/*'], message: 'only src/store talks to the driver' },
  store: { group: ['**/store/*', '**/store/**'], message: 'use the ports in src/domain/ports/; src/app.ts composes the store' },
  http: { group: ['**/http/*', '**/http/**'], message: 'the inner layers never import the adapters' },
  operations: { group: ['**/operations/*', '**/operations/**'], message: 'the domain never imports the use cases' },
  tools: { group: ['**/tools/**', '**/dev-database/**'], message: 'development tooling stays out of the runtime tree' },
  outbound: { group: ['**/outbound/*', '**/outbound/**'], message: 'use the ports in src/domain/ports/; src/app.ts composes the outbound adapters' },
};

/** An outbound request outside src/outbound/: the server calls the world only through an outbound port. */
const outboundMessage = 'outbound requests live in src/outbound/ behind a port of src/domain/ports/';
const requestFunctions = ['default', 'request', 'get', 'Agent', 'globalAgent'];
const connectFunctions = ['default', 'connect', 'createConnection'];
const noOutboundRequests = {
  'no-restricted-globals': ['error', { name: 'fetch', message: outboundMessage }, { name: 'WebSocket', message: outboundMessage }],
  '@typescript-eslint/no-restricted-imports': ['error', {
    paths: [
      ...['node:http', 'http', 'node:https', 'https']
        .map((name) => ({ name, importNames: requestFunctions, message: outboundMessage, allowTypeImports: true })),
      ...['node:net', 'net', 'node:tls', 'tls'].map((name) => ({ name, importNames: connectFunctions, message: outboundMessage, allowTypeImports: true })),
      ...['undici', 'node:http2', 'http2'].map((name) => ({ name, message: outboundMessage, allowTypeImports: true })),
    ],
  }],
};

export default [
  ...neostandard({ ts: true, semi: true, ignores: ['dist/**', 'tools/mongo-dev/target/**', 'bench/results/**'] }),
  {
    rules: {
      // One schema, one type: `export const X = Type.Object(…)` and `export type X = Static<typeof X>`.
      '@typescript-eslint/no-redeclare': 'off',
      // Upstream contract names such as IRequest_Any_Cloudly_PromoteServiceImageRelease.
      camelcase: 'off',
      // `void promise` marks a deliberately unawaited promise (signal handlers).
      'no-void': 'off',
      '@stylistic/comma-dangle': ['error', 'only-multiline'],
      '@stylistic/operator-linebreak': 'off',
      'no-duplicate-imports': ['error', { allowSeparateTypeImports: true }],
      // The whole tree: source, tests, bench, tools (issue 9: applied to the whole tree).
      '@stylistic/max-len': ['error', { code: 160, ignoreUrls: true }],
    },
  },
  {
    files: ['src/domain/**'],
    rules: restrict([forbidden.fastify, forbidden.mongodb, forbidden.store, forbidden.http, forbidden.operations, forbidden.outbound, forbidden.tools]),
  },
  {
    files: ['src/operations/**'],
    rules: restrict([forbidden.fastify, forbidden.mongodb, forbidden.store, forbidden.http, forbidden.outbound, forbidden.tools]),
  },
  { files: ['src/http/**'], rules: restrict([forbidden.mongodb, forbidden.store, forbidden.outbound, forbidden.tools]) },
  {
    files: ['src/outbound/**'],
    rules: restrict([forbidden.fastify, forbidden.mongodb, forbidden.store, forbidden.http, forbidden.operations, forbidden.tools]),
  },
  {
    files: ['src/contracts/**', 'src/cli/**', 'src/*.ts'],
    ignores: ['src/app.ts', 'src/checkDatabase.ts'],
    rules: restrict([forbidden.mongodb, forbidden.store, forbidden.tools]),
  },
  { files: ['src/app.ts'], rules: restrict([forbidden.mongodb, forbidden.tools]) },
  // The database check is a second composition root (an operator's command beside src/server.ts): it opens the store, never the app or its adapters.
  { files: ['src/checkDatabase.ts'], rules: restrict([forbidden.mongodb, forbidden.http, forbidden.operations, forbidden.outbound, forbidden.tools]) },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/outbound/**', 'src/cli/**', 'src/demo/**', 'src/store/**'],
    rules: noOutboundRequests,
  },
];
