import type { ServerResponse } from 'node:http';
import type { StatusEvent } from '../../domain/rolloutStatus.js';
import type { ResetReason, StatusListener } from './hub.js';

/**
 * Server-Sent Events framing of the rollout status stream: one SSE response as a hub listener.
 * See src/http/sse/hub.ts for the delivery guarantees.
 */

/** How long a client may leave its socket buffer full before it is disconnected (it reconnects and resumes). */
const STALL_TIMEOUT_MS = 30_000;

const frame = (event: string, id: number | undefined, data: unknown): string =>
  `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** Only the StatusEvent fields, whatever else a stored element might carry. */
const statusEventData = (e: StatusEvent): StatusEvent => ({
  revision: e.revision,
  rolloutId: e.rolloutId,
  rolloutGeneration: e.rolloutGeneration,
  status: e.status,
  requiredReplicaCount: e.requiredReplicaCount,
  observedReplicaCount: e.observedReplicaCount,
  healthyReplicaCount: e.healthyReplicaCount,
  verifiedReplicaCount: e.verifiedReplicaCount,
  failedReplicaCount: e.failedReplicaCount,
  ...(e.mismatchReason ? { mismatchReason: e.mismatchReason } : {}),
  at: e.at,
});

/**
 * The `status` frame of an event. Every listener of a service is sent the same event objects
 * (one poll per service and process), so each frame is built once, not once per listener.
 */
const statusFrames = new WeakMap<StatusEvent, string>();
const statusFrame = (e: StatusEvent): string => {
  let built = statusFrames.get(e);
  if (built === undefined) {
    built = frame('status', e.revision, statusEventData(e));
    statusFrames.set(e, built);
  }
  return built;
};

/**
 * One SSE response as a hub listener. Writes go straight to the socket; when the
 * socket buffer is full (`write` returns false) the stream stops taking events until
 * 'drain' — its cursor stays where it was, so on drain the hub re-reads what it missed
 * from the database (nothing is buffered per client in memory). A client that does not
 * drain within 30 s is disconnected.
 */
export class SseStream implements StatusListener {
  cursor = 0;
  ready = true;
  sent = 0;
  private ended = false;
  private stall: NodeJS.Timeout | undefined;

  constructor (private readonly res: ServerResponse, private readonly onDrain: () => void) {
    res.on('drain', () => {
      clearTimeout(this.stall);
      this.stall = undefined;
      if (this.ended) return;
      this.ready = true;
      this.onDrain();
    });
    // A write to a socket that just died must not crash the process; 'close' follows.
    res.on('error', () => undefined);
    res.on('close', () => {
      this.ended = true;
      this.ready = false;
      clearTimeout(this.stall);
    });
  }

  private write (chunk: string): void {
    if (this.ended || this.res.destroyed) return;
    if (!this.res.write(chunk)) {
      this.ready = false;
      this.stall ??= setTimeout(() => { this.res.destroy(); }, STALL_TIMEOUT_MS);
      this.stall.unref();
    }
  }

  open (headers: Record<string, string>): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      // The connection ends with the stream (no keep-alive reuse), so a shutdown that ends
      // the streams also frees their sockets at once.
      connection: 'close',
      ...headers,
    });
    // Reconnect after 2 s (EventSource sends Last-Event-ID and resumes where it stopped).
    this.write('retry: 2000\n\n');
  }

  send (events: StatusEvent[]): void {
    this.write(events.map(statusFrame).join(''));
    this.sent += events.length;
  }

  reset (reason: ResetReason, revision: number, latest: StatusEvent | undefined): void {
    // The id (the revision the reset brings the client to) makes a reconnecting EventSource resume
    // after the state it was just given.
    this.write(frame('reset', revision, latest ? { reason, revision, latest: statusEventData(latest) } : { reason, revision }));
    this.sent++;
  }

  heartbeat (): void {
    this.write(': keep-alive\n\n');
  }

  end (why: 'shutdown' | 'service-gone' | 'token-expired'): void {
    if (this.ended) return;
    this.ended = true;
    this.ready = false;
    clearTimeout(this.stall);
    const comment = {
      shutdown: 'server shutting down, reconnect', 'service-gone': 'service no longer exists', 'token-expired': 'token expired, reconnect with a new one',
    }[why];
    if (!this.res.destroyed) this.res.end(`: ${comment}\n\n`);
  }
}
