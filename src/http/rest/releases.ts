import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  Id, IImmutableRegistryPushEvent, ImageReleasePage, ImageReleasePageQuery, ImageTagHistory, ImageTagHistoryQuery, OciTag,
  ReportImmutableRegistryPushEventResponse,
} from '../../contracts/index.js';
import { permissions } from '../../domain/principal.js';
import { ReleaseVerificationView } from '../../domain/trust/releaseVerification.js';
import type { Operations } from '../../operations/index.js';
import type { TokenVerifier } from '../auth.js';
import { actorOf } from '../authorize.js';
import { valueOf } from '../replies.js';
import { examples, withExample } from '../examples.js';
import { ServiceParams, withBody, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

export interface ReleaseRoutesOptions {
  operations: Pick<Operations, 'releases' | 'observePushEvent'>;
  verifier: TokenVerifier;
}

const tags = ['releases'];
const TagParams = Type.Object({ serviceId: Id, tag: OciTag }, { additionalProperties: false });
const ReleaseParams = Type.Object({ serviceId: Id, releaseId: Id }, { additionalProperties: false });
const verificationSummary = 'A release\'s signature verification (trust policy)';
const verificationDescription = 'The verdict, who signed (key ids or keyless identities), the trust policy\'s digest and the SLSA' +
  ' Verification Summary (a DSSE envelope signed by the server\'s attestation key) a promotion of the release relied on;' +
  ' `verification` is absent until a rollout of it passed a trust policy (docs/trust.md).';
const pushSummary = 'Report an immutable registry push event (admin, api)';
const pushDescription = '201: a new observation was recorded; 200: this eventId was already recorded with the same content (nothing changed,' +
  ' header `Idempotent-Replayed: true`). The same eventId with other content is 409 `push-event-conflict` naming the fields that differ.' +
  ' For a service with `deployOnPush`, `autoPromotion` says whether the event promoted, waits or was skipped, and why.';
const listSummary = 'A service\'s image releases, newest observation first';
const listDescription = 'Keyset pages: `limit` 1–500 (default 50); pass `nextCursor` back as `cursor`.';
const ledgerSummary = 'The tag ledger: which digest a tag pointed to';
const ledgerDescription = 'Newest first; with `at` (epoch milliseconds), only the entry that was current at that time.';

/** REST: registry push events, a service's releases (keyset pages) and the tag ledger. */
export const releaseRoutes: FastifyPluginAsyncTypebox<ReleaseRoutesOptions> = async (app, { operations, verifier }) => {
  const { releases } = operations;
  const guard = guardWith(verifier);
  const PushReply = ReportImmutableRegistryPushEventResponse;

  app.post('/v1/registry/push-events', guard(permissions.pushRegistryEvents, {
    tags,
    summary: pushSummary,
    description: pushDescription,
    body: withExample(IImmutableRegistryPushEvent, examples.pushEvent),
    response: {
      ...replies({
        ...withExample(PushReply, answers.pushReplayed),
        description: 'this eventId was already recorded with the same content: nothing changed'
      }, withBody,
      ['service-not-found', 'push-event-conflict', 'release-identity-conflict', 'registry-target-mismatch', 'registry-unavailable']),
      201: { ...withExample(PushReply, answers.pushRecorded), description: 'a new observation was recorded' },
    },
  }), async (request, reply) => {
    // A redelivered event is answered as a replay (200, `Idempotent-Replayed: true`).
    const answer = valueOf(await operations.observePushEvent(request.body, actorOf(request)), reply, '/body');
    return reply.code(answer.duplicate ? 200 : 201).send(answer);
  });

  app.get('/v1/services/:serviceId/image-releases', guard(permissions.readReleases, {
    tags,
    summary: listSummary,
    description: listDescription,
    params: ServiceParams,
    querystring: ImageReleasePageQuery,
    response: replies(withExample(ImageReleasePage, answers.releases), withInput, ['service-not-found']),
  }), async ({ params, query }, reply) => valueOf(await releases.listReleasePage(params.serviceId, query), reply, '/querystring'));

  app.get('/v1/services/:serviceId/image-releases/:releaseId/verification', guard(permissions.readReleases, {
    tags,
    summary: verificationSummary,
    description: verificationDescription,
    params: ReleaseParams,
    response: replies(withExample(ReleaseVerificationView, answers.releaseVerification), withInput, ['service-not-found', 'release-not-found']),
  }), async ({ params }, reply) => valueOf(await releases.readVerification(params.serviceId, params.releaseId), reply, '/params'));

  app.get('/v1/services/:serviceId/tags/:tag/history', guard(permissions.readReleases, {
    tags,
    summary: ledgerSummary,
    description: ledgerDescription,
    params: TagParams,
    querystring: ImageTagHistoryQuery,
    response: replies(withExample(ImageTagHistory, answers.tagHistory), withInput, ['service-not-found']),
  }), async ({ params, query }, reply) => valueOf(await releases.tagHistory(params.serviceId, params.tag, query), reply, '/querystring'));
};
