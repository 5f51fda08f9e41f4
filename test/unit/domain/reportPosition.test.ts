import { describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { orderingTimeOf, positionVerdict, type ReportHead } from '../../../src/domain/reports.js';

const plan = { rolloutId: 'ro_1', rolloutGeneration: 1 } as IImmutableImageDeploymentPlan;
const T = 1_800_000_000_000;
const TOLERANCE = 5_000;

/** The reporter's record after a report of `sessionId` / `sequence` made at `reportedAt`, received at `receivedAt`. */
const recordAt = (sessionId: string, sequence: number, reportedAt: number, receivedAt: number, retiredSessions: string[] = []): ReportHead => ({
  id: 'rollout:ro_1:c1/agent',
  serviceId: 's',
  rolloutId: 'ro_1',
  reporterId: 'c1/agent',
  clusterId: 'c1',
  version: 1,
  position: { sessionId, sequence, reportedAt, receivedAt },
  retiredSessions,
  nodeNames: ['n1'],
  replicas: [],
});

describe('where a report stands in its reporter\'s sequence', () => {
  it('per session the sequence only grows: equal is a replay, lower is refused', () => {
    const record = recordAt('s1', 5, T, T);
    expect(positionVerdict(plan, record, { sessionId: 's1', sequence: 6, reportedAt: T + 1, receivedAt: T + 1 }, TOLERANCE).kind).toBe('apply');
    expect(positionVerdict(plan, record, { sessionId: 's1', sequence: 5, reportedAt: T + 1, receivedAt: T + 1 }, TOLERANCE).kind).toBe('replay');
    expect(positionVerdict(plan, record, { sessionId: 's1', sequence: 4, reportedAt: T + 1, receivedAt: T + 1 }, TOLERANCE).kind).toBe('refuse');
  });

  it('a new session takes over only with a later reportedAt, and retires the one it replaces for good', () => {
    const record = recordAt('s1', 5, T, T);
    expect(positionVerdict(plan, record, { sessionId: 's2', sequence: 1, reportedAt: T + 1_000, receivedAt: T + 1_000 }, TOLERANCE))
      .toEqual({ kind: 'apply', retire: 's1' });
    expect(positionVerdict(plan, record, { sessionId: 's2', sequence: 1, reportedAt: T, receivedAt: T + 1_000 }, TOLERANCE).kind).toBe('refuse');
    const retired = recordAt('s2', 1, T + 1_000, T + 1_000, ['s1']);
    expect(positionVerdict(plan, retired, { sessionId: 's1', sequence: 9, reportedAt: T + 9_000, receivedAt: T + 9_000 }, TOLERANCE).kind).toBe('refuse');
  });

  it('a report whose clock ran far ahead counts as made at its receipt plus the tolerance: it cannot lock the reporter\'s later sessions out', () => {
    const yearAhead = T + 365 * 86_400_000;
    expect(orderingTimeOf({ reportedAt: yearAhead, receivedAt: T }, TOLERANCE)).toBe(T + TOLERANCE);
    const record = recordAt('s-fast-clock', 3, yearAhead, T);
    // The agent restarts with a correct clock 10 s later: its new session takes over.
    expect(positionVerdict(plan, record, { sessionId: 's-fixed', sequence: 1, reportedAt: T + 10_000, receivedAt: T + 10_000 }, TOLERANCE))
      .toEqual({ kind: 'apply', retire: 's-fast-clock' });
    // Within the tolerance nothing changes: the reporter's own clock orders its sessions.
    const close = recordAt('s1', 3, T + 4_000, T);
    expect(positionVerdict(plan, close, { sessionId: 's2', sequence: 1, reportedAt: T + 3_000, receivedAt: T + 1_000 }, TOLERANCE).kind).toBe('refuse');
  });
});
