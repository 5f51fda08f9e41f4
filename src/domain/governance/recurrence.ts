import { RRuleTemporal } from 'rrule-temporal';
import type { IPromotionWindow } from '../../contracts/promotionPolicy.js';
import type { Problem } from '../../errors.js';

/**
 * A promotion window as RFC 5545 recurrence (DTSTART;TZID + RRULE + a duration), compiled once
 * into something that lists its occurrences as instants. rrule-temporal expands the rule in the
 * window's own time zone (Temporal.ZonedDateTime), so 16:00 stays 16:00 local across
 * daylight-saving changes and the answer never depends on the process's TZ. A local time that
 * does not exist (02:30 on the spring-forward day) yields no occurrence that day and a repeated
 * one (02:30 on the fall-back day) its first instance (RFC 5545 §3.3.10, §3.3.5).
 *
 * The rule text is checked here before the library sees it: the library ignores parts it does
 * not know and values out of range, and an operator deserves to hear about `BYHOUR=25`.
 */

export type WindowScope = 'global' | 'service';

/** One occurrence of a window: active on [start, end), instants in ms since the epoch. */
export interface Occurrence {
  start: number;
  end: number;
}

export interface CompiledWindow {
  name: string;
  kind: IPromotionWindow['kind'];
  scope: WindowScope;
  description?: string;
  /** An upper bound of one occurrence's length in ms: how far back an occurrence active at t can start. */
  maxLengthMs: number;
  /** The occurrences starting in [from, to), in order. */
  startingIn(from: number, to: number): Occurrence[];
}

export type Compiled = { ok: true, window: CompiledWindow } | { ok: false, problems: Problem[] };

const DAY_MS = 86_400_000;
const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'];
const FREQUENCIES = ['YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY'];

/** A comma list of integers, each in ±[min, max] (`signed`) or [min, max]. */
const intList = (min: number, max: number, signed = false) => (value: string): string | undefined => {
  for (const item of value.split(',')) {
    if (!/^[+-]?\d{1,4}$/.test(item)) return `'${item.slice(0, 16)}' is not an integer`;
    const n = Number(item);
    const magnitude = signed ? Math.abs(n) : n;
    if ((!signed && item.startsWith('-')) || magnitude < min || magnitude > max || (signed && n === 0)) {
      return `${item} is out of range (${signed ? `±${min}…${max}` : `${min}…${max}`})`;
    }
  }
  return undefined;
};

const byDay = (value: string): string | undefined => {
  for (const item of value.split(',')) {
    const m = /^([+-]?\d{1,2})?([A-Z]{2})$/.exec(item);
    if (!m || !WEEKDAYS.includes(m[2] ?? '')) return `'${item.slice(0, 16)}' is not a weekday (MO … SU, optionally with an ordinal: 1MO, -1FR)`;
    if (m[1] !== undefined && (Number(m[1]) === 0 || Math.abs(Number(m[1])) > 53)) return `the ordinal of ${item} is out of range (±1…53)`;
  }
  return undefined;
};

/** `YYYYMMDDTHHMMSSZ` naming a real instant. */
const isUtcDateTime = (v: string): boolean => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(v);
  return m !== null && localDateTime(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}`) !== undefined;
};

/** Every rule part RFC 5545 §3.3.10 defines, with its value's check. */
const PART_CHECKS: Record<string, (value: string) => string | undefined> = {
  FREQ: (v) => (FREQUENCIES.includes(v) ? undefined : `FREQ must be one of ${FREQUENCIES.join(', ')} (a window does not recur more often than hourly)`),
  INTERVAL: intList(1, 1000),
  COUNT: intList(1, 100_000),
  UNTIL: (v) => (isUtcDateTime(v) ? undefined : 'UNTIL must be a UTC date-time, e.g. 20261231T230000Z (DTSTART has a TZID)'),
  BYSECOND: intList(0, 59),
  BYMINUTE: intList(0, 59),
  BYHOUR: intList(0, 23),
  BYDAY: byDay,
  BYMONTHDAY: intList(1, 31, true),
  BYYEARDAY: intList(1, 366, true),
  BYWEEKNO: intList(1, 53, true),
  BYMONTH: intList(1, 12),
  BYSETPOS: intList(1, 366, true),
  WKST: (v) => (WEEKDAYS.includes(v) ? undefined : 'WKST must be a weekday (MO … SU)'),
};

/** RFC 5545's combination rules for the parts (§3.3.10 "the BYxxx rule parts … MUST NOT be specified when …"). */
function combinationProblem (parts: ReadonlyMap<string, string>): string | undefined {
  const freq = parts.get('FREQ');
  if (freq === undefined) return 'FREQ is required';
  if (parts.has('COUNT') && parts.has('UNTIL')) return 'COUNT and UNTIL cannot both be given';
  if (parts.has('BYWEEKNO') && freq !== 'YEARLY') return 'BYWEEKNO needs FREQ=YEARLY';
  if (parts.has('BYYEARDAY') && ['DAILY', 'WEEKLY', 'MONTHLY'].includes(freq)) return `BYYEARDAY cannot be used with FREQ=${freq}`;
  if (parts.has('BYMONTHDAY') && freq === 'WEEKLY') return 'BYMONTHDAY cannot be used with FREQ=WEEKLY';
  const ordinal = (parts.get('BYDAY') ?? '').split(',').some((d) => /^[+-]?\d/.test(d));
  if (ordinal && !['MONTHLY', 'YEARLY'].includes(freq)) return 'a BYDAY ordinal (1MO, -1FR) needs FREQ=MONTHLY or YEARLY';
  if (parts.has('BYSETPOS') && ![...parts.keys()].some((k) => k.startsWith('BY') && k !== 'BYSETPOS')) return 'BYSETPOS needs another BYxxx part';
  return undefined;
}

/**
 * The RRULE value normalized (upper case: RFC 5545 names and values are case-insensitive), or
 * what is wrong with it.
 */
export function parseRrule (text: string): { ok: true, rrule: string } | { ok: false, message: string } {
  if (/^\s*(DTSTART|RRULE)\s*[:;]/i.test(text) || /[\r\n]/.test(text)) {
    return { ok: false, message: 'write only the RRULE value (FREQ=…;…): the start goes in `start`, its TZID in `timeZone`' };
  }
  const rrule = text.trim().toUpperCase();
  const parts = new Map<string, string>();
  for (const part of rrule.split(';')) {
    const [name = '', value, ...rest] = part.split('=');
    const check = PART_CHECKS[name];
    if (check === undefined) return { ok: false, message: `unknown rule part '${name.slice(0, 16)}'` };
    if (value === undefined || value === '' || rest.length > 0) return { ok: false, message: `${name} needs one value (${name}=…)` };
    if (parts.has(name)) return { ok: false, message: `${name} is given more than once` };
    const problem = check(value);
    if (problem !== undefined) return { ok: false, message: problem };
    parts.set(name, value);
  }
  const combination = combinationProblem(parts);
  return combination === undefined ? { ok: true, rrule } : { ok: false, message: combination };
}

/** `YYYY-MM-DDTHH:MM[:SS]` as its fields, when it is a real calendar date and time of day. */
export function localDateTime (text: string): { year: number, month: number, day: number, hour: number, minute: number, second: number } | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
  const probe = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  const same = probe.getUTCFullYear() === year && probe.getUTCMonth() === month - 1 && probe.getUTCDate() === day &&
    probe.getUTCHours() === hour && probe.getUTCMinutes() === minute && probe.getUTCSeconds() === second;
  return same && year >= 1970 ? { year, month, day, hour, minute, second } : undefined;
}

/** An IANA time zone name this runtime knows (offsets such as `+01:00` are not time zones). */
export function isTimeZone (name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return false;
  try {
    // eslint-disable-next-line no-new -- the constructor is the runtime's check of the name
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** An RFC 5545 dur-value (`P2DT12H`, `PT90M`, `P1W`): calendar days (weeks are 7) and exact seconds. */
export function parseDuration (text: string): { days: number, seconds: number } | undefined {
  const m = /^([+-])?P(?:(\d{1,3})W|(?:(\d{1,3})D)?(?:T(?=\d)(?:(\d{1,6})H)?(?:(\d{1,7})M)?(?:(\d{1,8})S)?)?)$/.exec(text.toUpperCase());
  if (!m || text.length < 3) return undefined;
  const [sign, weeks, days, hours, minutes, seconds] = m.slice(1);
  const factor = sign === '-' ? -1 : 1;
  return {
    days: factor * (Number(weeks ?? 0) * 7 + Number(days ?? 0)),
    seconds: factor * (Number(hours ?? 0) * 3600 + Number(minutes ?? 0) * 60 + Number(seconds ?? 0)),
  };
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** The length of each occurrence: exact seconds, or an RFC 5545 duration added in the window's zone. */
type Length = { exactMs: number } | { days: number, seconds: number };

function lengthProblems (window: IPromotionWindow, field: string): { length?: Length, problems: Problem[] } {
  const given = [window.durationSeconds, window.duration].filter((v) => v !== undefined).length;
  if (given !== 1) return { problems: [{ field, message: 'give exactly one of durationSeconds and duration' }] };
  if (window.durationSeconds !== undefined) return { length: { exactMs: window.durationSeconds * 1000 }, problems: [] };
  const parsed = parseDuration(window.duration ?? '');
  if (parsed === undefined) return { problems: [{ field: `${field}/duration`, message: 'must be an RFC 5545 duration such as P2DT12H, PT4H or P1W' }] };
  if (parsed.days < 0 || parsed.seconds < 0 || (parsed.days === 0 && parsed.seconds <= 0)) {
    return { problems: [{ field: `${field}/duration`, message: 'must be longer than 0' }] };
  }
  if (parsed.days * 86_400 + parsed.seconds > 366 * 86_400) return { problems: [{ field: `${field}/duration`, message: 'must be at most 366 days' }] };
  return { length: parsed, problems: [] };
}

/** What a window's fields say, checked one by one, so that each problem points at its own field. */
function fieldProblems (window: IPromotionWindow, field: string): { rrule?: string, length?: Length, problems: Problem[] } {
  const problems: Problem[] = [];
  if (!localDateTime(window.start)) {
    problems.push({ field: `${field}/start`, message: 'must be a local date-time YYYY-MM-DDTHH:MM[:SS] that exists in the calendar, from 1970' });
  }
  if (!isTimeZone(window.timeZone)) {
    problems.push({ field: `${field}/timeZone`, message: `'${window.timeZone.slice(0, 64)}' is not an IANA time zone (e.g. Europe/Berlin, UTC)` });
  }
  const parsed = window.rrule === undefined ? { ok: true as const, rrule: 'FREQ=DAILY;COUNT=1' } : parseRrule(window.rrule);
  if (!parsed.ok) problems.push({ field: `${field}/rrule`, message: parsed.message });
  const { length, problems: lengthIssues } = lengthProblems(window, field);
  problems.push(...lengthIssues);
  return { ...(parsed.ok ? { rrule: parsed.rrule } : {}), ...(length ? { length } : {}), problems };
}

/**
 * Compiles a window, or says what is wrong with it (fields under `field`, a JSON pointer such as
 * `/promotionPolicy/windows/0`): a start that is no calendar date-time, an unknown time zone, an
 * RRULE that does not parse or never occurs, a duration that is not positive.
 */
export function compileWindow (window: IPromotionWindow, scope: WindowScope, field = ''): Compiled {
  const { rrule, length, problems } = fieldProblems(window, field);
  if (problems.length > 0 || rrule === undefined || length === undefined) return { ok: false, problems };
  const s = localDateTime(window.start);
  const dtstart = s && `${pad(s.year, 4)}${pad(s.month)}${pad(s.day)}T${pad(s.hour)}${pad(s.minute)}${pad(s.second)}`;
  let rule: RRuleTemporal;
  try {
    const rruleString = `DTSTART;TZID=${window.timeZone}:${dtstart}\nRRULE:${rrule}`;
    rule = new RRuleTemporal({ rruleString });
    // The first occurrence of a rule that has one comes within a few hundred periods of DTSTART (a leap day, a 53rd week):
    // a bounded probe keeps a rule that never occurs from costing a second of CPU per check.
    const probe = new RRuleTemporal({ rruleString, maxIterations: 2000 });
    if (probe.all((_, i) => i < 1).length === 0) throw new Error('no occurrence');
  } catch {
    return { ok: false, problems: [{ field: `${field}/rrule`, message: 'the rule has no occurrence (e.g. BYMONTH=2;BYMONTHDAY=30)' }] };
  }
  // Exact: the same elapsed time every time. Nominal: calendar days in the window's zone, then exact time (RFC 5545 §3.3.6).
  const endOf = (zoned: ReturnType<RRuleTemporal['all']>[number]): number =>
    ('exactMs' in length ? zoned.epochMilliseconds + length.exactMs : zoned.add(length).epochMilliseconds);
  // A calendar day is 23–25 h around a daylight-saving change (more where a zone once skipped a day): look back generously.
  const maxLengthMs = 'exactMs' in length ? length.exactMs : length.days * DAY_MS + length.seconds * 1000 + (length.days > 0 ? 2 * DAY_MS : 0);
  return {
    ok: true,
    window: {
      name: window.name,
      kind: window.kind,
      scope,
      ...(window.description === undefined ? {} : { description: window.description }),
      maxLengthMs,
      startingIn: (from, to) => rule.between(new Date(from), new Date(to), true)
        .filter((z) => z.epochMilliseconds >= from && z.epochMilliseconds < to)
        .map((z) => ({ start: z.epochMilliseconds, end: endOf(z) })),
    },
  };
}
