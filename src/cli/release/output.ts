import type {
  AutomationHold, BlockingReason, DeadlineExceeded, IImageRelease, IReleaseSignatureVerdict, RolloutHistoryEntry, RolloutSnapshot, RolloutView, ServiceSummary,
} from './api.js';

/** Where a command writes: its result, and log lines (always stderr). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean, columns?: number, rows?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean, columns?: number, rows?: number };
}

/**
 * How the one document of `-o json` (one line) or `-o yaml` is written. The yaml package is
 * loaded only when YAML is asked for: every other run of the CLI starts without it.
 */
export async function documentRenderer (format: 'json' | 'yaml'): Promise<(doc: Record<string, unknown>) => string> {
  if (format === 'json') return (doc) => JSON.stringify(doc);
  const { stringify } = await import('yaml');
  return (doc) => stringify(doc, { lineWidth: 0 }).trimEnd();
}

export const shortDigest = (digest: string): string => {
  const [algo, hex] = digest.split(':');
  return hex === undefined ? digest.slice(0, 19) : `${algo}:${hex.slice(0, 12)}`;
};

/** `2026-05-01T12:00:00Z` (seconds are enough for a terminal); '-' for what is not a time. */
export const isoTime = (ms: unknown): string =>
  (typeof ms !== 'number' || !Number.isFinite(ms) ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));

/** A duration for people: `42s`, `9m 52s`, `2h 5m`. */
export function durationText (ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m}m` : `${m}m ${s % 60}s`;
  return m % 60 === 0 ? `${m / 60}h` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** `progress deadline exceeded (no progress for 600 s since 2026-…Z)` */
export const deadlineText = (d: DeadlineExceeded): string =>
  `progress deadline exceeded (no progress for ${d.deadlineSeconds} s since ${isoTime(d.lastProgressAt)})`;

export const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`);

/** Left-aligned columns, two spaces apart. */
export function table (header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A field of a tolerant read: the text of a string or number, else '-'. */
const text = (value: unknown): string => (typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : '-');

/** A release as `list -o json` shows it: flat, with the fields CI scripts pick. */
/** Who signed, in words: `ci` (a key id), or the keyless identity. */
export const signersText = (verdict: IReleaseSignatureVerdict): string =>
  verdict.signers.map((s) => ('keyId' in s ? `key ${s.keyId}` : `${s.subject} (${s.issuer})`)).join(', ');

export function releaseRow (release: IImageRelease, verdict?: IReleaseSignatureVerdict) {
  const d = release.data;
  return {
    id: release.id,
    tags: d.observedTags,
    digest: d.registryRootDigest,
    digestPinnedImageReference: d.digestPinnedImageReference,
    manifestMediaType: d.manifestMediaType,
    firstObservedAt: d.firstObservedAt,
    lastObservedAt: d.lastObservedAt,
    observationCount: d.observationCount,
    accepted: d.acceptedAt !== undefined,
    ...(d.acceptedAt !== undefined ? { acceptedAt: d.acceptedAt } : {}),
    ...(d.lastPromotedAt !== undefined ? { lastPromotedAt: d.lastPromotedAt } : {}),
    promotionCount: d.promotionCount ?? 0,
    ...(verdict ? { signature: verdict } : {}),
  };
}

/**
 * The releases; with a SIGNATURE column when the page carries signature verdicts (a service with a trust policy).
 * `wide` (-o wide): every tag, the full digest-pinned reference, the last observation and the promotions.
 */
export function releaseTable (releases: IImageRelease[], verdicts: Record<string, IReleaseSignatureVerdict> = {}, wide = false): string {
  const signed = Object.keys(verdicts).length > 0;
  return table(
    ['RELEASE', 'TAGS', 'DIGEST', 'FIRST OBSERVED', 'ACCEPTED', ...(signed ? ['SIGNATURE'] : []),
      ...(wide ? ['LAST OBSERVED', 'OBSERVATIONS', 'PROMOTIONS', 'LAST PROMOTED', 'IMAGE'] : [])],
    releases.map((r) => {
      const verdict = verdicts[r.id];
      const d = r.data;
      return [
        r.id,
        wide ? d.observedTags.join(',') || '-' : clip(d.observedTags.join(',') || '-', 40),
        shortDigest(d.registryRootDigest),
        isoTime(d.firstObservedAt),
        d.acceptedAt === undefined ? 'no' : `yes (${isoTime(d.acceptedAt)})`,
        ...(signed ? [verdict ? clip(`verified: ${signersText(verdict)}`, 60) : '-'] : []),
        ...(wide
          ? [isoTime(d.lastObservedAt), String(d.observationCount), String(d.promotionCount ?? 0), isoTime(d.lastPromotedAt), d.digestPinnedImageReference]
          : []),
      ];
    })
  );
}

/** An entry's outcome in words: the outcome, and why it failed or what ended it. */
export function outcomeText (e: RolloutHistoryEntry): string {
  const outcome = text(e.outcome);
  if ((outcome === 'failed' || outcome === 'mismatched') && typeof e.failureReason === 'string') {
    return `${outcome}: ${e.failureReason}${e.failedBy === 'deadline' ? ' (progress deadline exceeded)' : ''}`;
  }
  // Ended without an outcome of its own: superseded, aborted or rolled back by the next rollout.
  if (e.endedBy && e.succeededAt === undefined && e.failedAt === undefined) return `${outcome} by ${e.endedBy.rolloutId}`;
  return outcome;
}

/** When the outcome was reached: succeeded, else failed, else replaced by the next rollout. */
const outcomeAt = (e: RolloutHistoryEntry): unknown => e.succeededAt ?? e.failedAt ?? e.endedAt;

/** Why the server issued a rollout by itself; '-' for one a caller asked for. */
export function triggerText (e: RolloutHistoryEntry): string {
  const t = e.trigger;
  if (!t) return '-';
  switch (t.kind) {
    case 'abort': return 'abort';
    case 'automatic-rollback': return `automatic rollback${t.cause ? ` (${t.cause})` : ''}`;
    case 'deferred-promotion': return `push queued behind ${t.afterRolloutId ?? 'a rollout'}`;
    default: return text(t.kind);
  }
}

/** Where a rollout went, for -o wide: its clusters and required replicas. */
const targetsText = (e: RolloutHistoryEntry): string => {
  const scope = e.targetScope as Partial<RolloutHistoryEntry['targetScope']> | undefined;
  if (!scope) return '-';
  return `${(scope.targetClusterIds ?? []).join(',') || '-'} (${text(scope.requiredReplicaCount)} replicas)`;
};

/**
 * The rollout history as a table. Tolerant: a missing field shows '-', fields it does not know
 * are left to `-o json|yaml`; OUTCOME, OUTCOME AT and TRIGGER appear once the server reports outcomes.
 * `wide` (-o wide): the release it replaced, the targets and the whole reason.
 */
export function historyTable (entries: RolloutHistoryEntry[], wide = false): string {
  const lifecycle = entries.some((e) => typeof e.outcome === 'string');
  return table(
    ['GEN', 'ROLLOUT', 'MODE', ...(lifecycle ? ['TRIGGER'] : []), 'RELEASE', 'DIGEST', 'CREATED',
      ...(lifecycle ? ['OUTCOME', 'OUTCOME AT'] : []), 'BY', ...(wide ? ['PREVIOUS RELEASE', 'TARGETS'] : []), 'REASON'],
    entries.map((e) => [
      text(e.generation),
      text(e.rolloutId),
      e.mode === 'rollback' && typeof e.rollbackOfRolloutId === 'string' ? `rollback of ${e.rollbackOfRolloutId}` : text(e.mode),
      ...(lifecycle ? [triggerText(e)] : []),
      text(e.releaseId),
      typeof e.requestedDigest === 'string' ? shortDigest(e.requestedDigest) : '-',
      isoTime(e.createdAt),
      ...(lifecycle ? [outcomeText(e), isoTime(outcomeAt(e))] : []),
      text((e.issuedBy as { subject?: unknown } | undefined)?.subject),
      ...(wide ? [text(e.previous?.releaseId), targetsText(e)] : []),
      wide ? text(e.reason) : clip(text(e.reason), 60),
    ])
  );
}

/** The -o wide columns of a service: its rollout's digest and every counter. */
const wideServiceCells = (r: ServiceSummary['rollout'], counted: (n: unknown) => string): string[] =>
  [typeof r?.requestedDigest === 'string' ? shortDigest(r.requestedDigest) : '-', counted(r?.observedReplicaCount),
    counted(r?.healthyReplicaCount), r ? text(r.failedReplicaCount) : '-'];

/** Services and their rollout state. Tolerant like historyTable; `wide` adds the digest and every counter. */
export function servicesTable (services: ServiceSummary[], wide = false): string {
  return table(
    ['SERVICE', 'NAME', 'GEN', 'ROLLOUT', 'MODE', 'STATUS', 'VERIFIED', 'RELEASE', 'UPDATED', 'HOLD',
      ...(wide ? ['DIGEST', 'OBSERVED', 'HEALTHY', 'FAILED'] : [])],
    services.map((s) => {
      const r = s.rollout;
      const counted = (n: unknown): string => (r ? `${text(n)}/${text(r.requiredReplicaCount)}` : '-');
      return [
        text(s.id),
        wide ? text(s.name) : clip(text(s.name), 40),
        text(r?.rolloutGeneration),
        text(r?.rolloutId),
        text(r?.mode),
        r ? `${text(r.status)}${r.mismatchReason ? ` (${r.mismatchReason})` : ''}` : 'no rollout',
        counted(r?.verifiedReplicaCount),
        text(r?.releaseId),
        isoTime(r?.updatedAt),
        s.automationHold ? `on hold since ${isoTime(s.automationHold.since)}` : '-',
        ...(wide ? wideServiceCells(r, counted) : []),
      ];
    })
  );
}

/** `observed 2/6, healthy 2/6, verified 0/6` (+ failed, + the mismatch reason). */
export function countsText (s: RolloutSnapshot): string {
  const r = s.requiredReplicaCount;
  return `observed ${s.observedReplicaCount}/${r}, healthy ${s.healthyReplicaCount}/${r}, verified ${s.verifiedReplicaCount}/${r}` +
    (s.failedReplicaCount > 0 ? `, failed ${s.failedReplicaCount}` : '') +
    (s.mismatchReason ? ` (${s.mismatchReason})` : '');
}

export const progressLine = (s: RolloutSnapshot): string =>
  `rollout ${s.rolloutId} (generation ${s.rolloutGeneration}) ${s.status}: ${countsText(s)}`;

export const blockingLines = (blocking: BlockingReason[], max = 20): string[] => {
  const lines = blocking.slice(0, max).map((b) => `  ${b.reason}: ${b.detail}`);
  if (blocking.length > max) lines.push(`  … and ${blocking.length - max} more (cloudly-release status -o json shows all)`);
  return lines;
};

/** A wait's result for humans: its line, then what blocks the rollout. */
export const waitText = (r: { message: string, blocking: BlockingReason[] }): string =>
  [r.message, ...(r.blocking.length > 0 ? ['blocking', ...blockingLines(r.blocking)] : [])].join('\n');

/** The status of the view's own rollout, if the view has one. */
export const currentStatus = (view: RolloutView): RolloutView['status'] =>
  (view.plan && view.status?.rolloutId === view.plan.rolloutId ? view.status : undefined);

/** The deadline while the rollout is in progress: `fails at … unless it progresses (in 9m 52s)`. */
export function deadlineLine (view: RolloutView, now: number): string | undefined {
  const l = view.lifecycle;
  if (l?.deadlineAt === undefined) return undefined;
  const left = l.deadlineAt - now;
  const seconds = l.policy?.progressDeadlineSeconds;
  return `fails at ${isoTime(l.deadlineAt)} unless it progresses (${left > 0 ? `in ${durationText(left)}` : 'due now'}` +
    `${seconds === undefined ? '' : `; ${seconds} s allowed without progress`})`;
}

/**
 * What the current rollout still waits for (servers with lifecycle control): the deadline while
 * it is in progress, a push queued behind it, what its automatic rollback or queued push came to.
 * The live view shows these; the milestones are its footer's to say.
 */
export function waitingLines (view: RolloutView, now: number): string[] {
  const l = view.lifecycle;
  if (!l || !view.plan) return [];
  const out: string[] = [];
  const deadline = deadlineLine(view, now);
  if (deadline) out.push(`deadline  ${deadline}`);
  if (l.automaticRollback) out.push(`automatic rollback ${l.automaticRollback.outcome} (${isoTime(l.automaticRollback.at)})`);
  if (l.queuedPromotion) {
    out.push(`queued    release ${l.queuedPromotion.releaseId} (tag ${l.queuedPromotion.tag}) promotes automatically once this rollout settles`);
  }
  if (l.deferredPromotion) out.push(`queued push ${l.deferredPromotion.outcome} (${isoTime(l.deferredPromotion.at)})`);
  return out;
}

/**
 * The current rollout's lifecycle for `status`, one `label     value` line each: success (sticky),
 * failure and whether the deadline decided it, what it waits for (waitingLines), the settings in force.
 */
export function lifecycleLines (view: RolloutView, now: number): string[] {
  const l = view.lifecycle;
  if (!l || !view.plan) return [];
  const out: string[] = [];
  if (l.succeededAt !== undefined) out.push(`succeeded ${isoTime(l.succeededAt)}${view.plan.mode === 'rollback' ? ' (rolled back)' : ''}`);
  if (l.failure) {
    const how = l.failure.by === 'deadline' ? 'the progress deadline' : `${l.failure.status}, by a report`;
    out.push(`failed    ${isoTime(l.failure.at)}: ${l.failure.reason} (${how})`);
  }
  if (l.deadlineExceeded) out.push(`deadline  ${deadlineText(l.deadlineExceeded)}: failed at ${isoTime(l.deadlineExceeded.at)} (${l.deadlineExceeded.reason})`);
  out.push(...waitingLines(view, now));
  const p = l.policy;
  if (p) {
    const auto = p.autoRollback?.enabled === true ? `on (${(p.autoRollback.triggers ?? []).join(', ')})` : 'off';
    out.push(`policy    progress deadline ${text(p.progressDeadlineSeconds)} s, stability window ${text(p.stabilityWindowSeconds)} s, ` +
      `automatic rollback ${auto}`);
  }
  return out;
}

/** The current rollout, as `status` and `describe` show it: plan, targets, status, reporters, lifecycle. */
export function rolloutLines (view: RolloutView): string[] {
  const plan = view.plan;
  if (!plan) return ['rollout   none yet (no release was ever promoted)'];
  const scope = plan.targetScope;
  const out: string[] = [
    `rollout   ${plan.rolloutId} (generation ${plan.rolloutGeneration}, ${plan.mode}${plan.rollbackOfRolloutId ? ` of ${plan.rollbackOfRolloutId}` : ''}) ` +
      `issued ${isoTime(plan.createdAt)}`,
    `release   ${plan.releaseId}  ${plan.digestPinnedImageReference}`,
    `targets   clusters ${scope.targetClusterIds.join(', ') || '-'}; nodes ${clip(scope.targetNodeNames.join(', ') || '-', 120)}; ` +
      `${scope.replicasPerNode} per node, ${scope.requiredReplicaCount} required`,
  ];
  const status = currentStatus(view);
  out.push(status ? `status    ${status.status}: ${countsText(status)} (updated ${isoTime(status.updatedAt)})` : 'status    no status for this rollout yet');
  if (view.reporters.length > 0) {
    out.push('reporters');
    for (const r of view.reporters) {
      out.push(`  ${r.reporterId}  nodes ${clip(r.nodeNames.join(','), 60)}  report #${r.lastSequence} at ${isoTime(r.lastReportAt)}  ` +
        `observed ${r.observedReplicaCount}/${r.requiredReplicaCount}, healthy ${r.healthyReplicaCount}, verified ${r.verifiedReplicaCount}` +
        (r.failedReplicaCount > 0 ? `, failed ${r.failedReplicaCount}` : '') + (r.mismatchReason ? ` (${r.mismatchReason})` : ''));
    }
  }
  out.push(...lifecycleLines(view, Date.now()));
  return out;
}

/** `automatic promotion on hold since … (rollback ro_… by …)` */
export const holdText = (hold: AutomationHold): string =>
  `automatic promotion on hold since ${isoTime(hold.since)} (rollback ${hold.rolloutId} by ${hold.by})`;

export function statusText (view: RolloutView): string {
  const out: string[] = [`service   ${view.serviceId}`, ...rolloutLines(view)];
  if (!view.plan) return out.join('\n');
  if (view.blocking.length > 0) out.push('blocking', ...blockingLines(view.blocking));
  if (view.automationHold) out.push(holdText(view.automationHold));
  return out.join('\n');
}

/**
 * Where a followed rollout is shown while it moves (`wait`, `--wait`, `status --watch`): the
 * plain progress lines below, or the live view on a terminal (live.ts). The final state is
 * not progress: `finish` shows it, once.
 */
export interface FollowSink {
  /** True when the sink draws replicas: the follower then re-reads the rollout view on each change. */
  readonly wantsViews: boolean;
  /** A new, non-terminal state of the followed rollout. */
  update(s: RolloutSnapshot): void;
  /** A fresh rollout view (only asked for with `wantsViews`). */
  view(v: RolloutView): void;
  /** A log line is about to go to stderr: end or erase what is drawn. */
  suspend(): void;
  /** The log line was written: draw again. */
  resume(): void;
  /** The final state, in place of the progress. */
  finish(summary: string, view?: RolloutView): void;
  /** Nothing more will be drawn (an error ends the command): leave what is shown, end any open line. */
  close(): void;
}

/**
 * The progress of a followed rollout as lines: on a terminal one line rewritten in place (`\r`),
 * otherwise (CI logs) one plain line per change. Nothing is written when nothing changed.
 */
export class Progress implements FollowSink {
  readonly wantsViews = false;
  private last = '';
  private open = false;
  private readonly rewrite: boolean;

  constructor (private readonly out: NodeJS.WritableStream & { isTTY?: boolean }, opts: { rewrite?: boolean } = {}) {
    this.rewrite = opts.rewrite ?? out.isTTY === true;
  }

  update (s: RolloutSnapshot): void {
    const line = progressLine(s);
    if (line === this.last) return;
    this.last = line;
    if (this.rewrite) {
      this.out.write(`\r\x1b[2K${line}`);
      this.open = true;
    } else {
      this.out.write(`${line}\n`);
    }
  }

  view (): void {}

  /** Ends the rewritten line (before a log line or the result). */
  break (): void {
    if (!this.open) return;
    this.out.write('\n');
    this.open = false;
  }

  suspend (): void {
    this.break();
  }

  resume (): void {}

  close (): void {
    this.break();
  }

  finish (summary: string): void {
    if (this.open) this.out.write('\r\x1b[2K');
    this.open = false;
    this.out.write(`${summary}\n`);
  }
}
