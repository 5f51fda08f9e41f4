import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IPromotionWindow } from '../../../../src/contracts/promotionPolicy.js';
import { windowState, type WindowSources, type WindowState } from '../../../../src/domain/governance/windows.js';

// Europe/Berlin in 2025: CET (+01:00) until Sunday 30 March 01:00Z (02:00 → 03:00 local), CEST (+02:00)
// until Sunday 26 October 01:00Z (03:00 → 02:00 local). Every expectation below is an exact instant.
const t = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** Deny from Friday 16:00 Berlin time, every week. */
const weekendFreeze = (length: Pick<IPromotionWindow, 'durationSeconds' | 'duration'>): IPromotionWindow => ({
  name: 'weekend-freeze', kind: 'deny', start: '2025-01-03T16:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=16', ...length,
});
const sixtyHours = weekendFreeze({ durationSeconds: 60 * 3600 });
/** Daily maintenance at 02:30 Berlin time for an hour: 02:30 does not exist on 30 March and happens twice on 26 October. */
const nightly: IPromotionWindow = {
  name: 'nightly', kind: 'deny', start: '2025-01-01T02:30', timeZone: 'Europe/Berlin', rrule: 'FREQ=DAILY', durationSeconds: 3600,
};
/** Promotions only Monday to Thursday, 09:00–17:00 Berlin time. */
const officeHours: IPromotionWindow = {
  name: 'office-hours', kind: 'allow', start: '2025-01-06T09:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH', duration: 'PT8H',
};

const closed = (state: WindowState) => {
  expect(state.open, 'closed').toBe(false);
  if (state.open) throw new Error('open');
  return { ...state, opensAt: iso(state.opensAt) };
};

describe('a weekly deny window FREQ=WEEKLY;BYDAY=FR;BYHOUR=16 for 60 h (exact seconds)', () => {
  it('closes at Friday 16:00 CET and opens 60 h later, Monday 05:00 CEST across the spring-forward weekend', () => {
    expect(windowState({ service: [sixtyHours] }, t('2025-03-28T14:59:59.999Z'))).toEqual({ open: true, exempt: false });
    const state = closed(windowState({ service: [sixtyHours] }, t('2025-03-29T12:00:00Z')));
    expect(state.closedBy).toEqual([{
      kind: 'deny', scope: 'service', names: ['weekend-freeze'], startedAt: t('2025-03-28T15:00:00Z'), endsAt: t('2025-03-31T03:00:00Z'),
    }]);
    expect(state.opensAt).toBe('2025-03-31T03:00:00.000Z');
    expect(closed(windowState({ service: [sixtyHours] }, t('2025-03-28T15:00:00Z'))).opensAt).toBe('2025-03-31T03:00:00.000Z');
    expect(windowState({ service: [sixtyHours] }, t('2025-03-31T03:00:00Z')).open, 'the end is not part of the window').toBe(true);
  });

  it('in an ordinary week it is Friday 16:00 to Monday 04:00 local', () => {
    expect(closed(windowState({ service: [sixtyHours] }, t('2025-03-22T00:00:00Z'))).closedBy[0])
      .toMatchObject({ startedAt: t('2025-03-21T15:00:00Z'), endsAt: t('2025-03-24T03:00:00Z') });
  });

  it('starts at 16:00 CEST (14:00Z) after the change and ends Monday 03:00 CET across the fall-back weekend', () => {
    expect(windowState({ service: [sixtyHours] }, t('2025-04-04T13:59:59Z')).open).toBe(true);
    expect(closed(windowState({ service: [sixtyHours] }, t('2025-04-04T14:00:00Z'))).opensAt).toBe('2025-04-07T02:00:00.000Z');
    const october = closed(windowState({ service: [sixtyHours] }, t('2025-10-26T12:00:00Z')));
    expect(october.closedBy[0]).toMatchObject({ startedAt: t('2025-10-24T14:00:00Z'), endsAt: t('2025-10-27T02:00:00Z') });
    expect(october.opensAt).toBe('2025-10-27T02:00:00.000Z');
  });

  it('as the nominal duration P2DT12H it ends Monday 04:00 local whatever the clocks did', () => {
    const nominal = weekendFreeze({ duration: 'P2DT12H' });
    expect(closed(windowState({ service: [nominal] }, t('2025-03-29T12:00:00Z'))).opensAt).toBe('2025-03-31T02:00:00.000Z');
    expect(closed(windowState({ service: [nominal] }, t('2025-10-26T12:00:00Z'))).opensAt).toBe('2025-10-27T03:00:00.000Z');
    expect(closed(windowState({ service: [nominal] }, t('2025-03-22T00:00:00Z'))).opensAt).toBe('2025-03-24T03:00:00.000Z');
  });
});

describe('a daily deny window at 02:30 Berlin time', () => {
  it('is 01:30Z–02:30Z in winter and 00:30Z–01:30Z in summer', () => {
    expect(closed(windowState({ service: [nightly] }, t('2025-03-29T01:45:00Z'))).opensAt).toBe('2025-03-29T02:30:00.000Z');
    expect(windowState({ service: [nightly] }, t('2025-03-29T01:29:59Z')).open).toBe(true);
    expect(closed(windowState({ service: [nightly] }, t('2025-03-31T00:30:00Z'))).opensAt).toBe('2025-03-31T01:30:00.000Z');
  });

  it('does not occur on 30 March, when 02:30 does not exist (RFC 5545 §3.3.10: ignored)', () => {
    for (const at of ['2025-03-30T00:29:00Z', '2025-03-30T00:45:00Z', '2025-03-30T01:15:00Z', '2025-03-30T01:45:00Z', '2025-03-30T02:15:00Z']) {
      expect(windowState({ service: [nightly] }, t(at)).open, at).toBe(true);
    }
  });

  it('occurs once on 26 October, at the first 02:30 (CEST), not again at the repeated 02:30 (CET)', () => {
    const first = closed(windowState({ service: [nightly] }, t('2025-10-26T00:30:00Z')));
    expect(first.closedBy[0]).toMatchObject({ startedAt: t('2025-10-26T00:30:00Z'), endsAt: t('2025-10-26T01:30:00Z') });
    expect(windowState({ service: [nightly] }, t('2025-10-26T01:45:00Z')).open).toBe(true);
    expect(closed(windowState({ service: [nightly] }, t('2025-10-27T01:30:00Z'))).opensAt).toBe('2025-10-27T02:30:00.000Z');
  });
});

describe('allow windows', () => {
  it('outside every allow window promotions are closed until the next one starts (Monday 09:00 CEST after the change)', () => {
    const state = closed(windowState({ service: [officeHours] }, t('2025-03-28T10:00:00Z')));
    expect(state.closedBy).toEqual([{ kind: 'outside-allow', scope: 'service', names: ['office-hours'] }]);
    expect(state.opensAt).toBe('2025-03-31T07:00:00.000Z');
    expect(windowState({ service: [officeHours] }, t('2025-03-27T15:59:59Z')).open).toBe(true);
    expect(windowState({ service: [officeHours] }, t('2025-03-27T16:00:00Z')).open).toBe(false);
  });

  it('a deny window inside allowed time pushes the opening to the first allowed instant after it', () => {
    // A one-off freeze from Monday 31 March 00:00 to Wednesday 2 April 00:00 local (two calendar days).
    const releaseFreeze: IPromotionWindow = { name: 'release-freeze', kind: 'deny', start: '2025-03-31T00:00', timeZone: 'Europe/Berlin', duration: 'P2D' };
    const state = closed(windowState({ service: [officeHours, releaseFreeze] }, t('2025-03-31T08:00:00Z')));
    expect(state.closedBy).toEqual([{
      kind: 'deny', scope: 'service', names: ['release-freeze'], startedAt: t('2025-03-30T22:00:00Z'), endsAt: t('2025-04-01T22:00:00Z'),
    }]);
    expect(state.opensAt).toBe('2025-04-02T07:00:00.000Z');
  });

  it('global and service allow windows must both be active (each restricts on its own); a global deny closes every service', () => {
    const tuesdayAfternoon: IPromotionWindow = {
      name: 'tuesday-afternoon', kind: 'allow', start: '2025-01-07T14:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=TU', durationSeconds: 2 * 3600,
    };
    const onlyService = windowState({ service: [tuesdayAfternoon] }, t('2025-04-01T13:00:00Z'));
    expect(onlyService.open).toBe(true);
    const both = closed(windowState({ global: [{ ...officeHours, start: '2025-01-06T15:30' }], service: [tuesdayAfternoon] }, t('2025-04-01T12:30:00Z')));
    expect(both.closedBy).toEqual([{ kind: 'outside-allow', scope: 'global', names: ['office-hours'] }]);
    expect(both.opensAt).toBe('2025-04-01T13:30:00.000Z');
    const globalDeny = closed(windowState({ global: [{ ...nightly, name: 'dr-drill' }], service: [] }, t('2025-04-01T01:00:00Z')));
    expect(globalDeny.closedBy).toMatchObject([{ kind: 'deny', scope: 'global', names: ['dr-drill'] }]);
  });
});

describe('what windows block', () => {
  const sources: WindowSources = { service: [sixtyHours] };
  const inside = t('2025-03-29T12:00:00Z');

  it('blocks promotions of every kind', () => {
    for (const intent of ['promotion', 'automatic-promotion', 'pipeline-promotion'] as const) {
      expect(windowState(sources, inside, intent).open, intent).toBe(false);
    }
  });

  it('never blocks rollbacks, aborts or automatic rollbacks', () => {
    for (const intent of ['rollback', 'abort', 'automatic-rollback'] as const) {
      expect(windowState(sources, inside, intent), intent).toEqual({ open: true, exempt: true });
    }
  });

  it('fails closed on a stored window that cannot be evaluated, and names it', () => {
    const state = closed(windowState({ global: [{ ...nightly, name: 'broken', timeZone: 'Mars/Olympus_Mons' }] }, inside));
    expect(state.closedBy).toEqual([{ kind: 'invalid', scope: 'global', names: ['broken'], problem: expect.stringContaining('not an IANA time zone') }]);
    expect(state.opensAt).toBeUndefined();
  });

  it('bounds the search: a window that never lets go has no opening, and says how far it looked', () => {
    const always: IPromotionWindow = {
      name: 'always', kind: 'deny', start: '2025-01-01T00:00', timeZone: 'UTC', rrule: 'FREQ=DAILY', durationSeconds: 25 * 3600,
    };
    const state = closed(windowState({ service: [always] }, inside, 'promotion', 20 * 86_400_000));
    expect(state.opensAt).toBeUndefined();
    expect(state.searchedUntil).toBe(inside + 20 * 86_400_000);
    // With UNTIL it does let go: after the last occurrence (1 Jan 2026 00:00Z) has ended, 25 h later.
    const ending = { ...always, rrule: 'FREQ=DAILY;UNTIL=20260101T000000Z' };
    expect(closed(windowState({ service: [ending] }, t('2025-12-30T00:00:00Z'))).opensAt).toBe('2026-01-02T01:00:00.000Z');
  });

  it('no windows: open', () => {
    expect(windowState({}, inside)).toEqual({ open: true, exempt: false });
  });
});

// Properties ------------------------------------------------------------------

const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'UTC'] as const;
const weekdays = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const;

const windowArb: fc.Arbitrary<IPromotionWindow> = fc.record({
  kind: fc.constantFrom('deny' as const, 'allow' as const),
  timeZone: fc.constantFrom(...zones),
  hour: fc.integer({ min: 0, max: 23 }),
  minute: fc.constantFrom(0, 15, 30, 45),
  days: fc.uniqueArray(fc.constantFrom(...weekdays), { minLength: 1, maxLength: 7 }),
  daily: fc.boolean(),
  seconds: fc.integer({ min: 60, max: 5 * 86_400 }),
  nominal: fc.boolean(),
}).map(({ kind, timeZone, hour, minute, days, daily, seconds, nominal }) => ({
  name: 'w',
  kind,
  timeZone,
  start: `2025-01-01T${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`,
  rrule: daily ? 'FREQ=DAILY' : `FREQ=WEEKLY;BYDAY=${days.join(',')}`,
  ...(nominal ? { duration: `PT${seconds}S` } : { durationSeconds: seconds }),
}));

const sourcesArb = fc.record({
  global: fc.array(windowArb, { maxLength: 2 }),
  service: fc.array(windowArb, { maxLength: 3 }),
}).map(({ global, service }) => ({
  global: global.map((w, i) => ({ ...w, name: `g${i}` })),
  service: service.map((w, i) => ({ ...w, name: `s${i}` })),
}));

// Instants across both 2025 changes in every zone above (northern and southern hemisphere).
const atArb = fc.integer({ min: t('2025-03-20T00:00:00Z'), max: t('2025-11-10T00:00:00Z') });
const HORIZON = 30 * 86_400_000;

describe('properties of the next opening', () => {
  it('the next opening is open, and no instant between `at` and it is', () => {
    fc.assert(fc.property(sourcesArb, atArb, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), (sources, at, fractions) => {
      const state = windowState(sources, at, 'promotion', HORIZON);
      if (state.open || state.opensAt === undefined) return;
      expect(state.opensAt).toBeGreaterThanOrEqual(at);
      expect(windowState(sources, state.opensAt, 'promotion', HORIZON).open, `open at ${iso(state.opensAt)}`).toBe(true);
      const span = state.opensAt - at;
      const probes = [at, state.opensAt - 1, ...fractions.map((f) => at + Math.floor(f * span))].filter((p) => p >= at && p < (state.opensAt ?? at));
      for (const p of probes) expect(windowState(sources, p, 'promotion', HORIZON).open, `closed at ${iso(p)}`).toBe(false);
    }), { numRuns: 60 });
  });

  it('agrees with a brute-force minute scan on UTC daily deny windows (overlapping, adjoining, never letting go)', () => {
    // An independent oracle for UTC daily windows: each is active on [day + offset, day + offset + length) of every UTC day.
    const daily = fc.record({ offset: fc.integer({ min: 0, max: 1439 }), length: fc.integer({ min: 1, max: 2000 }) });
    const utcDaily = fc.array(daily, { minLength: 1, maxLength: 3 });
    fc.assert(fc.property(utcDaily, fc.integer({ min: 0, max: 1439 }), (denies, minuteOfDay) => {
      const windows: IPromotionWindow[] = denies.map(({ offset, length }, i) => ({
        name: `d${i}`,
        kind: 'deny',
        timeZone: 'UTC',
        rrule: 'FREQ=DAILY',
        durationSeconds: length * 60,
        start: `2025-01-01T${String(Math.floor(offset / 60)).padStart(2, '0')}:${String(offset % 60).padStart(2, '0')}`,
      }));
      const day0 = t('2025-06-10T00:00:00Z');
      const denied = (m: number): boolean => denies.some(({ offset, length }) => [-2, -1, 0].some((d) => {
        const start = (d * 1440) + offset + Math.floor(m / 1440) * 1440;
        return start <= m && m < start + length;
      }));
      const at = day0 + minuteOfDay * 60_000;
      let m = minuteOfDay;
      while (denied(m) && m < minuteOfDay + 10 * 1440) m++;
      const state = windowState({ service: windows }, at, 'promotion', 10 * 86_400_000);
      const expected = m === minuteOfDay ? 'open' : m >= minuteOfDay + 10 * 1440 ? 'never' : iso(day0 + m * 60_000);
      expect(state.open ? 'open' : iso(state.opensAt) ?? 'never').toBe(expected);
    }), { numRuns: 80 });
  });
});
