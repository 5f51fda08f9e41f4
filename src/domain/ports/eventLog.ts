import type { DomainEvent, LoggedEvent } from '../events.js';

/**
 * The durable, ordered log of each service's domain events (src/domain/events.ts). A use case
 * records an event in the same update as the change it describes (the service document's outbox);
 * `relay` moves it into the log, in order and once, whichever process relays (the one that made the
 * change, right after it; the sweeper, after a crash). Consumers read the log, never the outbox.
 */
export interface EventLog {
  /** Appends the service's outbox entries to the log, in order, each exactly once; resolves to how many this call appended. */
  relay(serviceId: string): Promise<number>;
  /** Services whose outbox holds events not yet in the log, by id after `after` (the sweeper relays them). */
  pendingRelays(limit: number, after?: string): Promise<string[]>;
  /** Records an event that describes no change of the service (a refused promotion, …): it joins the outbox, then the log. */
  record(serviceId: string, event: DomainEvent): Promise<void>;
  /** The service's events after `seq`, oldest first, at most `limit`; stops before the first one not in the log yet. */
  eventsAfter(serviceId: string, seq: number, limit: number): Promise<LoggedEvent[]>;
  /** The last seq claimed in the service's log (0: none; null: no such service). */
  head(serviceId: string): Promise<number | null>;
  /** Removes events that happened before `before`; resolves to how many. */
  sweepExpired(before: number): Promise<number>;
}
