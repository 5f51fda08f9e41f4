// Promote / roll back / abort: one confirmation dialog. Each opening of the dialog is one user
// action with its own Idempotency-Key; retrying that action after a network error resends the
// SAME key and body, so the server applies it at most once. The expected generation and rollout
// are the ones on screen when the user opened the dialog, so a conflict is real and said plainly.

import { call } from './api.js';
import { fill, h } from './dom.js';

const CONFLICTS = new Set(['rollout-generation-conflict', 'current-rollout-mismatch']);

/** A UUID v4. `crypto.randomUUID` exists only in secure contexts (https, localhost); plain http elsewhere gets the same from getRandomValues. */
export function newIdempotencyKey () {
  if (typeof window.crypto.randomUUID === 'function') return window.crypto.randomUUID();
  const b = window.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What went wrong, in plain words, and what the user can do about it: retry (same key), reload, or nothing. */
export function explainFailure (err, expected) {
  const p = err.problem ?? {};
  const ref = [err.code, err.status ? `HTTP ${err.status}` : '', p.requestId ? `request id ${p.requestId}` : ''].filter(Boolean).join(', ');
  if (err.network) {
    const text = `No answer from the server (${err.message}). The request may or may not have been applied: ` +
      'Retry sends the same Idempotency-Key, so it is applied at most once.';
    return { next: 'retry', text, ref };
  }
  if (CONFLICTS.has(err.code)) {
    const now = `generation ${p.currentGeneration ?? '?'}${p.currentRolloutId ? ` (rollout ${p.currentRolloutId})` : ''}`;
    const text = `Someone else changed the rollout: it is now ${now}, you were looking at generation ${expected.generation}. ` +
      'Nothing was changed. Reload to see the current state, then decide again.';
    return { next: 'reload', text, ref };
  }
  if (err.code === 'idempotency-request-in-progress' || err.status >= 500) {
    return { next: 'retry', text: `${p.title ?? 'Not done yet'}: ${err.message}. Retry in a moment; it sends the same Idempotency-Key.`, ref };
  }
  return { next: 'close', text: `${p.title ?? 'Refused'}: ${err.message}`, ref };
}

function expectationList (expected) {
  return [
    h('dt', { text: 'Expected generation' }), h('dd', { text: String(expected.generation) }),
    h('dt', { text: 'Expected current rollout' }), h('dd', { text: expected.rolloutId ?? 'none yet' }),
  ];
}

/**
 * The dialog's explicit acknowledgement (a checkbox the user must tick before Confirm does anything),
 * shown only when the action asks for one (`spec.acknowledge`: its words); hidden and not needed otherwise.
 */
function acknowledgement (spec, confirm) {
  const box = document.getElementById('action-ack-box');
  document.getElementById('action-ack').hidden = spec.acknowledge === undefined;
  fill(document.getElementById('action-ack-label'), spec.acknowledge ?? '');
  box.checked = false;
  box.disabled = false;
  const given = () => spec.acknowledge === undefined || box.checked;
  box.onchange = () => { if (confirm.textContent === spec.confirmLabel) confirm.disabled = !given(); };
  confirm.disabled = !given();
  return { given, lock: () => { box.disabled = true; } };
}

/**
 * Opens the dialog for one action. `spec`: { title, summary, confirmLabel, path, expected,
 * body(reason), onDone(answer), onReload(), acknowledge? (the words of a checkbox that must be ticked first) }.
 */
export function openActionDialog (spec) {
  const dialog = document.getElementById('action-dialog');
  if (dialog.open) return; // a double click on the button that opens it: one action, one key
  const form = dialog.querySelector('form');
  const confirm = document.getElementById('action-confirm');
  const reason = document.getElementById('action-reason');
  const failure = document.getElementById('action-error');
  const key = newIdempotencyKey();
  let sentBody;
  let inFlight = false;

  fill(document.getElementById('action-title'), spec.title);
  fill(document.getElementById('action-summary'), spec.summary);
  fill(document.getElementById('action-expect'), expectationList(spec.expected));
  reason.value = '';
  reason.readOnly = false;
  failure.hidden = true;
  confirm.hidden = false;
  confirm.textContent = spec.confirmLabel;
  const ack = acknowledgement(spec, confirm);
  dialog.dataset.idempotencyKey = key;
  dialog.dataset.state = 'open';

  const showFailure = (err) => {
    const { next, text, ref } = explainFailure(err, spec.expected);
    dialog.dataset.state = `failed-${next}`;
    const reload = h('button', { type: 'button', class: 'secondary', text: 'Reload', onclick: () => { dialog.close(); spec.onReload(); } });
    fill(failure, h('p', { text }), h('p', { class: 'ref' }, h('code', { text: ref })), next === 'reload' ? reload : null);
    failure.hidden = false;
    confirm.hidden = next !== 'retry';
    confirm.disabled = next !== 'retry';
    confirm.textContent = 'Retry (same Idempotency-Key)';
  };

  form.onsubmit = async (event) => {
    event.preventDefault();
    if (inFlight || confirm.disabled || !ack.given()) return; // a double click sends one request
    inFlight = true;
    confirm.disabled = true;
    reason.readOnly = true; // a retry must send the same body as the first attempt
    ack.lock();
    dialog.dataset.state = 'sending';
    sentBody ??= spec.body(reason.value.trim() === '' ? undefined : reason.value.trim());
    try {
      const answer = await call(spec.path, { method: 'POST', body: sentBody, idempotencyKey: key });
      dialog.dataset.state = 'done';
      dialog.close();
      spec.onDone(answer);
    } catch (err) {
      if (err.status === 401) dialog.close();
      else showFailure(err);
    } finally {
      inFlight = false;
    }
  };
  document.getElementById('action-cancel').onclick = () => { dialog.close(); };
  dialog.showModal();
  reason.focus();
}
