/**
 * Compile-time check (type-checked by `npm run typecheck`; not a runtime test): every answer of
 * the server fits the shapes the CLI reads (src/cli/release/api.ts). The CLI declares its own
 * tolerant reader types instead of importing the server's (it is an HTTP client and ships
 * without them); this is where a server change the CLI cannot read fails the build.
 * When these server modules move, move the imports: the assertions stay.
 */
import type * as Cli from '../../../src/cli/release/api.js';
import type { AutomationHold } from '../../../src/domain/rollouts.js';
import type { StatusEvent } from '../../../src/domain/rolloutStatus.js';
import type { RolloutView } from '../../../src/domain/rolloutView.js';
import type { RolloutHistoryItem as RolloutHistoryEntry } from '../../../src/domain/history.js';
import type { PromotionRequestView } from '../../../src/operations/approvals.js';
import type { BreakGlassView } from '../../../src/operations/breakGlass.js';
import type { GovernanceView, PipelineView } from '../../../src/operations/governance.js';
import type { PromotionRequestRef } from '../../../src/errors.js';

type Expect<T extends true> = T;
/** A value of the server's type can be read as the CLI's type. */
type Readable<Server, Client> = [Server] extends [Client] ? true : false;

export type WireShapes = [
  Expect<Readable<RolloutView, Cli.RolloutView>>,
  Expect<Readable<RolloutView['reporters'][number]['replicas'][number], Cli.ReplicaDetail>>,
  Expect<Readable<RolloutView['blocking'][number], Cli.BlockingReason>>,
  Expect<Readable<StatusEvent, Cli.StatusEvent>>,
  Expect<Readable<StatusEvent, Cli.RolloutSnapshot>>,
  Expect<Readable<AutomationHold, Cli.AutomationHold>>,
  Expect<Readable<RolloutHistoryEntry, Cli.RolloutHistoryEntry>>,
  Expect<Readable<NonNullable<RolloutView['lifecycle']>, Cli.RolloutLifecycle>>,
  Expect<Readable<NonNullable<RolloutHistoryEntry['trigger']>, Cli.RolloutTrigger>>,
  Expect<Readable<RolloutView['reporters'][number]['replicas'][number], { stability?: Cli.ReplicaStability }>>,
  Expect<Readable<PromotionRequestView, Cli.PromotionRequest>>,
  Expect<Readable<PromotionRequestRef, Cli.ApprovalRequiredAnswer['promotionRequest']>>,
  Expect<Readable<BreakGlassView, Cli.BreakGlassGrant>>,
  Expect<Readable<GovernanceView, Cli.GovernanceReply>>,
  Expect<Readable<PipelineView, Cli.PipelineReply>>,
  // Not vacuous: a shape the CLI cannot read is refused.
  Expect<Readable<{ serviceId: string }, Cli.RolloutView> extends false ? true : false>,
];
