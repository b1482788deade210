// The console's entry point: the shell (header, navigation, sign in and
// out) and the client-side router over /console/... paths.
import './style.css';
import { api, errorOf, setUnauthorizedHandler } from './api';
import { fmtTime, h, replace } from './dom';
import { eventsPage } from './pages/events';
import { plantPage, plantsPage } from './pages/plants';
import { tokensPage } from './pages/tokens';
import { webhookPage, webhooksPage } from './pages/webhooks';
import { base, navigate, setRenderer, takeNotice } from './router';
import * as session from './session';
import { busy, Messages, type Ctx } from './ui';

interface Route {
  re: RegExp;
  nav: string; // the nav link it belongs to
  title: string;
  render: (ctx: Ctx) => void | Promise<void>;
}

// routes: a page whose scope the token lacks is still served by its URL
// (its calls answer 403, shown as such); only its nav link is hidden.
const routes: Route[] = [
  { re: /^\/plants\/?$/, nav: 'plants', title: 'Plants', render: plantsPage },
  { re: /^\/plants\/(?<id>-?\d+)\/?$/, nav: 'plants', title: 'Plant', render: plantPage },
  { re: /^\/events\/?$/, nav: 'events', title: 'Events', render: eventsPage },
  { re: /^\/webhooks\/?$/, nav: 'webhooks', title: 'Webhooks', render: webhooksPage },
  { re: /^\/webhooks\/(?<id>whk_[0-9a-f]{16})\/?$/, nav: 'webhooks', title: 'Webhook', render: webhookPage },
  { re: /^\/tokens\/?$/, nav: 'tokens', title: 'Tokens', render: tokensPage },
];

// navItems: each shown only when the token holds the scope its page reads
// with (GET /plants and /events: plants:read; /webhooks: webhooks:manage;
// /tokens: tokens:manage).
const navItems: { key: string; label: string; href: string; scope: session.Scope }[] = [
  { key: 'plants', label: 'Plants', href: `${base}/plants`, scope: session.scopes.plantsRead },
  { key: 'events', label: 'Events', href: `${base}/events`, scope: session.scopes.plantsRead },
  { key: 'webhooks', label: 'Webhooks', href: `${base}/webhooks`, scope: session.scopes.webhooksManage },
  { key: 'tokens', label: 'Tokens', href: `${base}/tokens`, scope: session.scopes.tokensManage },
];

// home is the first page the token may read, or null when it may read none.
function home(): string | null {
  return navItems.find((n) => session.can(n.scope))?.href ?? null;
}

const app = document.getElementById('app') ?? document.body;
let pageAbort: AbortController | null = null;
let signInMessage = '';
let rendered = false;

function signOut(message = ''): void {
  session.end();
  signInMessage = message;
  render();
}

setUnauthorizedHandler((message) => {
  // The token is no longer valid (revoked, expired): back to sign in.
  signOut(message);
});

function renderSignIn(): void {
  const input = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'off', required: true, spellcheck: 'false' });
  const msgs = new Messages();
  const btn = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title', novalidate: true },
    h('h1', { id: 'signin-title' }, 'Sign in to the Plant Store console'),
    h('p', { class: 'hint' }, 'Paste an API token (pst_…). It is kept in this tab only and removed when you sign out or close the tab.'),
    msgs.el,
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Token'), input),
    h('div', { class: 'actions' }, btn));
  if (signInMessage) msgs.error(signInMessage);
  signInMessage = '';
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) {
      msgs.error('Enter a token.');
      input.focus();
      return;
    }
    void verify(t, msgs, btn);
  });
  replace(app, h('main', { id: 'main', class: 'center' }, form));
  document.title = 'Sign in · Plant Store console';
  input.focus();
}

// askMe asks GET /me with the session's token (any valid token may) and
// keeps the answer: what the token may do decides which controls are shown.
// It throws the ApiError of a failed call without signing out (the callers
// decide what a 401 means here).
async function askMe(): Promise<void> {
  const r = await api.GET('/me');
  if (!r.response.ok || !r.data) throw errorOf(r.error, r.response);
  session.setMe(r.data);
}

// verify checks a token with GET /me before keeping it: a 401 is refused
// with the API's message (role alert) and nothing is kept.
async function verify(t: string, msgs: Messages, btn: HTMLButtonElement): Promise<void> {
  session.begin(t);
  try {
    await busy(btn, askMe);
  } catch (e) {
    session.end();
    msgs.error(e);
    return;
  }
  session.keep();
  // Stay on the page the URL names (a link followed before signing in)
  // when this token may read it; else go to the first page it may.
  const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : '';
  const route = routes.find((r) => r.re.test(path));
  const nav = navItems.find((n) => n.key === route?.nav);
  if (!nav || !session.can(nav.scope)) history.replaceState(null, '', base);
  render();
}

// resume checks the token kept in this tab when the page loads (a reload,
// a link opened in the tab): GET /me again, never a stored answer. A 401
// signs out with the API's message; another failure offers to retry.
async function resume(): Promise<void> {
  const msgs = new Messages();
  replace(app, h('main', { id: 'main', class: 'center' }, msgs.el, h('p', { role: 'status' }, 'Checking the token…')));
  try {
    await askMe();
  } catch (e) {
    if (e instanceof Error && 'status' in e && e.status === 401) {
      signOut(e.message);
      return;
    }
    const retry = h('button', { type: 'button', onclick: () => void resume() }, 'Retry');
    const out = h('button', { type: 'button', class: 'secondary', onclick: () => signOut() }, 'Sign out');
    replace(app, h('main', { id: 'main', class: 'center' }, msgs.el,
      h('h1', null, 'The token could not be checked'),
      h('div', { class: 'actions' }, retry, out)));
    msgs.error(e);
    return;
  }
  render();
}

function shell(active: string): { main: HTMLElement } {
  const me = session.me();
  const nav = h('nav', { 'aria-label': 'Main' },
    h('ul', null, navItems.filter((n) => session.can(n.scope)).map((n) => h('li', null,
      h('a', { href: n.href, 'aria-current': n.key === active ? 'page' : null }, n.label)))));
  const out = h('button', { type: 'button', class: 'secondary signout', onclick: () => signOut() }, 'Sign out');
  const who = me ? h('p', { class: 'who' }, 'Signed in as ', h('span', { class: 'owner' }, me.owner),
    me.expires_at ? [' until ', h('time', { datetime: me.expires_at }, fmtTime(me.expires_at))] : null) : null;
  const header = h('header', { class: 'top' },
    h('a', { href: home() ?? base, class: 'brand' }, 'Plant Store'),
    nav, who, out);
  const main = h('main', { id: 'main' });
  replace(app, h('a', { href: '#main', class: 'skip' }, 'Skip to content'), header, main);
  return { main };
}

function render(): void {
  pageAbort?.abort();
  pageAbort = null;
  const s = session.session();
  if (!s) {
    renderSignIn();
    return;
  }
  if (!s.me) {
    void resume();
    return;
  }
  let path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : '/';
  if (path === '' || path === '/') {
    // The console's root: the first page this token may read.
    const to = home();
    if (to) {
      history.replaceState(null, '', to + location.search);
      path = to.slice(base.length);
    }
  }
  let route: Route | undefined;
  let params: Record<string, string> = {};
  for (const r of routes) {
    const m = r.re.exec(path);
    if (m) { route = r; params = { ...(m.groups ?? {}) }; break; }
  }
  const { main } = shell(route?.nav ?? '');
  const ac = new AbortController();
  pageAbort = ac;
  const messages = new Messages();
  const root = h('div', { class: 'page' });
  main.append(messages.el, root);
  const note = takeNotice();
  if (note) messages.notice(note);
  if (!route && (path === '' || path === '/')) {
    document.title = 'Plant Store console';
    root.append(h('h1', { tabindex: '-1' }, 'Nothing to show'),
      h('p', null, `This token (${s.me.scopes.length ? s.me.scopes.join(', ') : 'no scope'}) holds none of the scopes the console's pages need: `,
        'plants:read (Plants, Events), webhooks:manage (Webhooks), tokens:manage (Tokens). Sign out and sign in with another token.'));
    return;
  }
  if (!route) {
    document.title = 'Not found · Plant Store console';
    root.append(h('h1', { tabindex: '-1' }, 'Not found'), h('p', null, 'The console has no such page. ', h('a', { href: home() ?? base }, 'Go to the console\u2019s first page.')));
    return;
  }
  document.title = `${route.title} · Plant Store console`;
  const ctx: Ctx = { root, signal: ac.signal, params, query: new URLSearchParams(location.search), messages };
  Promise.resolve(route.render(ctx)).catch((e: unknown) => messages.error(e));
  // After a navigation (not the first load), move focus to the new page's
  // heading, as a page load would for assistive technology.
  if (rendered) root.querySelector<HTMLElement>('h1')?.focus();
  rendered = true;
}

// Links to console paths are followed in place (no reload); modified
// clicks (new tab) are left to the browser.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target instanceof Element ? e.target.closest('a') : null;
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !(url.pathname === base || url.pathname.startsWith(`${base}/`))) return;
  e.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) navigate(url.pathname + url.search);
  else render();
});

window.addEventListener('popstate', () => render());

setRenderer(render);
session.load();
render();
