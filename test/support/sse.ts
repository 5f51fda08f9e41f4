import type { StatusEvent } from '../../src/domain/rolloutStatus.js';

/** A minimal SSE client over fetch (GET /v1/services/:id/rollout/events): parses the stream itself, every wait is bounded. */
export interface SseMessage { id?: string, event: string, data: string }

export interface SseClient {
  status: number;
  headers: Headers;
  messages: SseMessage[];
  /** `: …` comment lines (keep-alives, the shutdown note). */
  comments: string[];
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  /** The `status` events, parsed. */
  statuses(): StatusEvent[];
  waitFor(what: string, predicate: (c: SseClient) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function openSse (url: string, headers: Record<string, string> = {}, connectTimeoutMs = 10_000): Promise<SseClient> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no response from ${url} within ${connectTimeoutMs} ms`)), connectTimeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  } finally {
    clearTimeout(timer);
  }
  const waiters = new Set<() => void>();
  const notify = (): void => { for (const w of [...waiters]) w(); };
  const client: SseClient = {
    status: res.status,
    headers: res.headers,
    messages: [],
    comments: [],
    ended: Promise.resolve(),
    statuses: () => client.messages.filter((m) => m.event === 'status').map((m) => JSON.parse(m.data) as StatusEvent),
    waitFor: (what, predicate, timeoutMs = 15_000) => new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!predicate(client)) return;
        waiters.delete(check);
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${JSON.stringify(client.messages)}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    }),
    close: async () => {
      controller.abort();
      await client.ended;
    },
  };
  client.ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const message: SseMessage = { event: 'message', data: '' };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
              client.comments.push(line.slice(1).trim());
              continue;
            }
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') message.id = value;
            else if (field === 'event') message.event = value;
            else if (field === 'data') {
              message.data += (hasData ? '\n' : '') + value;
              hasData = true;
            }
          }
          if (hasData) client.messages.push(message);
          notify();
        }
      }
    } catch {
      // aborted by close(), or the connection died: the stream is over either way
    } finally {
      notify();
    }
  })();
  return client;
}
