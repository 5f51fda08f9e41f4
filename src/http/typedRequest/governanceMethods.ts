import { Type, type TSchema } from '@sinclair/typebox';
import { Id } from '../../contracts/index.js';
import { permissions } from '../../domain/principal.js';
import type { Operations } from '../../operations/index.js';
import { GovernanceReply, PromotionRequestView } from '../governanceSchemas.js';
import type { TypedRequestMethod } from './methods.js';

/**
 * Governance over TypedRequest (the same use cases as REST, docs/governance.md): the global policy,
 * a service's promotion requests, and approving one. A promotion that needs approvals answers
 * `approval-required` through promoteServiceImageRelease already (an error with `promotionRequest`).
 */
const define = <Req extends TSchema, Res extends TSchema>(method: TypedRequestMethod<Req, Res>): TypedRequestMethod => method as unknown as TypedRequestMethod;

const RequestRef = Type.Object({ serviceId: Id, requestId: Id }, { additionalProperties: false });

export const getGovernance = ({ governance }: Operations): TypedRequestMethod => define({
  method: 'getGovernance',
  permission: permissions.readGovernance,
  payload: Type.Object({}, { additionalProperties: false }),
  response: GovernanceReply,
  run: () => governance.readGlobal(),
});

export const getPromotionRequests = ({ approvals }: Operations): TypedRequestMethod => define({
  method: 'getPromotionRequests',
  permission: permissions.readServices,
  payload: Type.Object({ serviceId: Id }, { additionalProperties: false }),
  response: Type.Object({ promotionRequests: Type.Array(PromotionRequestView) }),
  run: ({ serviceId }) => approvals.list(serviceId),
});

export const approvePromotionRequest = ({ approvals }: Operations): TypedRequestMethod => define({
  method: 'approvePromotionRequest',
  permission: permissions.approvePromotions,
  payload: RequestRef,
  response: Type.Object({ promotionRequest: PromotionRequestView, service: Type.Optional(Type.Unknown()) }),
  run: ({ serviceId, requestId }, actor) => approvals.approve(serviceId, requestId, actor),
});
