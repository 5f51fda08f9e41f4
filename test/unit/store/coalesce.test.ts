import { describe, expect, it } from 'vitest';
import { coalesced } from '../../../src/store/coalesce.js';

/** A batched "round trip" that records the batches it was given and answers each call with call × 10. */
function recorder (answer: (calls: readonly number[]) => Promise<ReadonlyArray<number | Error>> = async (calls) => calls.map((c) => c * 10)) {
  const batches: number[][] = [];
  const run = coalesced<number, number>(async (calls) => {
    batches.push([...calls]);
    return answer(calls);
  }, { maxCalls: 3 });
  return { run, batches };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('coalesced round trips', () => {
  it('calls made in one turn of the event loop share one round trip, each gets its own answer', async () => {
    const { run, batches } = recorder();
    const answers = await Promise.all([run(1), run(2), run(3)]);
    expect(answers).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('a call made after a round trip was sent never joins it: it goes in the next one', async () => {
    const { run, batches } = recorder();
    const first = run(1);
    await nextTurn();
    // The first batch has been sent (its run started) before this call.
    expect(batches).toEqual([[1]]);
    const second = run(2);
    expect(await Promise.all([first, second])).toEqual([10, 20]);
    expect(batches).toEqual([[1], [2]]);
  });

  it('more calls than a batch holds are sent as several round trips, in order', async () => {
    const { run, batches } = recorder();
    const answers = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => run(n)));
    expect(answers).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(batches).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('a batch holds at most maxWeight of its calls\' weight; a call heavier than that alone goes alone', async () => {
    const batches: number[][] = [];
    const run = coalesced<number, number>(async (calls) => {
      batches.push([...calls]);
      return calls.map((c) => c);
    }, { weigh: (c) => c, maxWeight: 10 });
    await Promise.all([4, 5, 2, 30, 1, 9].map((n) => run(n)));
    expect(batches).toEqual([[4, 5], [2], [30], [1, 9]]);
  });

  it('an Error answered for one call rejects that call alone', async () => {
    const { run } = recorder(async (calls) => calls.map((c) => (c === 2 ? new Error('refused: 2') : c * 10)));
    const settled = await Promise.allSettled([run(1), run(2), run(3)]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([10, 'refused: 2', 30]);
  });

  it('a round trip that fails rejects every call of its batch, and the next batch runs', async () => {
    let fail = true;
    const { run } = recorder(async (calls) => {
      if (fail) throw new Error('connection lost');
      return calls.map((c) => c * 10);
    });
    const settled = await Promise.allSettled([run(1), run(2)]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await run(3)).toBe(30);
  });

  it('a round trip that throws before its first await rejects its calls too', async () => {
    const run = coalesced<number, number>((): Promise<number[]> => { throw new Error('bad batch'); });
    await expect(run(1)).rejects.toThrow('bad batch');
  });

  it('a round trip that answers fewer outcomes than calls rejects the calls left without one', async () => {
    const { run } = recorder(async (calls) => calls.slice(0, 1).map((c) => c * 10));
    const settled = await Promise.allSettled([run(1), run(2)]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected']);
  });
});
