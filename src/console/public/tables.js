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
function releaseRow (release, plan, actions) {
  const d = release.data;
  const current = plan?.releaseId === release.id;
  const canRollBack = plan !== undefined && !current && d.acceptedAt !== undefined && d.registryRootDigest !== plan.requestedDigest;
  const label = d.observedTags.length > 0 ? d.observedTags.join(', ') : release.id;
  return h('tr', { 'data-release-id': release.id, class: current ? 'current' : undefined },
    h('th', { scope: 'row' }, h('span', { class: 'mono', text: release.id }), current ? h('span', { class: 'badge tone-none', text: 'current' }) : null),
    h('td', { text: d.observedTags.join(', ') || '—' }),
    digestCell(d.registryRootDigest),
    h('td', {}, timeAgo(d.lastObservedAt)),
    h('td', {}, d.acceptedAt === undefined ? 'not yet' : timeAgo(d.acceptedAt)),
    h('td', { class: 'num', text: String(d.promotionCount ?? 0) }),
    h('td', { class: 'actions' },
      actionButton('promote', release, `Promote ${label}`, 'Promote…', () => actions.promote(release)),
      canRollBack ? actionButton('rollback', release, `Roll back to ${label}`, 'Roll back…', () => actions.rollback(release)) : null));
}

/** The releases table, newest observation first, with "Load more" when there is a next page. */
export function releasesTable (releases, plan, actions, more) {
  if (releases.length === 0) return h('p', { class: 'muted', text: 'No releases observed yet: the registry has reported no push for this service.' });
  return h('div', {},
    h('table', { class: 'releases' },
      h('caption', { class: 'sr-only', text: 'Releases, newest observation first' }),
      headRow(['Release', 'Tags', 'Digest', 'Last observed', 'Accepted', 'Promotions', 'Actions']),
      h('tbody', {}, releases.map((r) => releaseRow(r, plan, actions)))),
    more ? h('button', { type: 'button', class: 'secondary', 'data-focus-key': 'more-releases', text: 'Load more releases', onclick: more }) : null);
}

const modeText = { promotion: 'promotion', automatic: 'automatic promotion', rollback: 'rollback' };

/** The rollout's outcome when the history has one, else the live status for the current rollout. */
function outcomeOf (entry, current, status) {
  const outcome = typeof entry.outcome === 'string' ? entry.outcome : current ? status : undefined;
  if (outcome) return statusBadge(outcome);
  return h('span', { class: 'muted', text: current ? 'current' : 'earlier' });
}

function historyRow (entry, plan, status) {
  const current = plan?.rolloutId === entry.rolloutId;
  return h('tr', { 'data-rollout-id': entry.rolloutId, 'data-mode': entry.mode },
    h('th', { scope: 'row', class: 'num', text: String(entry.generation) }),
    h('td', { text: modeText[entry.mode] ?? entry.mode }),
    h('td', { class: 'mono', text: entry.releaseId }),
    digestCell(entry.requestedDigest),
    h('td', {}, outcomeOf(entry, current, status)),
    h('td', { text: `${entry.issuedBy.subject} (${entry.issuedBy.role})` }),
    h('td', { text: entry.reason }),
    h('td', {}, h('time', { datetime: new Date(entry.createdAt).toISOString(), text: formatTime(entry.createdAt) })),
    h('td', { text: entry.automationHold === 'unchanged' ? '' : `hold ${entry.automationHold}` }));
}

/** The rollout history (audit trail), newest first. */
export function historyTable (rollouts, plan, status) {
  if (rollouts.length === 0) return h('p', { class: 'muted', text: 'Nothing was ever promoted to this service.' });
  return h('table', { class: 'history' },
    h('caption', { class: 'sr-only', text: 'Rollout history, newest first' }),
    headRow(['Generation', 'Mode', 'Release', 'Digest', 'Outcome', 'Issued by', 'Reason', 'When', 'Automation']),
    h('tbody', {}, rollouts.map((entry) => historyRow(entry, plan, status))));
}
