import type { KeysetPosition } from '../domain/releases.js';

/**
 * The filter of a newest-first keyset page (sorted by `timeField` desc, `_id` desc) that starts
 * after `after`. The `$lte` bound repeats what the `$or` says, but lets an index scan start at the
 * cursor; without it a planner may read (and discard) every entry before it.
 */
export const keysetBefore = (timeField: string, after: KeysetPosition): Record<string, unknown> => ({
  [timeField]: { $lte: after.time },
  $or: [
    { [timeField]: { $lt: after.time } },
    { [timeField]: after.time, _id: { $lt: after.id } },
  ],
});
