import { Type, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AppError, validationFailed } from '../errors.js';
import { assertRole, type TokenVerifier } from './auth.js';
import { MAX_ENVELOPE_DEPTH, pathNestedDeeperThan, withoutIdentity } from './errorHandler.js';
import type { Operation } from './operation.js';

/**
 * The TypedRequest envelope (`@api.global/typedrequest-interfaces` ITypedRequest).
 * Extra envelope members the client may add (`localData`, `serverData`, …) are
 * accepted and ignored; the method's `request` payload is validated strictly.
 */
export const TypedRequestEnvelope = Type.Object({
  method: Type.String({ minLength: 1, maxLength: 128 }),
  request: Type.Unknown(),
  response: Type.Optional(Type.Unknown()),
  correlation: Type.Optional(Type.Object({
    id: Type.String({ minLength: 1, maxLength: 256 }),
    phase: Type.Literal('request'),
  }, { additionalProperties: true })),
}, { additionalProperties: true });

interface CompiledOperation {
  operation: Operation;
  requestCheck: TypeCheck<TSchema>;
  responseCheck: TypeCheck<TSchema>;
}

const IdentityJwt = Type.Object({ identity: Type.Object({ jwt: Type.String() }) });
const identityCheck = TypeCompiler.Compile(IdentityJwt);

export interface TypedRequestOptions {
  operations: readonly Operation[];
  verifier: TokenVerifier;
}

/**
 * POST /typedrequest: validates the envelope, authenticates `request.identity.jwt`
 * (only the verified token counts; the rest of `identity` is ignored), checks the
 * role, validates the payload (the upstream request without `identity`) against
 * the method's schema, runs the operation and
 * answers with the same envelope, `response` filled and `correlation.phase = 'response'`.
 */
export const typedRequestRoutes: FastifyPluginAsyncTypebox<TypedRequestOptions> = async (app, opts) => {
  const byMethod = new Map<string, CompiledOperation>();
  for (const operation of opts.operations) {
    byMethod.set(operation.method, {
      operation,
      requestCheck: TypeCompiler.Compile(operation.request),
      responseCheck: TypeCompiler.Compile(operation.response),
    });
  }

  app.post('/typedrequest', {
    config: { typedRequest: true },
    schema: {
      tags: ['typedrequest'],
      summary: 'TypedRequest endpoint (Cloudly UI, Coreflow)',
      description: `Methods: ${[...byMethod.keys()].sort().join(', ')}`,
      body: TypedRequestEnvelope,
    },
  }, async (request) => {
    const envelope = request.body;
    // The whole envelope is echoed: refuse nesting that its serialization could not survive.
    const tooDeep = pathNestedDeeperThan(envelope, MAX_ENVELOPE_DEPTH);
    if (tooDeep) {
      const [top = '', ...rest] = tooDeep;
      const where = rest.slice(0, 8).map((key) => key.slice(0, 32)).join('/');
      throw validationFailed([{
        field: top === 'request' ? '/request' : `/body/${top.slice(0, 64)}`,
        message: `nested more than ${MAX_ENVELOPE_DEPTH} levels deep (/${where}/…)`,
      }]);
    }
    const compiled = byMethod.get(envelope.method);
    if (!compiled) {
      throw new AppError('method-not-found', `unknown method '${envelope.method.slice(0, 128)}'`, { details: { method: envelope.method } });
    }
    const { operation, requestCheck, responseCheck } = compiled;
    if (!identityCheck.Check(envelope.request)) {
      throw new AppError('unauthenticated', 'request.identity.jwt is required');
    }
    const principal = await opts.verifier.verify(envelope.request.identity.jwt);
    assertRole(principal, operation.roles, operation.action);
    // Operations see the upstream request without `identity`: only the verified token counts.
    const payload = withoutIdentity(envelope.request);
    operation.precheck?.(payload);
    if (!requestCheck.Check(payload)) {
      throw validationFailed([...requestCheck.Errors(payload)].slice(0, 20).map((e) => ({
        field: `/request${e.path}`,
        message: e.message,
      })));
    }
    const response = await operation.handle(payload, { principal, log: request.log, requestId: request.id });
    if (!responseCheck.Check(response)) {
      const first = responseCheck.Errors(response).First();
      request.log.error({ method: operation.method, path: first?.path, message: first?.message }, 'response does not match its schema');
      throw new AppError('internal-error', 'the server produced an invalid response');
    }
    return {
      ...envelope,
      request: payload,
      response,
      correlation: { id: envelope.correlation?.id ?? request.id, phase: 'response' as const },
    };
  });
};
