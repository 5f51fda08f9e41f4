import { CloneType, Type, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../../errors.js';
import { assertPermitted, type TokenVerifier } from '../auth.js';
import { examples, withExample } from '../examples.js';
import { relocate } from '../replies.js';
import { problemsOf } from '../schemaErrors.js';
import type { TypedRequestMethod } from './methods.js';
import { TypedRequestEnvelope, withoutIdentity } from './protocol.js';
import { responseExamples as answers } from '../responseExamples.js';

interface CompiledMethod {
  method: TypedRequestMethod;
  payloadCheck: TypeCheck<TSchema>;
  responseCheck: TypeCheck<TSchema>;
}

const identityCheck = TypeCompiler.Compile(Type.Object({ identity: Type.Object({ jwt: Type.String() }) }));

/** What every call answers, with HTTP 200: the envelope with `response`, or `error`, or `retry`. */
const TypedRequestAnswer = Type.Object({
  method: Type.String(),
  request: Type.Unknown({ description: 'the request payload, without `identity` (on a failure, only when small)' }),
  response: Type.Unknown({ description: 'the method\'s answer; null on a failure' }),
  correlation: Type.Object({ id: Type.String(), phase: Type.Literal('response') }, { additionalProperties: true }),
  error: Type.Optional(Type.Object({
    text: Type.String(),
    data: Type.Object({ code: Type.String({ description: 'the stable code (docs/errors.md)' }), requestId: Type.String() }, { additionalProperties: true }),
  })),
  retry: Type.Optional(Type.Object({ waitForMs: Type.Integer(), reason: Type.String() })),
}, { additionalProperties: true });

/** The protocol, said on the body (the route's description is the method list, which clients and tests read). */
const protocol = [
  'A TypedRequest envelope. The token is `request.identity.jwt` (no Authorization header). Every answer is HTTP 200, failures included:',
  'the real `@api.global/typedrequest` client turns any other status into a bare error and loses the code. A failure carries',
  '`error: { text, data: { code, requestId, … } }` (the codes of docs/errors.md), or `retry: { waitForMs, reason }` when the same',
  'request is still in progress and should be sent again after that wait.',
].join(' ');

export interface TypedRequestRouteOptions {
  methods: readonly TypedRequestMethod[];
  verifier: TokenVerifier;
  /** The endpoint carries snapshot reports too (REPORT_BODY_LIMIT_BYTES). */
  bodyLimit: number;
}

/**
 * POST /typedrequest: validates the envelope, authenticates `request.identity.jwt` (only the
 * verified token counts; the rest of `identity` is ignored), checks the permission, validates the
 * payload (the upstream request without `identity`) against the method's schema, runs the method
 * and answers with the same envelope, `response` filled and `correlation.phase = 'response'`.
 * Failures are answered by the error handler as TypedRequest error envelopes (HTTP 200).
 */
export const typedRequestRoute: FastifyPluginAsyncTypebox<TypedRequestRouteOptions> = async (app, opts) => {
  const byMethod = new Map<string, CompiledMethod>();
  for (const method of opts.methods) {
    byMethod.set(method.method, { method, payloadCheck: TypeCompiler.Compile(method.payload), responseCheck: TypeCompiler.Compile(method.response) });
  }

  app.post('/typedrequest', {
    config: { typedRequest: true },
    bodyLimit: opts.bodyLimit,
    schema: {
      tags: ['typedrequest'],
      summary: 'TypedRequest endpoint (Cloudly UI, Coreflow)',
      description: `Methods: ${[...byMethod.keys()].sort().join(', ')}`,
      // Authenticated by the body's identity, not a header: no security scheme applies.
      security: [],
      body: CloneType(TypedRequestEnvelope, { description: protocol, examples: [examples.typedRequest] }),
      response: {
        200: {
          ...withExample(TypedRequestAnswer, answers.typedRequestAnswer),
          description: 'the answer envelope: `response` filled, or `error`, or `retry`'
        }
      },
    },
  }, async (request) => {
    // The body parser refused anything nested deeper than MAX_BODY_DEPTH (src/http/jsonBody.ts).
    const envelope = request.body;
    const compiled = byMethod.get(envelope.method);
    if (!compiled) throw errors.methodNotFound(envelope.method);
    const { method, payloadCheck, responseCheck } = compiled;
    if (!identityCheck.Check(envelope.request)) throw errors.unauthenticated('request.identity.jwt is required');
    const principal = await opts.verifier.verify(envelope.request.identity.jwt);
    assertPermitted(principal, method.permission);
    // Methods see the upstream request without `identity`: only the verified token counts.
    const payload = withoutIdentity(envelope.request);
    const early = method.precheck?.(payload);
    if (early) throw early;
    if (!payloadCheck.Check(payload)) {
      throw errors.validationFailed(problemsOf(payloadCheck.Errors(payload), '/request'));
    }
    const result = await method.run(payload, { principal, log: request.log });
    if (!result.ok) throw relocate(result.error, method.inputAt ?? '/request');
    if (!responseCheck.Check(result.value)) {
      const first = responseCheck.Errors(result.value).First();
      request.log.error({ method: method.method, path: first?.path, message: first?.message }, 'response does not match its schema');
      throw errors.internalError(new Error('the server produced an invalid response'));
    }
    return {
      ...envelope,
      request: payload,
      response: result.value,
      correlation: { id: envelope.correlation?.id ?? request.id, phase: 'response' as const },
    };
  });
};
