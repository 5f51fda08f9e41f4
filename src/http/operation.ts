import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyBaseLogger } from 'fastify';
import type { Principal, Role } from '../domain/principal.js';

export interface OperationContext {
  principal: Principal;
  log: FastifyBaseLogger;
  requestId: string;
  /** REST adapters set response headers through this (e.g. Idempotent-Replayed); TypedRequest ignores it. */
  setHeader?: (name: string, value: string) => void;
  /** REST adapters that answer with more than the upstream response receive it here. */
  setOutcome?: (outcome: unknown) => void;
  /** Free-text reason a REST caller gave (kept in the rollout history); TypedRequest has none. */
  reason?: string;
}

/**
 * One operation of the API, defined once and exposed twice: as a TypedRequest
 * method (by the /typedrequest dispatcher) and by a thin REST route. The
 * definition carries the upstream request/response schemas and who may call it.
 */
export interface Operation<Req extends TSchema = TSchema, Res extends TSchema = TSchema> {
  method: string;
  /** Human wording for a `forbidden` answer: "role 'user' may not <action>". */
  action: string;
  roles: readonly Role[];
  /** The upstream request schema without `identity` (the dispatcher authenticates it). */
  request: Req;
  response: Res;
  /** Checks that must answer before schema validation (e.g. `server-managed-field`). */
  precheck?(input: unknown): void;
  handle(input: Static<Req>, ctx: OperationContext): Promise<Static<Res>>;
}

export const defineOperation = <Req extends TSchema, Res extends TSchema>(op: Operation<Req, Res>): Operation<Req, Res> => op;
