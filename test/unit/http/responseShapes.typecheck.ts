/**
 * Compile-time check (type-checked by `npm run typecheck`; not a runtime test): the REST
 * response schemas, written in TypeBox, describe exactly the domain shapes the handlers return.
 * Fastify's serializer drops every field a response schema does not name, so a field added to a
 * domain type and not to its schema would silently vanish from REST answers; here it fails to
 * compile instead.
 */
import type { Static } from '@sinclair/typebox';
import type { RolloutHistoryItem } from '../../../src/domain/history.js';
import type { AutomationHold } from '../../../src/domain/rollouts.js';
import type { StatusEvent } from '../../../src/domain/rolloutStatus.js';
import type { RolloutView } from '../../../src/domain/rolloutView.js';
import type { RolloutHistoryEntry } from '../../../src/http/lifecycleRoutes.js';
import type { AutomationHoldSchema } from '../../../src/http/routeSchemas.js';
import type { RolloutViewReply, StatusEventSchema } from '../../../src/http/rolloutRoutes.js';

/** Exact type equality (identical types), not mere mutual assignability. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
type Expect<T extends true> = T;
/** The same members with the same optionality; each member's type checked by the pairs below. */
type SameKeys<A, B> = Equals<keyof A, keyof B> extends true
  ? Equals<{ [K in keyof A as undefined extends A[K] ? K : never]: 1 }, { [K in keyof B as undefined extends B[K] ? K : never]: 1 }>
  : false;

type View = Static<typeof RolloutViewReply>;
type Reporter = RolloutView['reporters'][number];
type ReporterReply = View['reporters'][number];

export type ResponseShapes = [
  Expect<Equals<Static<typeof AutomationHoldSchema>, AutomationHold>>,
  Expect<Equals<Static<typeof StatusEventSchema>, StatusEvent>>,
  Expect<SameKeys<View, RolloutView>>,
  Expect<SameKeys<ReporterReply, Reporter>>,
  Expect<Equals<ReporterReply['replicas'][number], Reporter['replicas'][number]>>,
  Expect<Equals<View['blocking'][number], RolloutView['blocking'][number]>>,
  Expect<SameKeys<Static<typeof RolloutHistoryEntry>, RolloutHistoryItem>>,
];
