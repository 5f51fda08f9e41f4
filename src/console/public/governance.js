// A service page's governance (docs/governance.md): its promotion requests with Approve, and the
// upstream stages of its pipeline. Kept apart from service.js, which only places these sections
// and tells them when the service or its rollout changed.

import { call } from './api.js';
import { announce, fill, fillIfChanged, formatDuration, formatTime, h, timeUntil } from './dom.js';

const enc = encodeURIComponent;

/** While a request waits for approvals it may be approved elsewhere: re-read the list this often (tab visible). */
const PENDING_REFRESH_MS = 15_000;

const getPromotionRequests = (id) => call(`/v1/services/${enc(id)}/promotion-requests`);
const approvePromotionRequest = (id, requestId) => call(`/v1/services/${enc(id)}/promotion-requests/${enc(requestId)}/approve`, { method: 'POST' });

/** Requests an approval can still move on: pending, or approved with the rollout not issued yet (the next approval issues it). */
const OPEN = new Set(['pending', 'approved']);
const STATE_TONE = { pending: 'pending', approved: 'progress', issued: 'success', void: 'none' };

function section (id, title, ...children) {
  return h('section', { 'aria-labelledby': `${id}-title`, id },
    h('h2', { id: `${id}-title`, text: title }), ...children);
}

function stateCell (r) {
  const detail = r.state === 'void' ? ` (${r.voidReason ?? 'void'})` : r.state === 'issued' && r.rolloutId ? ` ${r.rolloutId}` : '';
  return h('td', {}, h('span', { class: `badge tone-${STATE_TONE[r.state] ?? 'none'}`, 'data-state': r.state, text: r.state }),
    detail ? h('span', { class: 'mono', text: detail }) : null);
}

function requestRow (r, onApprove) {
  const approvers = r.approvals.map((a) => `${a.subject} (${a.role}) ${formatTime(a.at)}`).join('; ');
  return h('tr', { 'data-request-id': r.requestId, 'data-state': r.state },
    h('th', { scope: 'row', class: 'mono', text: r.requestId }),
    h('td', { class: 'mono', text: r.releaseId }),
    stateCell(r),
    h('td', {}, `${r.requester.subject} (${r.requester.role})`, r.reason ? h('div', { class: 'muted', text: r.reason }) : null),
    h('td', { class: 'num approvals', title: approvers || 'no approvals yet', text: `${r.approvals.length} / ${r.required}` }),
    h('td', {}, r.state === 'pending' ? timeUntil(r.expiresAt) : h('span', { title: formatTime(r.expiresAt), text: formatTime(r.expiresAt) })),
    h('td', { class: 'actions' }, OPEN.has(r.state)
      ? h('button', {
        type: 'button',
        'data-action': 'approve',
        'data-focus-key': `approve:${r.requestId}`,
        'aria-label': `Approve request ${r.requestId} (${r.releaseId})`,
        text: 'Approve',
        onclick: (event) => { onApprove(r, event.currentTarget); },
      })
      : null));
}

function requestsTable (requests, onApprove) {
  if (requests.length === 0) {
    return h('p', { class: 'muted', text: 'No promotion requests: promotions of this service need no approvals, or none was asked for.' });
  }
  return h('table', { class: 'requests' },
    h('thead', {}, h('tr', {}, ['Request', 'Release', 'State', 'Requested by', 'Approvals', 'Expires', ''].map((text) => h('th', { scope: 'col', text })))),
    h('tbody', {}, requests.map((r) => requestRow(r, onApprove))));
}

/** A refusal as the server says it: title, detail, and the code, reason and status to look it up by. */
function refusalText (err) {
  const p = err.problem ?? {};
  const ref = [err.code, p.reason, err.status ? `HTTP ${err.status}` : ''].filter(Boolean).join(', ');
  return `${p.title ?? 'Refused'}: ${err.message} (${ref})`;
}

function stageItem (stage, names) {
  const name = names[stage.serviceId];
  const soak = stage.soakSeconds ? `soak ${formatDuration(stage.soakSeconds * 1000)} after success` : 'no soak: the success suffices';
  return h('li', { 'data-stage': stage.serviceId },
    h('a', { href: `#/services/${enc(stage.serviceId)}` }, name ? `${name} ` : '', h('span', { class: 'mono', text: stage.serviceId })),
    ` — ${soak}`);
}

/**
 * The governance sections of one service page. `onIssued(answer)`: an approval issued the rollout
 * (the answer carries `service`, as a promotion's does). Returns the sections to place, and what the
 * page calls: `reload()` (the requests), `requested(answer)` (a promotion answered 202 approval-required),
 * `showPipeline(service)`, `dispose()`.
 */
export function serviceGovernance (serviceId, { onIssued }) {
  const el = {
    note: h('p', { id: 'requests-note', class: 'note', role: 'status', hidden: true }),
    error: h('div', { id: 'requests-error', class: 'error', role: 'alert', hidden: true }),
    list: h('div', { id: 'requests-list' }),
    stages: h('div', { id: 'pipeline-stages' }),
  };
  const requestsSection = section('requests', 'Promotion requests', el.note, el.error, el.list);
  const pipelineSection = section('pipeline', 'Pipeline: upstream stages', el.stages);
  pipelineSection.hidden = true;
  let requests = [];
  let disposed = false;

  const draw = () => fillIfChanged(el.list, JSON.stringify(requests), () => requestsTable(requests, approve));

  async function reload () {
    try {
      requests = (await getPromotionRequests(serviceId)).promotionRequests;
      if (!disposed) draw();
    } catch (err) {
      if (err.status === 401 || disposed) return;
      const text = `Could not read the promotion requests: ${err.message} (${err.code})`;
      fillIfChanged(el.list, text, () => h('p', { class: 'error', text })); // through the same cache, so the next good read redraws
    }
  }

  let approving = false;
  async function approve (request, button) {
    if (approving) return; // a double click approves once
    approving = true;
    button.disabled = true;
    el.error.hidden = true;
    try {
      const answer = await approvePromotionRequest(serviceId, request.requestId);
      const r = answer.promotionRequest;
      const text = r.state === 'issued'
        ? `Approved ${r.requestId}: the quorum is reached, rollout ${r.rolloutId ?? ''} issued.`
        : `Approved ${r.requestId}: ${r.approvals.length} of ${r.required} approvals.`;
      fill(el.note, text);
      el.note.hidden = false;
      if (r.state === 'issued' && answer.service) onIssued(answer);
      else announce(text);
    } catch (err) {
      if (err.status !== 401) {
        fill(el.error, refusalText(err));
        el.error.hidden = false;
      }
    } finally {
      approving = false;
      button.disabled = false;
      await reload();
    }
  }

  /** The console's own promotion answered 202 approval-required: a request was made, nothing issued. */
  function requested (answer) {
    const r = answer.promotionRequest ?? {};
    const text = `Promotion request ${r.requestId ?? ''} made: ${r.required ?? '?'} approval${r.required === 1 ? '' : 's'} from other principals ` +
      `needed before rollout of ${r.releaseId ?? 'the release'} is issued${typeof r.expiresAt === 'number' ? ` (by ${formatTime(r.expiresAt)})` : ''}.`;
    fill(el.note, text);
    el.note.hidden = false;
    el.error.hidden = true;
    announce(text);
    void reload();
  }

  /** The service's pipeline, when it has one: each upstream stage linked to its page, with its soak time (names read once, best effort). */
  async function showPipeline (service) {
    const stages = service.data.promotionPolicy?.pipeline?.requires ?? [];
    pipelineSection.hidden = stages.length === 0;
    if (stages.length === 0) return;
    const names = {};
    const render = () => h('div', {},
      h('p', { class: 'muted', text: 'A release is promoted here only after it succeeded, and soaked, in each of these services:' }),
      h('ol', { class: 'stages' }, stages.map((s) => stageItem(s, names))));
    fill(el.stages, render());
    await Promise.all(stages.map(async (s) => {
      try {
        names[s.serviceId] = (await call(`/v1/services/${enc(s.serviceId)}`)).service.data.name;
      } catch {
        // The id alone is shown (a stage the token cannot read, or one deleted since).
      }
    }));
    if (!disposed) fill(el.stages, render());
  }

  const poll = window.setInterval(() => {
    if (!document.hidden && requests.some((r) => OPEN.has(r.state))) void reload();
  }, PENDING_REFRESH_MS);

  return {
    sections: [requestsSection, pipelineSection],
    reload,
    requested,
    showPipeline,
    dispose: () => { disposed = true; window.clearInterval(poll); },
  };
}
