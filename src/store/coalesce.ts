/**
 * Group commit for the store: the calls made during one turn of the event loop are served by
 * one database round trip (a `find` by `_id` `$in`, a `bulkWrite`) sent at the end of that turn
 * (`setImmediate`). Under load many reports reach the same step in the same turn — their
 * requests arrived together — and the driver's per-command cost (command building, connection
 * checkout, the socket write that wakes the database, the reply's parsing) is paid once per turn
 * instead of once per report. A call never joins a round trip that was sent before it was made,
 * so what it reads is at least as new as a round trip of its own would have read, and each write
 * keeps its own outcome.
 */

/** One round trip for a batch of calls: a result per call, in order (an Error rejects that call alone), or a throw that rejects them all. */
export type BatchRun<Call, Outcome> = (calls: readonly Call[]) => Promise<ReadonlyArray<Outcome | Error>>;

interface Waiting<Call, Outcome> {
  call: Call;
  resolve: (outcome: Outcome) => void;
  reject: (err: unknown) => void;
}

/** How calls are grouped: at most `maxCalls` a round trip, and at most `maxWeight` of their `weigh` (a call heavier alone goes alone). */
export interface BatchLimits<Call> {
  maxCalls?: number;
  weigh?: (call: Call) => number;
  maxWeight?: number;
}

/** At most this many calls share one round trip (a longer queue is sent as several). */
const MAX_BATCH = 256;

/** The queue of one turn cut into batches, in order, each within the limits. */
function batchesOf<T extends { call: unknown }> (queue: readonly T[], limits: Required<BatchLimits<T['call']>>): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let weight = 0;
  for (const waiting of queue) {
    const w = limits.weigh(waiting.call);
    if (current.length > 0 && (current.length >= limits.maxCalls || weight + w > limits.maxWeight)) {
      batches.push(current);
      current = [];
      weight = 0;
    }
    current.push(waiting);
    weight += w;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

export function coalesced<Call, Outcome> (run: BatchRun<Call, Outcome>, limits: BatchLimits<Call> = {}): (call: Call) => Promise<Outcome> {
  const bounds: Required<BatchLimits<Call>> = {
    maxCalls: limits.maxCalls ?? MAX_BATCH, weigh: limits.weigh ?? (() => 0), maxWeight: limits.maxWeight ?? Number.POSITIVE_INFINITY,
  };
  let queue: Array<Waiting<Call, Outcome>> = [];

  const dispatch = (batch: Array<Waiting<Call, Outcome>>): void => {
    Promise.resolve()
      .then(() => run(batch.map((w) => w.call)))
      .then((outcomes) => {
        batch.forEach((w, i) => {
          const outcome = outcomes[i];
          if (outcome instanceof Error) w.reject(outcome);
          else if (i >= outcomes.length) w.reject(new Error(`a batch of ${batch.length} calls got ${outcomes.length} outcomes`));
          else w.resolve(outcome as Outcome);
        });
      }, (err: unknown) => {
        for (const w of batch) w.reject(err);
      });
  };

  const flush = (): void => {
    const turn = queue;
    queue = [];
    for (const batch of batchesOf(turn, bounds)) dispatch(batch);
  };

  return (call: Call) => new Promise<Outcome>((resolve, reject) => {
    if (queue.length === 0) setImmediate(flush);
    queue.push({ call, resolve, reject });
  });
}
