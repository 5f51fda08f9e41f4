import type { StatusSnapshot } from '../../domain/ports/index.js';
import { STATUS_EVENTS_KEPT, type StatusEvent } from '../../domain/rolloutStatus.js';

/**
 * Rollout status changes as Server-Sent Events, correct across server processes.
 *
 * The source of truth is the service document's `statusEvents` (the last
 * STATUS_EVENTS_KEPT changes, each with its `statusRevision`), written in the same
 * compare-and-swap as the status itself — whichever process made the change. The local
 * development database has no change streams, so each process runs a StatusHub that
 * POLLS: one poll loop per service that has at least one listener in this process
 * (every `pollIntervalMs`, default 250 ms), reading `statusEventsAfter(service, c)` where
 * c is the lowest cursor among that service's listeners, and handing each listener the
 * events after its own cursor. The loop stops when the last listener leaves.
 *
 * Guarantees per listener: events in revision order, none twice (its cursor only moves
 * forward), none skipped — unless the events after its cursor were pushed out of the
 * kept window (it fell more than STATUS_EVENTS_KEPT changes behind, or it resumed from
 * an id older than the window). Then it gets one `reset` carrying the current state
 * instead, and continues from there. A reset is conservative: it is sent whenever a gap
 * is possible (every kept event is newer than the cursor and the window is full).
 *
 * Every stream starts with at least one event (`planOpening`), so a client learns the
 * current state at once, also when nothing changes for hours: the events to replay, or
 * the latest one for a fresh client; when there is nothing to replay (no status event
 * yet, or the client resumes at the current revision) a reset `up-to-date` with the
 * current state. Polls never send a reset `up-to-date`: after the opening, a stream
 * carries only changes (and resets for gaps).
 */

/** What the hub reads: the service's current status revision and its kept events after a revision (null: no such service). */
export interface StatusEventSource {
  statusEventsAfter(serviceId: string, revision: number): Promise<StatusSnapshot | null>;
}

export type ResetReason =
  /** Events after the client's revision were pushed out of the kept window. */
  | 'events-missed'
  /** The client's revision is newer than the service's: it comes from elsewhere (another database, a reset). */
  | 'unknown-revision'
  /**
   * Only when the stream opens, with nothing to replay: the service has no status event yet, or
   * the client resumed at the current revision (it has every event; the latest is not sent again
   * as a status event). The reset carries the current state all the same.
   */
  | 'up-to-date';

export type Delivery =
  | { kind: 'events', events: StatusEvent[] }
  | { kind: 'reset', reason: ResetReason, latest: StatusEvent | undefined };

/**
 * What a listener whose cursor is `cursor` must be sent, given a snapshot that holds
 * every kept event newer than some revision ≤ min(cursor, snapshot.revision).
 *
 * Gap rule: the kept log is the newest STATUS_EVENTS_KEPT events; anything older was
 * dropped. If the snapshot holds fewer than that many events, either nothing was ever
 * dropped or a kept event is at or below the cursor — no gap. If it holds a full window
 * and its oldest event is newer than the one right after the cursor (revisions go up by one
 * per event), the events between were dropped: reset.
 */
export function planDelivery (cursor: number, snapshot: StatusSnapshot): Delivery {
  const latest = snapshot.events.at(-1);
  if (cursor > snapshot.revision) return { kind: 'reset', reason: 'unknown-revision', latest };
  const oldest = snapshot.events[0];
  // Revisions go up by one per event: the kept events reach back to the cursor when the oldest is the one right after it.
  if (snapshot.events.length >= STATUS_EVENTS_KEPT && oldest !== undefined && oldest.revision > cursor + 1) {
    return { kind: 'reset', reason: 'events-missed', latest };
  }
  return { kind: 'events', events: snapshot.events.filter((e) => e.revision > cursor) };
}

/**
 * The first delivery of a stream that opens with `snapshot`, read from revision 0 (the whole
 * kept log): the client resumes after `resumeFrom` (Last-Event-ID, `?after=`) or, without one,
 * is sent the latest event. Never nothing: with nothing to replay, a reset `up-to-date`
 * carrying the latest event (absent when there is none).
 */
export function planOpening (resumeFrom: number | undefined, snapshot: StatusSnapshot): Delivery {
  const latest = snapshot.events.at(-1);
  const delivery: Delivery = resumeFrom === undefined
    ? { kind: 'events', events: latest ? [latest] : [] }
    : planDelivery(resumeFrom, snapshot);
  if (delivery.kind === 'events' && delivery.events.length === 0) return { kind: 'reset', reason: 'up-to-date', latest };
  return delivery;
}

/** One client of the hub (an SSE connection). */
export interface StatusListener {
  /** The status revision up to which this listener has been served. Managed by `serve`. */
  cursor: number;
  /** False while the client does not read (backpressure): the hub skips it; its cursor stays, so it catches up later. */
  readonly ready: boolean;
  send(events: StatusEvent[]): void;
  reset(reason: ResetReason, revision: number, latest: StatusEvent | undefined): void;
  heartbeat(): void;
  end(why: 'shutdown' | 'service-gone'): void;
}

function deliver (listener: StatusListener, delivery: Delivery, snapshot: StatusSnapshot): void {
  if (delivery.kind === 'reset') listener.reset(delivery.reason, snapshot.revision, delivery.latest);
  else if (delivery.events.length > 0) listener.send(delivery.events);
  listener.cursor = snapshot.revision;
}

/** Sends a listener what a snapshot holds for it and moves its cursor to the snapshot. */
export function serve (listener: StatusListener, snapshot: StatusSnapshot): void {
  deliver(listener, planDelivery(listener.cursor, snapshot), snapshot);
}

/** Sends a stream that just opened its first event(s) (`planOpening`) and sets its cursor to the snapshot. */
export function serveOpening (listener: StatusListener, resumeFrom: number | undefined, snapshot: StatusSnapshot): void {
  deliver(listener, planOpening(resumeFrom, snapshot), snapshot);
}

interface HubLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface StatusHubOptions {
  source: StatusEventSource;
  /** How often a watched service is polled; default 250 ms. */
  pollIntervalMs?: number;
  /** How often every stream gets a `: keep-alive` comment; default 15 s. */
  heartbeatMs?: number;
  log?: HubLog;
}

interface Watch {
  serviceId: string;
  listeners: Set<StatusListener>;
  timer: NodeJS.Timeout | undefined;
  polling: boolean;
  /** A poll was asked for while one was running: poll again right after it. */
  again: boolean;
  failures: number;
}

export class StatusHub {
  readonly source: StatusEventSource;
  private readonly pollIntervalMs: number;
  private readonly log: HubLog | undefined;
  private readonly watches = new Map<string, Watch>();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  constructor (opts: StatusHubOptions) {
    this.source = opts.source;
    this.pollIntervalMs = opts.pollIntervalMs ?? 250;
    this.log = opts.log;
    this.heartbeat = setInterval(() => {
      for (const watch of this.watches.values()) for (const l of watch.listeners) if (l.ready) l.heartbeat();
    }, opts.heartbeatMs ?? 15_000);
    this.heartbeat.unref();
  }

  /** Services polled now and their listener counts (for tests and diagnostics). */
  watched (): Record<string, number> {
    return Object.fromEntries([...this.watches].map(([id, w]) => [id, w.listeners.size]));
  }

  /**
   * Adds a listener whose cursor is already set (the caller served it the initial
   * snapshot). Returns the function that removes it. After close(), the listener is
   * ended at once.
   */
  subscribe (serviceId: string, listener: StatusListener): () => void {
    if (this.closed) {
      listener.end('shutdown');
      return () => undefined;
    }
    let watch = this.watches.get(serviceId);
    if (!watch) {
      watch = { serviceId, listeners: new Set(), timer: undefined, polling: false, again: false, failures: 0 };
      this.watches.set(serviceId, watch);
    }
    watch.listeners.add(listener);
    if (watch.listeners.size === 1) this.schedule(watch);
    const w = watch;
    return () => { this.remove(w, listener); };
  }

  /** Polls the service now (a listener drained its backlog), or right after the poll in flight. */
  kick (serviceId: string): void {
    const watch = this.watches.get(serviceId);
    if (!watch || this.closed) return;
    if (watch.polling) {
      watch.again = true;
      return;
    }
    clearTimeout(watch.timer);
    watch.timer = undefined;
    void this.poll(watch);
  }

  /** Stops every poll loop and ends every stream (app shutdown: lets the HTTP server close). */
  close (): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    const watches = [...this.watches.values()];
    this.watches.clear();
    for (const watch of watches) {
      clearTimeout(watch.timer);
      const listeners = [...watch.listeners];
      watch.listeners.clear();
      for (const l of listeners) l.end('shutdown');
    }
  }

  private remove (watch: Watch, listener: StatusListener): void {
    watch.listeners.delete(listener);
    if (watch.listeners.size === 0 && this.watches.get(watch.serviceId) === watch) {
      clearTimeout(watch.timer);
      watch.timer = undefined;
      this.watches.delete(watch.serviceId);
    }
  }

  /** The loop is alive while the watch is registered and has listeners. */
  private live (watch: Watch): boolean {
    return !this.closed && this.watches.get(watch.serviceId) === watch && watch.listeners.size > 0;
  }

  private schedule (watch: Watch): void {
    if (!this.live(watch)) return;
    clearTimeout(watch.timer);
    // After failures, back off (up to 5 s) so a database outage is not hammered.
    const delay = watch.failures === 0 ? this.pollIntervalMs : Math.min(5_000, this.pollIntervalMs * 2 ** Math.min(watch.failures, 5));
    watch.timer = setTimeout(() => { watch.timer = undefined; void this.poll(watch); }, delay);
    watch.timer.unref();
  }

  private async poll (watch: Watch): Promise<void> {
    if (!this.live(watch)) return;
    watch.polling = true;
    try {
      const ready = [...watch.listeners].filter((l) => l.ready);
      if (ready.length === 0) return;
      const from = Math.min(...ready.map((l) => l.cursor));
      let snapshot = await this.source.statusEventsAfter(watch.serviceId, from);
      if (snapshot && snapshot.revision < from) {
        // The revision went backwards (the database was replaced): resets need the latest event.
        snapshot = await this.source.statusEventsAfter(watch.serviceId, 0);
      }
      if (!this.live(watch)) return;
      if (watch.failures > 0) this.log?.info({ serviceId: watch.serviceId, failures: watch.failures }, 'status stream polling recovered');
      watch.failures = 0;
      if (!snapshot) {
        this.watches.delete(watch.serviceId);
        const listeners = [...watch.listeners];
        watch.listeners.clear();
        for (const l of listeners) l.end('service-gone');
        return;
      }
      for (const l of ready) {
        if (watch.listeners.has(l) && l.ready) serve(l, snapshot);
      }
    } catch (err) {
      if (this.closed) return;
      if (watch.failures === 0) {
        this.log?.warn({ serviceId: watch.serviceId, err: err instanceof Error ? err.message : String(err) }, 'status stream polling failed; retrying');
      }
      watch.failures++;
    } finally {
      watch.polling = false;
      if (this.live(watch)) {
        if (watch.again) {
          watch.again = false;
          void this.poll(watch);
        } else {
          this.schedule(watch);
        }
      }
    }
  }
}
