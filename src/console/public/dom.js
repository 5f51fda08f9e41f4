// Small DOM and formatting helpers. Text always goes in as text nodes (never innerHTML),
// so nothing the API returns can become markup.

/**
 * Creates an element. `attrs`: `class`, `text`, `on<event>` handlers, boolean attributes
 * (true/false), everything else as an attribute. Children: nodes, strings, or nothing.
 */
export function h (tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = value;
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append (el, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
  }
}

/**
 * Replaces an element's children. Focus survives a redraw: when the focused element had a
 * `data-focus-key`, the new element with the same key gets the focus back (live updates must
 * not throw a keyboard user back to the top of the page).
 */
export function fill (el, ...children) {
  const active = document.activeElement;
  const key = active instanceof window.HTMLElement && el.contains(active) ? active.dataset.focusKey : undefined;
  el.replaceChildren();
  append(el, children);
  if (key) el.querySelector(`[data-focus-key="${window.CSS.escape(key)}"]`)?.focus();
  return el;
}

const drawn = new WeakMap();

/** Redraws `el` only when `signature` (what it shows, as a string) changed since its last draw. */
export function fillIfChanged (el, signature, render) {
  if (drawn.get(el) === signature) return;
  drawn.set(el, signature);
  fill(el, render());
}

/** Tells screen readers (and the test) what just changed, through the page's polite live region. */
export function announce (message) {
  const region = document.getElementById('status');
  if (!region) return;
  region.textContent = '';
  // A fresh text node after clearing: repeated identical messages are announced again.
  window.setTimeout(() => { region.textContent = message; }, 30);
}

/** `sha256:0123456789ab…` → `0123456789ab` (the full digest stays in the title). */
export const shortDigest = (digest) => (typeof digest === 'string' ? digest.replace(/^sha256:/, '').slice(0, 12) : '');

/** A duration in words: `4 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration (ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return s % 60 === 0 ? `${min} min` : `${min} min ${s % 60} s`;
  const hours = Math.floor(min / 60);
  return min % 60 === 0 ? `${hours} h` : `${hours} h ${min % 60} min`;
}

/** `5 s ago` from a millisecond timestamp. */
export const formatAge = (at, now = Date.now()) => (typeof at === 'number' ? `${formatDuration(now - at)} ago` : 'never');

/** An absolute time for titles and tables, in the browser's locale. */
export const formatTime = (at) => (typeof at === 'number' ? new Date(at).toLocaleString() : '—');

/** A `<time>` element showing the age, with the absolute time on hover; `data-at` lets the page refresh it. */
export function timeAgo (at) {
  if (typeof at !== 'number') return h('span', { text: '—' });
  return h('time', { datetime: new Date(at).toISOString(), title: formatTime(at), 'data-at': at, text: formatAge(at) });
}

/** `in 9 min 52 s` until a millisecond timestamp, `passed` once it has. */
export const formatUntil = (at, now = Date.now()) => (at > now ? `in ${formatDuration(at - now)}` : 'passed');

/** A `<time>` counting down to `at`, with the absolute time on hover; `data-until` lets the page refresh it. */
export const timeUntil = (at) =>
  h('time', { datetime: new Date(at).toISOString(), title: formatTime(at), 'data-until': at, text: formatUntil(at) });

/** Refreshes every `timeAgo` and `timeUntil` element under `root` (once a second while a page is open). */
export function refreshAges (root, now = Date.now()) {
  for (const el of root.querySelectorAll('time[data-at]')) el.textContent = formatAge(Number(el.dataset.at), now);
  for (const el of root.querySelectorAll('time[data-until]')) el.textContent = formatUntil(Number(el.dataset.until), now);
}

/** The badge class of a rollout status: success, progress, pending, danger, or none. */
export function statusTone (status) {
  switch (status) {
    case 'succeeded': case 'rolled-back': return 'success';
    case 'deploying': case 'verifying': case 'rolling-back': case 'in-progress': return 'progress';
    case 'pending': return 'pending';
    case 'failed': case 'mismatched': return 'danger';
    default: return 'none';
  }
}

/** A status badge: text always says the state, the colour only repeats it. */
export const statusBadge = (status) => h('span', { class: `badge tone-${statusTone(status)}`, 'data-status': status ?? 'none', text: status ?? 'no rollout' });
