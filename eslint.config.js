import neostandard from 'neostandard';

// neostandard (the Fastify ecosystem's style), TypeScript-aware, with semicolons.
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
    },
  },
];
