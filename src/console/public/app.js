// The console's entry point: the token form, who is signed in, and the hash router
// (#/ = every service, #/services/<id> = one service).

import { call, claimsOf, token, whenUnauthenticated } from './api.js';
import { stopTheLineBanner } from './banner.js';
import { fill } from './dom.js';
import { overviewPage } from './overview.js';
import { servicePage } from './service.js';

const view = document.getElementById('view');
const login = document.getElementById('login');
const loginError = document.getElementById('login-error');
const tokenInput = document.getElementById('token');
const identity = document.getElementById('identity');
const logout = document.getElementById('logout');
let dispose = () => {};
// Above every page while stop-the-line is on; read again on every navigation (banner.js).
const banner = stopTheLineBanner(document.getElementById('stop-the-line'));

function leavePage () {
  dispose();
  dispose = () => {};
  const dialog = document.getElementById('action-dialog');
  if (dialog.open) dialog.close();
}

/** The token form, with the server's message when it refused the token. */
function showLogin (message) {
  leavePage();
  banner.hide();
  token.clear();
  fill(view);
  login.hidden = false;
  identity.hidden = true;
  logout.hidden = true;
  loginError.textContent = message ?? '';
  loginError.hidden = !message;
  tokenInput.value = '';
  tokenInput.focus();
}

function showIdentity () {
  const claims = claimsOf(token.get() ?? '');
  const expires = typeof claims.exp === 'number' ? `, token expires ${new Date(claims.exp * 1000).toLocaleTimeString()}` : '';
  identity.textContent = `Signed in as ${claims.sub ?? 'unknown'} (${claims.role ?? 'no role'})${expires}`;
  identity.hidden = false;
  logout.hidden = false;
}

/** A %-escaped address part, decoded; a malformed escape (a bookmark cut short) as written: the page then says it finds no such service. */
function decodedOrAsIs (text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function route () {
  if (!token.get()) {
    showLogin();
    return;
  }
  leavePage();
  login.hidden = true;
  showIdentity();
  void banner.refresh();
  const match = /^#\/services\/([^?/]+)/.exec(window.location.hash);
  document.title = 'Cloudly release console';
  dispose = match ? servicePage(view, decodedOrAsIs(match[1])) : overviewPage(view);
  view.querySelector('h1')?.focus();
}

/** Checks the token with one cheap read before keeping it. */
async function signIn (event) {
  event.preventDefault();
  const value = tokenInput.value.trim();
  if (value === '') return;
  try {
    await call('/v1/services?limit=1', { bearer: value });
  } catch (err) {
    // 401: the unauthenticated handler has already shown the form with the server's message.
    if (err.status !== 401) {
      loginError.textContent = `This token cannot read services: ${err.message} (${err.code})`;
      loginError.hidden = false;
    }
    return;
  }
  token.set(value);
  tokenInput.value = '';
  loginError.hidden = true;
  route();
}

whenUnauthenticated((message) => { showLogin(`The server refused the token: ${message}`); });
document.getElementById('login-form').addEventListener('submit', (event) => { void signIn(event); });
logout.addEventListener('click', () => { showLogin('Signed out. The token was removed from this tab.'); });
document.getElementById('skip').addEventListener('click', (event) => {
  event.preventDefault();
  document.getElementById('main').focus();
});
window.addEventListener('hashchange', route);
route();
