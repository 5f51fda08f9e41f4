import type { BlockingReason, IImageRelease, RolloutSnapshot, RolloutView } from './api.js';

/** Where a command writes: its result, and log lines (always stderr). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export const shortDigest = (digest: string): string => {
  const [algo, hex] = digest.split(':');
  return hex === undefined ? digest.slice(0, 19) : `${algo}:${hex.slice(0, 12)}`;
};

/** `2026-05-01T12:00:00Z` (seconds are enough for a terminal). */
export const isoTime = (ms: number | undefined): string => (ms === undefined ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));

const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** Left-aligned columns, two spaces apart. */
export function table (header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A release as `list --json` shows it: flat, with the fields CI scripts pick. */
export function releaseRow (release: IImageRelease) {
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
  };
}

export function releaseTable (releases: IImageRelease[]): string {
  return table(
    ['RELEASE', 'TAGS', 'DIGEST', 'FIRST OBSERVED', 'ACCEPTED'],
    releases.map((r) => [
      r.id,
      clip(r.data.observedTags.join(',') || '-', 40),
      shortDigest(r.data.registryRootDigest),
      isoTime(r.data.firstObservedAt),
      r.data.acceptedAt === undefined ? 'no' : `yes (${isoTime(r.data.acceptedAt)})`,
    ])
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
  if (blocking.length > max) lines.push(`  … and ${blocking.length - max} more (cloudly-release status --json shows all)`);
  return lines;
};

export function statusText (view: RolloutView): string {
  const out: string[] = [`service   ${view.serviceId}`];
  const plan = view.plan;
  if (!plan) {
    out.push('rollout   none yet (no release was ever promoted)');
    return out.join('\n');
  }
  const scope = plan.targetScope;
  out.push(
    `rollout   ${plan.rolloutId} (generation ${plan.rolloutGeneration}, ${plan.mode}${plan.rollbackOfRolloutId ? ` of ${plan.rollbackOfRolloutId}` : ''}) issued ${isoTime(plan.createdAt)}`,
    `release   ${plan.releaseId}  ${plan.digestPinnedImageReference}`,
    `targets   clusters ${scope.targetClusterIds.join(', ') || '-'}; nodes ${clip(scope.targetNodeNames.join(', ') || '-', 120)}; ` +
      `${scope.replicasPerNode} per node, ${scope.requiredReplicaCount} required`
  );
  const status = view.status;
  if (status && status.rolloutId === plan.rolloutId) {
    out.push(`status    ${status.status}: ${countsText(status)} (updated ${isoTime(status.updatedAt)})`);
  } else {
    out.push('status    no status for this rollout yet');
  }
  if (view.reporters.length > 0) {
    out.push('reporters');
    for (const r of view.reporters) {
      out.push(`  ${r.reporterId}  nodes ${clip(r.nodeNames.join(','), 60)}  report #${r.lastSequence} at ${isoTime(r.lastReportAt)}  ` +
        `observed ${r.observedReplicaCount}/${r.requiredReplicaCount}, healthy ${r.healthyReplicaCount}, verified ${r.verifiedReplicaCount}` +
        (r.failedReplicaCount > 0 ? `, failed ${r.failedReplicaCount}` : '') + (r.mismatchReason ? ` (${r.mismatchReason})` : ''));
    }
  }
  if (view.blocking.length > 0) out.push('blocking', ...blockingLines(view.blocking));
  if (view.automationHold) {
    out.push(`automatic promotion on hold since ${isoTime(view.automationHold.since)} (rollback ${view.automationHold.rolloutId} by ${view.automationHold.by})`);
  }
  return out.join('\n');
}

/**
 * The live progress line of `wait`: on a terminal one line rewritten in place (`\r`),
 * otherwise (CI logs) one plain line per change. Nothing is written when nothing changed.
 */
export class Progress {
  private last = '';
  private open = false;

  constructor (private readonly out: NodeJS.WritableStream & { isTTY?: boolean }) {}

  private get tty (): boolean { return this.out.isTTY === true; }

  update (s: RolloutSnapshot): void {
    const line = progressLine(s);
    if (line === this.last) return;
    this.last = line;
    if (this.tty) {
      this.out.write(`\r\x1b[2K${line}`);
      this.open = true;
    } else {
      this.out.write(`${line}\n`);
    }
  }

  /** Ends the rewritten line (before a log line or the result). */
  break (): void {
    if (!this.open) return;
    this.out.write('\n');
    this.open = false;
  }
}
