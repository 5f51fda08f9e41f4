import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waiting without wall-clock assertions: `eventually` polls a condition, `sleep` only paces a
 * load generator or a retry loop. A test that must show that something did NOT happen waits for a
 * later event that is ordered after it (a marker report, a revision, a log line), never a sleep.
 */

export { sleep };

/**
 * Polls until `check` holds: it resolves to anything but `false` (an assertion that passes, or
 * `true`). A throw counts as "not yet"; when the attempts run out, the last assertion error is
 * thrown (its diff is the useful message), else an error naming `what`.
 */
export async function eventually (what: string, check: () => Promise<boolean | void>, attempts = 80, pauseMs = 250): Promise<void> {
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      if ((await check()) !== false) return;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    await sleep(pauseMs);
  }
  if (lastError instanceof Error) {
    lastError.message = `${what}: ${lastError.message}`;
    throw lastError;
  }
  throw new Error(`${what}: the condition never held (${attempts} tries, ${pauseMs} ms apart)`);
}

/**
 * Resolves once `Date.now()` is past `ms`: a timestamp written after this differs from one written
 * at or before `ms`, so a test can tell "rewritten" from "untouched" without sleeping a guess.
 */
export async function clockPast (ms: number): Promise<void> {
  while (Date.now() <= ms) await sleep(1);
}

/**
 * How a promise ended within `ms`: its value, its error, or still pending — for a promise that must
 * settle (a request must be answered); it returns as soon as the promise settles.
 */
export type Settled<T> = { settled: 'resolved', value: T } | { settled: 'rejected', error: unknown } | { settled: 'pending' };

export async function within<T> (promise: Promise<T>, ms: number): Promise<Settled<T>> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<{ settled: 'pending' }>((resolve) => { timer = setTimeout(() => resolve({ settled: 'pending' }), ms); });
  try {
    return await Promise.race([
      promise.then((value) => ({ settled: 'resolved' as const, value }), (error: unknown) => ({ settled: 'rejected' as const, error })),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
