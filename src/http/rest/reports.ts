import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IImageRolloutStatus } from '../../contracts/index.js';
import { ReportDeploymentSnapshotsInput } from '../../contracts/reports.js';
import { permissions } from '../../domain/principal.js';
import type { Operations } from '../../operations/index.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf } from '../authorize.js';
import { valueOf } from '../replies.js';
import { examples, withExample } from '../examples.js';
import { withBody } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

export interface ReportRoutesOptions {
  operations: Pick<Operations, 'reportSnapshot'>;
  verifier: TokenVerifier;
  /** A snapshot report may carry a whole cluster's deployments (REPORT_BODY_LIMIT_BYTES). */
  bodyLimit: number;
}

const ReportReply = Type.Object({
  outcome: Type.Union([Type.Literal('recorded'), Type.Literal('applied'), Type.Literal('replayed')], {
    description: 'recorded: deployments stored (service without immutable policy); applied: folded into the rollout status;' +
      ' replayed: the same sequence again, nothing changed',
  }),
  status: Type.Optional(Type.Omit(IImageRolloutStatus, ['reporters'], {
    description: 'the aggregate after this report, without the reporters list (GET /v1/services/:serviceId/rollout has them)',
  })),
});

const reportSummary = 'Report a deployment snapshot with runtime image evidence (cluster tokens)';
const reportDescription = 'Coreflow\'s report: the TypedRequest `reportDeploymentSnapshots` request without `identity` (the cluster token' +
  ' says who reports). For a service with an immutable rollout the `immutableReport` envelope is required and every replica\'s evidence' +
  ' is verified again by the server; a cluster may report only nodes registered to it and inside the rollout\'s target scope (403).' +
  ' Body limit: REPORT_BODY_LIMIT_BYTES (8 MiB by default).';
const reportCodes = [
  'service-not-found', 'stale-rollout-report', 'immutable-plan-missing', 'runtime-capability-missing', 'runtime-attestation-missing',
] as const;

/** REST: Coreflow's snapshot report (the TypedRequest request without `identity`). */
export const reportRoutes: FastifyPluginAsyncTypebox<ReportRoutesOptions> = async (app, { operations, verifier, bodyLimit }) => {
  const { reportSnapshot } = operations;
  const guard = guardWith(verifier);
  app.post('/v1/deployment-snapshots', {
    bodyLimit,
    ...guard(permissions.reportSnapshots, {
      tags: ['reports'],
      summary: reportSummary,
      description: reportDescription,
      body: withExample(ReportDeploymentSnapshotsInput, examples.snapshotReport),
      response: replies(withExample(ReportReply, answers.snapshotReport), withBody, reportCodes),
    }),
    preValidation: async (request) => {
      const refused = reportSnapshot.precheck(request.body);
      if (refused) throw refused;
    },
  }, async (request, reply) => {
    const outcome = valueOf(await reportSnapshot(request.body, actorOf(request)), reply, '/body');
    return { outcome: outcome.kind, status: 'status' in outcome ? outcome.status : undefined };
  });
};
