import { describe, expect, it } from 'vitest';
import type { IPromotionPolicy, IPromotionWindow } from '../../../../src/contracts/promotionPolicy.js';
import { effectivePromotionPolicy, globalGovernanceProblems, promotionPolicyProblems } from '../../../../src/domain/governance/policy.js';
import { parseDuration, parseRrule } from '../../../../src/domain/governance/recurrence.js';

const base: IPromotionWindow = {
  name: 'w', kind: 'deny', start: '2025-01-03T16:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=FR', durationSeconds: 3600,
};
const W = '/promotionPolicy/windows/0';
const windowProblems = (changes: Partial<IPromotionWindow>, drop: Array<keyof IPromotionWindow> = []) => {
  const window: Record<string, unknown> = { ...base, ...changes };
  for (const key of drop) delete window[key];
  return promotionPolicyProblems({ windows: [window as IPromotionWindow] }, '/promotionPolicy');
};

describe('defaults', () => {
  it('fills in every default, and keeps what is given', () => {
    expect(effectivePromotionPolicy(undefined)).toEqual({ windows: [], breakGlass: { allowed: false, maxSeconds: 3600 } });
    expect(effectivePromotionPolicy({
      pipeline: { requires: [{ serviceId: 'staging' }] },
      approvals: { required: 2, approvers: [{ role: 'admin' }] },
      breakGlass: { allowed: true },
    })).toEqual({
      pipeline: { requires: [{ serviceId: 'staging', soakSeconds: 0 }], automaticPromotion: false },
      approvals: {
        required: 2, approvers: [{ role: 'admin' }], appliesTo: ['promotion', 'automatic-promotion', 'pipeline-promotion'], requestTtlSeconds: 86_400,
      },
      windows: [],
      breakGlass: { allowed: true, maxSeconds: 3600 },
    });
  });
});

describe('what the schema cannot see', () => {
  it('a valid policy has no problems', () => {
    const policy: IPromotionPolicy = {
      pipeline: { requires: [{ serviceId: 'staging', soakSeconds: 3600 }], automaticPromotion: { enabled: true } },
      approvals: { required: 2, approvers: [{ subject: 'alice' }, { subject: 'bob' }, { role: 'admin' }] },
      windows: [base, { ...base, name: 'once', rrule: undefined, duration: 'P2D', durationSeconds: undefined }],
    };
    expect(promotionPolicyProblems(policy, '/promotionPolicy', 'production')).toEqual([]);
  });

  it('an RRULE that does not parse, named by its JSON pointer', () => {
    const cases: Array<[string, string]> = [
      ['FREQ=WEEKLY;BYHOUR=25', '25 is out of range (0…23)'],
      ['FREQ=WEEKLY;FOO=1', "unknown rule part 'FOO'"],
      ['FREQ=MINUTELY', 'FREQ must be one of'],
      ['BYDAY=FR', 'FREQ is required'],
      ['FREQ=WEEKLY;BYDAY=XX', "'XX' is not a weekday"],
      ['FREQ=DAILY;BYDAY=1MO', 'a BYDAY ordinal'],
      ['FREQ=DAILY;COUNT=3;UNTIL=20260101T000000Z', 'COUNT and UNTIL'],
      ['FREQ=DAILY;UNTIL=20260101', 'UNTIL must be a UTC date-time'],
      ['FREQ=DAILY;FREQ=WEEKLY', 'FREQ is given more than once'],
      ['DTSTART;TZID=Europe/Berlin:20250103T160000\nRRULE:FREQ=WEEKLY', 'write only the RRULE value'],
      ['FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30', 'the rule has no occurrence'],
    ];
    for (const [rrule, message] of cases) {
      expect(windowProblems({ rrule }), rrule).toEqual([{ field: '/promotionPolicy/windows/0/rrule', message: expect.stringContaining(message) }]);
    }
    expect(parseRrule('freq=weekly;byday=fr')).toEqual({ ok: true, rrule: 'FREQ=WEEKLY;BYDAY=FR' });
  });

  it('an unknown time zone, a start that is no calendar date-time', () => {
    for (const timeZone of ['Mars/Olympus_Mons', '+01:00', 'CEST ']) {
      expect(windowProblems({ timeZone }), timeZone).toEqual([{ field: `${W}/timeZone`, message: expect.stringContaining('not an IANA time zone') }]);
    }
    expect(windowProblems({ timeZone: 'UTC' })).toEqual([]);
    expect(windowProblems({ start: '2025-02-30T16:00' })).toEqual([{ field: `${W}/start`, message: expect.stringContaining('exists in the calendar') }]);
    expect(windowProblems({ start: '2025-01-03T24:00' })).toHaveLength(1);
  });

  it('a duration that is not positive, not RFC 5545, or given twice or not at all', () => {
    for (const duration of ['P0D', '-PT1H', 'PT0S']) {
      expect(windowProblems({ duration }, ['durationSeconds']), duration).toEqual([{ field: `${W}/duration`, message: 'must be longer than 0' }]);
    }
    expect(windowProblems({ duration: '2 hours' }, ['durationSeconds'])[0]?.message).toContain('RFC 5545 duration');
    expect(windowProblems({ duration: 'PT' }, ['durationSeconds'])[0]?.message).toContain('RFC 5545 duration');
    expect(windowProblems({ duration: 'P367D' }, ['durationSeconds'])[0]?.message).toBe('must be at most 366 days');
    const exactlyOne = [{ field: W, message: 'give exactly one of durationSeconds and duration' }];
    expect(windowProblems({ duration: 'PT1H' })).toEqual(exactlyOne);
    expect(windowProblems({}, ['durationSeconds'])).toEqual(exactlyOne);
    expect(parseDuration('P1W')).toEqual({ days: 7, seconds: 0 });
    expect(parseDuration('P2DT12H30M5S')).toEqual({ days: 2, seconds: 45_005 });
  });

  it('duplicate window names', () => {
    expect(promotionPolicyProblems({ windows: [base, { ...base, kind: 'allow' }] }, '/p'))
      .toEqual([{ field: '/p/windows/1/name', message: "another window is named 'w': names must be unique" }]);
  });

  it('more approvals required than named subjects could give; an approver listed twice', () => {
    const approvers = [{ subject: 'alice' }, { subject: 'bob', role: 'admin' as const }, { subject: 'bob' }];
    expect(promotionPolicyProblems({ approvals: { required: 3, approvers } }, '/p'))
      .toEqual([{ field: '/p/approvals/required', message: 'needs 3 approvals from distinct principals but only 2 subjects are listed' }]);
    expect(promotionPolicyProblems({ approvals: { required: 3, approvers: [{ subject: 'alice' }, { role: 'admin' }] } }, '/p'), 'a role admits any number')
      .toEqual([]);
    expect(promotionPolicyProblems({ approvals: { required: 1, approvers: [{ role: 'admin' }, { role: 'admin' }] } }, '/p'))
      .toEqual([{ field: '/p/approvals/approvers/1', message: 'is listed twice' }]);
  });

  it('a stage listed twice, or the service itself as its own stage', () => {
    const requires = [{ serviceId: 'staging' }, { serviceId: 'prod' }, { serviceId: 'staging' }];
    expect(promotionPolicyProblems({ pipeline: { requires } }, '/p', 'prod')).toEqual([
      { field: '/p/pipeline/requires/1/serviceId', message: 'a service cannot be its own upstream stage' },
      { field: '/p/pipeline/requires/2/serviceId', message: 'is listed twice' },
    ]);
  });

  it('the global policy: its windows, and a stop-the-line that is on says why, who and since when', () => {
    expect(globalGovernanceProblems({ stopTheLine: { active: true, reason: 'incident 42' } }, '/body')).toEqual([
      { field: '/body/stopTheLine/by', message: 'is required while stop-the-line is active' },
      { field: '/body/stopTheLine/since', message: 'is required while stop-the-line is active' },
    ]);
    expect(globalGovernanceProblems({ stopTheLine: { active: false } }, '/body')).toEqual([]);
    expect(globalGovernanceProblems({ windows: [{ ...base, timeZone: 'Nowhere/Else' }] }, '/body')).toEqual([
      { field: '/body/windows/0/timeZone', message: expect.stringContaining('not an IANA time zone') },
    ]);
  });
});
