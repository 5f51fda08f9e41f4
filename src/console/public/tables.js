// The service page's lists: its releases (with promote / roll back) and its rollout history.

import { formatTime, h, shortDigest, statusBadge, timeAgo } from './dom.js';

const digestCell = (digest) => h('td', { class: 'mono', title: digest, text: shortDigest(digest) });

/** A row's action button; its focus key keeps the focus on it across live redraws. */
const actionButton = (action, release, label, text, onclick) => h('button', {
  type: 'button',
  class: action === 'promote' ? undefined : 'secondary',
  'data-action': action,
  'data-focus-key': `${action}:${release.id}`,
  'aria-label': label,
  text,
  onclick,
});

const headRow = (titles) => h('thead', {}, h('tr', {}, titles.map((text) => h('th', { scope: 'col', text }))));

/**
 * One release row. `actions.promote(release)` / `actions.rollback(release)`; roll back is
 * offered for releases promoted before that are not the one deployed now (what the server accepts).
 */
/** Who signed a release, as its signature verdict names them: key ids, or keyless identities. */
const signersText = (verdict) => verdict.signers.map((s) => (s.keyId !== undefined ? `key ${s.keyId}` : `${s.subject} (${s.issuer})`)).join(', ');

/** The Signature cell (services with a trust policy): who signed, with the policy and summary digests on hover. */
function signatureCell (verdict) {
  if (!verdict) return h('td', { class: 'muted', text: 'not verified yet' });
  const title = `verified ${formatTime(verdict.verifiedAt)} under policy sha256:${verdict.policyDigest}; summary sha256:${verdict.summaryDigest}` +
    (verdict.attestations.length > 0 ? `; attestations: ${verdict.attestations.join(', ')}` : '');
  return h('td', { title }, h('span', { class: 'badge tone-success', text: 'signed' }), ` ${signersText(verdict)}`);
}

/** Beside a rollback target no rollout of which ever succeeded (the releases page's `lastSucceededAt` does not name it). */
const neverVerifiedMark = () => h('span', {
  class: 'badge tone-pending',
  'data-never-verified': 'true',
  title: 'No rollout of this release ever succeeded: it was never verified on the target nodes.',
  text: 'never verified',
});

function releaseRow (release, plan, actions, verifications, succeeded) {
  const d = release.data;
  const current = plan?.releaseId === release.id;
  const canRollBack = plan !== undefined && !current && d.acceptedAt !== undefined && d.registryRootDigest !== plan.requestedDigest;
  const neverVerified = canRollBack && succeeded[release.id] === undefined;
  const label = d.observedTags.length > 0 ? d.observedTags.join(', ') : release.id;
  return h('tr', { 'data-release-id': release.id, class: current ? 'current' : undefined },
    h('th', { scope: 'row' }, h('span', { class: 'mono', text: release.id }), current ? h('span', { class: 'badge tone-none', text: 'current' }) : null),
    h('td', { text: d.observedTags.join(', ') || '—' }),
    digestCell(d.registryRootDigest),
    h('td', {}, timeAgo(d.lastObservedAt)),
    h('td', {}, d.acceptedAt === undefined ? 'not yet' : timeAgo(d.acceptedAt)),
    h('td', { class: 'num', text: String(d.promotionCount ?? 0) }),
    verifications ? signatureCell(verifications[release.id]) : null,
    h('td', { class: 'actions' },
      actionButton('promote', release, `Promote ${label}`, 'Promote…', () => actions.promote(release)),
      canRollBack
        ? actionButton('rollback', release, `Roll back to ${label}${neverVerified ? ' (never verified)' : ''}`, 'Roll back…', () => actions.rollback(release))
        : null,
      neverVerified ? neverVerifiedMark() : null));
}

/**
 * The releases table, newest observation first, with "Load more" when there is a next page; with a
 * Signature column when some release carries a signature verdict (a service with a trust policy).
 * `succeeded`: by release id, when a rollout of it last succeeded; a rollback target not in it is marked never verified.
 */
export function releasesTable (releases, plan, actions, more, verifications = {}, succeeded = {}) {
  if (releases.length === 0) return h('p', { class: 'muted', text: 'No releases observed yet: the registry has reported no push for this service.' });
  const signed = Object.keys(verifications).length > 0 ? verifications : undefined;
  return h('div', {},
    h('table', { class: 'releases' },
      h('caption', { class: 'sr-only', text: 'Releases, newest observation first' }),
      headRow(['Release', 'Tags', 'Digest', 'Last observed', 'Accepted', 'Promotions', ...(signed ? ['Signature'] : []), 'Actions']),
      h('tbody', {}, releases.map((r) => releaseRow(r, plan, actions, signed, succeeded)))),
    more ? h('button', { type: 'button', class: 'secondary', 'data-focus-key': 'more-releases', text: 'Load more releases', onclick: more }) : null);
}

const modeText = { promotion: 'promotion', automatic: 'automatic promotion', rollback: 'rollback' };

/** Why the server issued a rollout by itself (the history entry's `trigger`), in words; undefined for one a person or CI asked for. */
export function triggerText (entry) {
  const t = entry?.trigger;
  const of = (id) => (id ? ` of ${id}` : '');
  switch (t?.kind) {
    case undefined: return undefined;
    case 'abort': return `abort${of(entry.rollbackOfRolloutId)}`;
    case 'automatic-rollback': return `automatic rollback${of(t.ofRolloutId)}${t.cause ? ` (${t.cause})` : ''}`;
    case 'deferred-promotion': return `a push that waited for ${t.afterRolloutId ?? 'the rollout before'} to settle`;
    default: return t.kind;
  }
}

const FINISHED = new Set(['succeeded', 'rolled-back', 'failed', 'mismatched']);

/**
 * The rollout's outcome from the history (servers with lifecycle control), with why it failed or
 * what ended it and when. The current rollout's entry can lag its live status by a moment (the
 * history is written after the status event): while it says in-progress, the live view decides.
 */
function outcomeCell (entry, current, status, lifecycle) {
  const stale = current && (entry.outcome === undefined || entry.outcome === 'in-progress');
  if (stale) {
    const failure = lifecycle?.failure;
    const succeeded = entry.mode === 'rollback' ? 'rolled-back' : 'succeeded';
    if (typeof lifecycle?.succeededAt === 'number') return [statusBadge(succeeded), ' ', timeAgo(lifecycle.succeededAt)];
    if (failure) return [statusBadge(failure.status), ` ${failure.reason}${failure.by === 'deadline' ? ' (progress deadline) ' : ' '}`, timeAgo(failure.at)];
    if (FINISHED.has(status)) return statusBadge(status);
  }
  if (typeof entry.outcome !== 'string') return current && status ? statusBadge(status) : h('span', { class: 'muted', text: current ? 'current' : 'earlier' });
  const why = entry.failureReason
    ? ` ${entry.failureReason}${entry.failedBy === 'deadline' ? ' (progress deadline)' : ''}`
    : entry.endedBy && entry.succeededAt === undefined ? ` by ${entry.endedBy.rolloutId}` : '';
  const at = entry.succeededAt ?? entry.failedAt ?? entry.endedAt;
  return [statusBadge(entry.outcome), why ? `${why} ` : ' ', typeof at === 'number' ? timeAgo(at) : null];
}

function historyRow (entry, plan, status, lifecycle) {
  const current = plan?.rolloutId === entry.rolloutId;
  const trigger = triggerText(entry);
  return h('tr', { 'data-rollout-id': entry.rolloutId, 'data-mode': entry.mode, 'data-outcome': entry.outcome, 'data-trigger': entry.trigger?.kind },
    h('th', { scope: 'row', class: 'num', text: String(entry.generation) }),
    h('td', {}, modeText[entry.mode] ?? entry.mode, trigger ? h('span', { class: 'muted', text: ` (${trigger})` }) : null),
    h('td', { class: 'mono', text: entry.releaseId }),
    digestCell(entry.requestedDigest),
    h('td', { class: 'outcome' }, outcomeCell(entry, current, status, lifecycle)),
    h('td', { text: `${entry.issuedBy.subject} (${entry.issuedBy.role})` }),
    h('td', { text: entry.reason }),
    h('td', {}, h('time', { datetime: new Date(entry.createdAt).toISOString(), text: formatTime(entry.createdAt) })),
    h('td', { text: entry.automationHold === 'unchanged' ? '' : `hold ${entry.automationHold}` }));
}

/** The rollout history (audit trail), newest first; `lifecycle` is the current rollout's (the live view's). */
export function historyTable (rollouts, plan, status, lifecycle) {
  if (rollouts.length === 0) return h('p', { class: 'muted', text: 'Nothing was ever promoted to this service.' });
  return h('table', { class: 'history' },
    h('caption', { class: 'sr-only', text: 'Rollout history, newest first' }),
    headRow(['Generation', 'Mode', 'Release', 'Digest', 'Outcome', 'Issued by', 'Reason', 'When', 'Automation']),
    h('tbody', {}, rollouts.map((entry) => historyRow(entry, plan, status, lifecycle))));
}
