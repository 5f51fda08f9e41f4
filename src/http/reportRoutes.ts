import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IImageRolloutStatus } from '../contracts/index.js';
import { ReportDeploymentSnapshotsInput } from '../contracts/reports.js';
import type { ReportOutcome } from '../domain/reports.js';
import type { TokenVerifier } from './auth.js';
import type { Operations } from './operations.js';
import { ProblemResponses } from './problemSchema.js';
import { authorize, operationContext } from './restAuth.js';

export interface ReportRoutesOptions {
  operations: Operations;
  verifier: TokenVerifier;
}

const ReportReply = Type.Object({
  outcome: Type.Union([Type.Literal('recorded'), Type.Literal('applied'), Type.Literal('replayed')], {
    description: 'recorded: deployments stored (service without immutable policy); applied: folded into the rollout status; replayed: the same sequence again, nothing changed',
  }),
  status: Type.Optional(IImageRolloutStatus),
});

/** REST: Coreflow's snapshot report (the TypedRequest request without `identity`). */
export const reportRoutes: FastifyPluginAsyncTypebox<ReportRoutesOptions> = async (app, { operations, verifier }) => {
  const op = operations.reportDeploymentSnapshots;
  app.post('/v1/deployment-snapshots', {
    onRequest: authorize(verifier, op.roles, op.action),
    preValidation: async (request) => { op.precheck?.(request.body); },
    schema: {
      tags: ['reports'],
      summary: 'Report a deployment snapshot with runtime image evidence (cluster tokens)',
      body: ReportDeploymentSnapshotsInput,
      response: { 200: ReportReply, ...ProblemResponses },
    },
  }, async (request) => {
    let outcome: ReportOutcome | undefined;
    await op.handle(request.body, {
      ...operationContext(request),
      setOutcome: (o) => { outcome = o as ReportOutcome; },
    });
    if (!outcome) throw new Error('report produced no outcome');
    return { outcome: outcome.kind, ...('status' in outcome ? { status: outcome.status } : {}) };
  });
};
