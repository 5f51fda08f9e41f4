import type { BlockingReason, ReplicaDetail, RolloutSnapshot, RolloutView } from './api.js';
import { clip, currentStatus, isoTime, progressLine, shortDigest, waitingLines, type FollowSink } from './output.js';

/**
 * The live view of a rollout on a terminal (`status --watch`, `wait` and `--wait` in table
 * output): one row per target node with a glyph per replica slot, the reason that node blocks
 * success, and a status line with the counts — redrawn in place on every change.
 *
 * `renderLive` is pure (lines in, lines out: unit-tested); `LiveView` does the drawing with ANSI
 * escapes. Colours only when asked (not with --no-color or NO_COLOR); the glyphs alone tell the
 * states apart.
 */

export type SlotState = 'verified' | 'not-yet-stable' | 'healthy-unverified' | 'unhealthy' | 'failed' | 'mismatched' | 'missing';

type Style = 'green' | 'yellow' | 'red' | 'cyan' | 'magenta' | 'dim' | 'bold';

const SLOT: Record<SlotState, { glyph: string, style: Style, label: string }> = {
  verified: { glyph: '●', style: 'green', label: 'verified' },
  'not-yet-stable': { glyph: '○', style: 'green', label: 'verified, not yet stable' },
  'healthy-unverified': { glyph: '◐', style: 'cyan', label: 'healthy, not verified' },
  unhealthy: { glyph: '▲', style: 'yellow', label: 'unhealthy' },
  failed: { glyph: '✗', style: 'red', label: 'failed' },
  mismatched: { glyph: '≠', style: 'magenta', label: 'mismatched' },
  missing: { glyph: '·', style: 'dim', label: 'missing' },
};

const SGR: Record<Style, string> = { green: '32', yellow: '33', red: '31', cyan: '36', magenta: '35', dim: '2', bold: '1' };

/** A piece of a line with an optional style; a line is a list of them. */
interface Span { text: string, style?: Style }
type Line = Span[];

/** What one replica slot shows. Failure wins over a mismatch, which wins over ill health. */
export function slotState (replica: ReplicaDetail | undefined): SlotState {
  if (!replica) return 'missing';
  if (replica.health === 'failed') return 'failed';
  if (replica.verification === 'mismatched') return 'mismatched';
  if (replica.health !== 'healthy') return 'unhealthy';
  if (replica.verification !== 'verified') return 'healthy-unverified';
  if (replica.stability && replica.stability.state !== 'stable') return 'not-yet-stable';
  return 'verified';
}

export interface NodeRow {
  nodeName: string;
  slots: SlotState[];
  /** Why the node blocks success (the first blocking reason), or a short state. */
  note: string;
  blocking: boolean;
}

/**
 * Where the node's replicas inside the stability window stand at `now`: `not yet stable 4 s of
 * 10 s` (the one with the least time behind it), or `waiting for the next report` once the
 * window is over and no report has said so yet. Measured on this machine's clock from the
 * server's `runningVerifiedSince`, so it moves between reads.
 */
export function stabilityNote (unstable: ReplicaDetail[], perNode: number, now: number): string {
  const of = unstable.length > 1 ? ` (${unstable.length} of ${perNode} replicas)` : '';
  let behind = Infinity;
  let windowMs = 0;
  for (const { stability: st } of unstable) {
    if (!st) continue;
    windowMs = Math.max(windowMs, st.windowMs);
    const ms = st.state === 'waiting-for-report' ? st.windowMs : now - (st.runningVerifiedSince ?? now);
    behind = Math.min(behind, ms);
  }
  if (behind >= windowMs) return `stable for the window, waiting for the next report${of}`;
  return `not yet stable ${Math.max(0, Math.floor(behind / 1000))} s of ${Math.round(windowMs / 1000)} s${of}`;
}

/** One row per target node: its counted replicas (by deployment id) in slots up to replicasPerNode. */
export function nodeRows (view: RolloutView, now = Date.now()): NodeRow[] {
  const plan = view.plan;
  if (!plan) return [];
  const perNode = plan.targetScope.replicasPerNode;
  const replicasOf = new Map<string, ReplicaDetail[]>();
  for (const reporter of view.reporters) {
    for (const replica of reporter.replicas) {
      if (!replica.counted) continue;
      const list = replicasOf.get(replica.nodeName) ?? [];
      list.push(replica);
      replicasOf.set(replica.nodeName, list);
    }
  }
  const blockingOf = new Map<string, BlockingReason[]>();
  for (const b of view.blocking) if (b.nodeName !== undefined) blockingOf.set(b.nodeName, [...(blockingOf.get(b.nodeName) ?? []), b]);
  return plan.targetScope.targetNodeNames.map((nodeName) => {
    const replicas = (replicasOf.get(nodeName) ?? []).sort((a, b) => (a.deploymentId < b.deploymentId ? -1 : a.deploymentId > b.deploymentId ? 1 : 0));
    const slots = Array.from({ length: perNode }, (_, i) => slotState(replicas[i]));
    const blocks = blockingOf.get(nodeName) ?? [];
    const unstable = replicas.filter((r) => slotState(r) === 'not-yet-stable');
    // Not yet stable is the last thing a node waits for: said with its own clock, not the server's text,
    // and only when nothing else blocks the node (a replica still starting beside it is worth more).
    const block = (unstable.length > 0 ? blocks.find((b) => b.kind !== 'replica-not-stable') : undefined) ?? blocks[0];
    let note: string;
    if (block && !(block.kind === 'replica-not-stable' && unstable.length > 0)) note = `${block.reason}: ${block.detail}`;
    else if (unstable.length > 0) note = stabilityNote(unstable, perNode, now);
    else if (slots.every((s) => s === 'verified')) note = 'verified';
    else note = slots.filter((s) => s !== 'verified').map((s) => SLOT[s].label).join(', ');
    return { nodeName, slots, note, blocking: block !== undefined };
  });
}

export interface LiveInput {
  view?: RolloutView | undefined;
  /** The newest counters (an event may be newer than the view). */
  snapshot?: RolloutSnapshot | undefined;
  /** The final summary, in place of the status line. */
  footer?: string[] | undefined;
  width: number;
  height: number;
  color: boolean;
  /** The time the view is drawn at (the stability counters and the deadline's countdown); default now. */
  now?: number;
}

const MAX_GLYPHS = 24;

/** The slots as glyphs, or as counts (`40● 2✗`) when there are too many to draw one by one. */
function slotSpans (slots: SlotState[]): Line {
  if (slots.length === 0) return [{ text: '-', style: 'dim' }];
  if (slots.length <= MAX_GLYPHS) return slots.flatMap((s, i) => [...(i > 0 ? [{ text: ' ' }] : []), { text: SLOT[s].glyph, style: SLOT[s].style }]);
  const counts = new Map<SlotState, number>();
  for (const s of slots) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].flatMap(([s, n], i) => [...(i > 0 ? [{ text: ' ' }] : []), { text: `${n}${SLOT[s].glyph}`, style: SLOT[s].style }]);
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

const spanWidth = (line: Line): number => line.reduce((n, s) => n + [...s.text].length, 0);

const STATUS_STYLE: Record<string, Style> = {
  succeeded: 'green', 'rolled-back': 'green', failed: 'red', mismatched: 'red',
};

/**
 * The lines of one frame, each at most `width - 1` characters wide (so the terminal never wraps and
 * the next frame can be drawn over this one) — but the final state (`footer`), which nothing redraws.
 */
export function renderLive (input: LiveInput): string[] {
  const { view, width, height } = input;
  const lines: Line[] = [];
  const plan = view?.plan;
  const status = input.snapshot ?? (view ? currentStatus(view) : undefined);
  if (view && !plan) lines.push([{ text: `service ${view.serviceId}: no rollout yet` }]);
  if (plan) {
    const scope = plan.targetScope;
    lines.push([
      { text: `service ${view.serviceId}`, style: 'bold' },
      { text: ` · release ${plan.releaseId} ${shortDigest(plan.requestedDigest)} · ${plan.mode}` },
      { text: ` · ${plural(scope.targetNodeNames.length, 'node')} × ${plural(scope.replicasPerNode, 'replica')}`, style: 'dim' },
    ]);
    const now = input.now ?? Date.now();
    const rows = nodeRows(view, now);
    const lifecycle = waitingLines(view, now);
    const footerLines = input.footer?.length ?? 1;
    const room = Math.max(1, height - 4 - footerLines - lifecycle.length);
    const shown = rows.length <= room ? rows : [...rows.filter((r) => r.blocking), ...rows.filter((r) => !r.blocking)].slice(0, room - 1);
    const nameWidth = Math.min(32, Math.max(4, ...shown.map((r) => r.nodeName.length)));
    const slotWidth = Math.max(8, ...shown.map((r) => spanWidth(slotSpans(r.slots))));
    lines.push([{ text: `${'NODE'.padEnd(nameWidth)}  ${'REPLICAS'.padEnd(slotWidth)}  STATE`, style: 'dim' }]);
    for (const row of shown) {
      const slots = slotSpans(row.slots);
      lines.push([
        { text: `${clip(row.nodeName, nameWidth).padEnd(nameWidth)}  ` },
        ...slots,
        { text: ' '.repeat(slotWidth - spanWidth(slots) + 2) },
        row.blocking ? { text: row.note, style: 'yellow' } : row.note === 'verified' ? { text: row.note, style: 'green' } : { text: row.note },
      ]);
    }
    if (shown.length < rows.length) {
      const blocking = rows.filter((r) => r.blocking).length;
      const more = `… ${rows.length - shown.length} more nodes (${blocking} blocking in all): cloudly-release status -o json shows all`;
      lines.push([{ text: more, style: 'dim' }]);
    }
    lines.push([{ text: (Object.keys(SLOT) as SlotState[]).map((s) => `${SLOT[s].glyph} ${SLOT[s].label}`).join('  '), style: 'dim' }]);
    for (const line of lifecycle) lines.push([{ text: line }]);
  }
  // The final state is drawn once and never moves again: its lines may wrap, so no reason is cut short.
  const footerFrom = lines.length;
  if (input.footer) {
    for (const line of input.footer) lines.push([{ text: line }]);
  } else if (status) {
    const updated = view?.status?.updatedAt;
    lines.push([
      { text: progressLine(status), style: STATUS_STYLE[status.status] ?? 'bold' },
      ...(updated !== undefined ? [{ text: `  (updated ${isoTime(updated)})`, style: 'dim' as const }] : []),
    ]);
  }
  return lines.map((line, i) => paint(line, input.footer && i >= footerFrom ? Infinity : Math.max(10, width - 1), input.color));
}

/** Clips a line to `max` visible characters, then styles it (escapes are not counted). */
function paint (line: Line, max: number, color: boolean): string {
  let room = max;
  let out = '';
  for (const span of line) {
    if (room <= 0) break;
    const chars = [...span.text];
    const piece = chars.length > room ? `${chars.slice(0, Math.max(0, room - 1)).join('')}…` : span.text;
    room -= Math.min(chars.length, room);
    out += color && span.style ? `\x1b[${SGR[span.style]}m${piece}\x1b[0m` : piece;
  }
  return out;
}

export interface LiveStream {
  write(chunk: string): unknown;
  columns?: number;
  rows?: number;
}

/**
 * Draws `renderLive` frames in place: the cursor goes back to the first line of the previous
 * frame, every line is cleared and rewritten, whatever is left below is cleared. Log lines
 * (stderr, the same terminal) are written between `suspend` (the frame is erased) and
 * `resume` (drawn again below them). After `finish` the last frame stays and nothing moves.
 */
export class LiveView implements FollowSink {
  readonly wantsViews = true;
  private current: { view?: RolloutView, snapshot?: RolloutSnapshot } = {};
  private drawn = 0;
  private lastFrame = '';
  private finished = false;
  /** Redraws once a second: the stability counters and the deadline's countdown move without a read. */
  private ticker: NodeJS.Timeout | undefined;

  constructor (private readonly out: LiveStream, private readonly opts: { color: boolean, tickMs?: number }) {}

  update (s: RolloutSnapshot): void {
    this.current.snapshot = s;
    this.draw();
  }

  view (v: RolloutView): void {
    this.current.view = v;
    // The view's status is at least as new as any event before it.
    delete this.current.snapshot;
    this.draw();
  }

  suspend (): void {
    if (this.drawn === 0) return;
    this.out.write(`${this.up()}\x1b[J`);
    this.drawn = 0;
    this.lastFrame = '';
  }

  resume (): void {
    this.draw();
  }

  finish (summary: string, view?: RolloutView): void {
    if (view) this.current.view = view;
    this.draw(summary.split('\n'));
    this.close();
  }

  close (): void {
    this.finished = true;
    clearInterval(this.ticker);
    this.ticker = undefined;
  }

  private up (): string {
    return this.drawn > 0 ? `\r\x1b[${this.drawn}A` : '\r';
  }

  private draw (footer?: string[]): void {
    // Nothing to show yet (a log line before the first read): draw nothing rather than a placeholder.
    if (this.finished || (!this.current.view && !this.current.snapshot && !footer)) return;
    const lines = renderLive({
      ...this.current,
      footer,
      width: this.out.columns ?? 80,
      height: this.out.rows ?? 24,
      color: this.opts.color,
    });
    const frame = lines.join('\n');
    if (frame === this.lastFrame) return;
    // The final state may wrap (it is not clipped): a wrapped line runs into rows that no \x1b[2K cleared,
    // so the previous frame is erased first. Frames that move are clipped and rewritten line by line.
    const erase = footer ? '\x1b[J' : '';
    this.out.write(`${this.up()}${erase}${lines.map((l) => `\x1b[2K${l}\n`).join('')}\x1b[J`);
    this.drawn = lines.length;
    this.lastFrame = frame;
    if (!this.ticker && !footer) {
      // A frame that did not change is not written again, so ticking costs nothing while nothing moves.
      this.ticker = setInterval(() => { this.draw(); }, this.opts.tickMs ?? 1000);
      this.ticker.unref();
    }
  }
}
