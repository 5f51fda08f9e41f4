import type { IPromotionWindow, TGovernanceIntent } from '../../contracts/promotionPolicy.js';
import { compileWindow, type CompiledWindow, type Occurrence, type WindowScope } from './recurrence.js';

/**
 * Whether promotions are open at an instant, by the windows in force — the global ones (in the
 * database) and the service's own — and, when closed, by which window and when they open next.
 *
 * - a deny window that is active closes promotions;
 * - a scope (global, service) that has allow windows is open only while one of them is active:
 *   each scope's allow windows restrict on their own, so both scopes' must agree;
 * - rollbacks, aborts and automatic rollbacks are never blocked by a window;
 * - a window that cannot be evaluated (a stored rule this runtime refuses, say a time zone its
 *   tz database no longer has) closes promotions and is named: a freeze fails closed.
 *
 * Occurrences are active on [start, end): a deny window 16:00–04:00 closes at 16:00 and is open
 * again at 04:00 sharp.
 */

export type { WindowScope } from './recurrence.js';

/** The windows in force, by where they come from. */
export interface WindowSources {
  global?: readonly IPromotionWindow[];
  service?: readonly IPromotionWindow[];
}

/** Why promotions are closed at an instant. */
export type WindowClosure =
  /** An active deny window occurrence. */
  | { kind: 'deny', scope: WindowScope, names: [string], description?: string, startedAt: number, endsAt: number }
  /** The scope has allow windows and none is active. */
  | { kind: 'outside-allow', scope: WindowScope, names: string[] }
  /** A window that cannot be evaluated (fail closed). */
  | { kind: 'invalid', scope: WindowScope, names: [string], problem: string };

export type WindowState =
  | { open: true, exempt: boolean }
  | {
    open: false,
    closedBy: WindowClosure[],
    /** The earliest instant ≥ `at` at which they are open; absent when there is none before `searchedUntil`. */
    opensAt?: number,
    searchedUntil: number,
  };

/** Intents no window ever blocks: a return to a known-good release must always be possible. */
export const windowExemptIntents: readonly TGovernanceIntent[] = ['rollback', 'abort', 'automatic-rollback'];

/** How far ahead the next opening is looked for (a yearly allow window is found; a rule that never opens is not searched for ever). */
export const WINDOW_SEARCH_HORIZON_MS = 400 * 86_400_000;
const FIRST_SPAN_MS = 86_400_000;
const MAX_SPAN_MS = 32 * 86_400_000;

interface Active { window: CompiledWindow, occurrence: Occurrence }

function compileAll (sources: WindowSources): { compiled: CompiledWindow[], invalid: WindowClosure[] } {
  const compiled: CompiledWindow[] = [];
  const invalid: WindowClosure[] = [];
  for (const scope of ['global', 'service'] as const) {
    for (const window of sources[scope] ?? []) {
      const result = compileWindow(window, scope);
      if (result.ok) compiled.push(result.window);
      else invalid.push({ kind: 'invalid', scope, names: [window.name], problem: result.problems.map((p) => p.message).join('; ') });
    }
  }
  return { compiled, invalid };
}

/** The occurrences of every window that are active at some instant of [from, to). */
const activeDuring = (windows: readonly CompiledWindow[], from: number, to: number): Active[] =>
  windows.flatMap((window) => window.startingIn(from - window.maxLengthMs, to)
    .filter((occurrence) => occurrence.end > from)
    .map((occurrence) => ({ window, occurrence })));

/** The scopes that have allow windows, and their names. */
type AllowIndex = ReadonlyMap<WindowScope, string[]>;

/** Why promotions are closed at `t` ([] when open), from the occurrences that may be active then. */
function closuresAt (occurrences: readonly Active[], allow: AllowIndex, t: number): WindowClosure[] {
  const active = occurrences.filter(({ occurrence }) => occurrence.start <= t && t < occurrence.end);
  const closures: WindowClosure[] = active.filter(({ window }) => window.kind === 'deny').map(({ window, occurrence }) => ({
    kind: 'deny',
    scope: window.scope,
    names: [window.name],
    ...(window.description === undefined ? {} : { description: window.description }),
    startedAt: occurrence.start,
    endsAt: occurrence.end,
  }));
  for (const [scope, names] of allow) {
    if (!active.some(({ window }) => window.kind === 'allow' && window.scope === scope)) closures.push({ kind: 'outside-allow', scope, names });
  }
  return closures;
}

/**
 * The earliest instant in [from, until) at which no deny window is active and every scope with
 * allow windows has one active. Promotions can only become open where a deny occurrence ends or
 * an allow occurrence starts, so only `from` and those instants are candidates; the search goes
 * forward in growing spans, so a near opening costs little and a far one stays bounded.
 */
function nextOpening (windows: readonly CompiledWindow[], allow: AllowIndex, from: number, until: number): number | undefined {
  let cursor = from;
  let span = FIRST_SPAN_MS;
  while (cursor < until) {
    const end = Math.min(cursor + span, until);
    const occurrences = activeDuring(windows, cursor, end);
    const candidates = [cursor, ...occurrences.map(({ window, occurrence }) => (window.kind === 'deny' ? occurrence.end : occurrence.start))]
      .filter((t) => t >= cursor && t < end)
      .sort((a, b) => a - b);
    for (const t of candidates) if (closuresAt(occurrences, allow, t).length === 0) return t;
    cursor = end;
    span = Math.min(span * 2, MAX_SPAN_MS);
  }
  return undefined;
}

/**
 * Open, or closed by which windows and open again when. `intent` decides whether windows apply
 * at all: rollbacks, aborts and automatic rollbacks are never blocked.
 */
export function windowState (
  sources: WindowSources, at: number, intent: TGovernanceIntent = 'promotion', horizonMs = WINDOW_SEARCH_HORIZON_MS,
): WindowState {
  if (windowExemptIntents.includes(intent)) return { open: true, exempt: true };
  const { compiled, invalid } = compileAll(sources);
  const searchedUntil = at + horizonMs;
  if (invalid.length > 0) return { open: false, closedBy: invalid, searchedUntil };
  const allow = new Map<WindowScope, string[]>();
  for (const w of compiled) if (w.kind === 'allow') allow.set(w.scope, [...(allow.get(w.scope) ?? []), w.name]);
  const closedBy = closuresAt(activeDuring(compiled, at, at + 1), allow, at);
  if (closedBy.length === 0) return { open: true, exempt: false };
  const opensAt = nextOpening(compiled, allow, at, searchedUntil);
  return { open: false, closedBy, ...(opensAt === undefined ? {} : { opensAt }), searchedUntil };
}
