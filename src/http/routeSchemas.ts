import { Type } from '@sinclair/typebox';
import { Id, IService } from '../contracts/index.js';

/** `:serviceId` of the service routes. */
export const ServiceParams = Type.Object({ serviceId: Id }, { additionalProperties: false });

/** `{ service }`: what a service read, write, promotion and rollback answer. */
export const ServiceReply = Type.Object({ service: IService });

/** A service's automation hold (GET /v1/services/:id and the rollout view). */
export const AutomationHoldSchema = Type.Object({
  since: Type.Integer(),
  rolloutId: Type.String(),
  by: Type.String(),
}, { description: 'set by a manual rollback: automatic promotion is off until the next explicit promotion' });
