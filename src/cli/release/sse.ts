import { DeadlineError, describeNetworkError, safeFetch, type ApiClient } from './http.js';

/** One Server-Sent Event. */
export interface SseMessage {
  event: string;
  data: string;
  id?: string;
}

/** One SSE block → its event name and data; undefined for comments-only blocks. */
export function parseSseBlock (block: string): SseMessage | undefined {
  let event = 'message';
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  if (data.length === 0) return undefined;
  return { event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
}

/** How a stream ended: stopped by the caller with a value, never usable, or dropped. */
export type StreamEnd<T> =
  | { kind: 'stopped', value: T }
  | { kind: 'unavailable', reason: string }
  | { kind: 'dropped', reason: string, events: number };

export interface StreamOptions<T> {
  client: ApiClient;
  path: string;
  /** Sent as Last-Event-ID: the server replays what came after it. */
  lastEventId: number;
  /** Ends the stream with DeadlineError. */
  deadline: AbortSignal;
  /** How long the answer's headers may take. */
  answerTimeoutMs: number;
  /** The messages of one chunk of the stream; a value stops the stream. */
  onMessages: (messages: SseMessage[]) => Promise<T | undefined>;
}

/** The server sends a keep-alive every 15 s: 45 s without a byte means the stream is dead. */
export const INACTIVITY_MS = 45_000;

/**
 * Reads one event stream until `onMessages` returns a value, the stream drops (network,
 * server gone, `INACTIVITY_MS` without a byte) or turns out unusable (a 4xx, not an event
 * stream: an old server or a proxy that blocks streaming). 5xx counts as a drop.
 */
export async function readEventStream<T> (opts: StreamOptions<T>): Promise<StreamEnd<T>> {
  const local = new AbortController();
  const signal = AbortSignal.any([opts.deadline, local.signal]);
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number, why: string): void => {
    clearTimeout(timer);
    timer = setTimeout(() => { local.abort(new Error(why)); }, ms);
  };
  let events = 0;
  try {
    arm(opts.answerTimeoutMs, 'no answer');
    let res: Response;
    try {
      res = await safeFetch(opts.client.url(opts.path), {
        headers: { ...opts.client.authHeaders(), accept: 'text/event-stream', 'last-event-id': String(opts.lastEventId) },
        signal,
        redirect: 'manual',
      });
    } catch (err) {
      if (opts.deadline.aborted) throw new DeadlineError();
      return { kind: 'dropped', reason: local.signal.aborted ? 'no answer' : describeNetworkError(err), events };
    }
    if (res.status >= 500) {
      await res.body?.cancel().catch(() => undefined);
      return { kind: 'dropped', reason: `HTTP ${res.status}`, events };
    }
    const type = res.headers.get('content-type') ?? '';
    if (!res.ok || !type.startsWith('text/event-stream') || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      return { kind: 'unavailable', reason: res.ok ? `answered ${type || 'no content type'}` : `HTTP ${res.status}` };
    }
    const quiet = `no data for ${INACTIVITY_MS / 1000} s`;
    arm(INACTIVITY_MS, quiet);
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        arm(INACTIVITY_MS, quiet);
        buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, '\n');
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop() ?? '';
        const messages = blocks.map(parseSseBlock).filter((m): m is SseMessage => m !== undefined);
        if (messages.length === 0) continue;
        events += messages.length;
        const value = await opts.onMessages(messages);
        if (value !== undefined) return { kind: 'stopped', value };
      }
    } catch (err) {
      if (opts.deadline.aborted) throw new DeadlineError();
      const why = local.signal.reason instanceof Error ? local.signal.reason.message : describeNetworkError(err);
      return { kind: 'dropped', reason: why, events };
    }
    return { kind: 'dropped', reason: 'closed by the server', events };
  } finally {
    clearTimeout(timer);
    local.abort();
  }
}
