// The console's entry point: the shell (header, navigation, sign in and
// out) and the client-side router over /console/... paths.
import './style.css';
import { api, ok, setUnauthorizedHandler } from './api';
import { h, replace } from './dom';
import { eventsPage } from './pages/events';
import { plantPage, plantsPage } from './pages/plants';
import { webhookPage, webhooksPage } from './pages/webhooks';
import { base, navigate, setRenderer, takeNotice } from './router';
import * as session from './session';
import { Messages, type Ctx } from './ui';

interface Route {
  re: RegExp;
  nav: string; // the nav link it belongs to
  title: string;
  render: (ctx: Ctx) => void | Promise<void>;
}

// routes: the Tokens page joins here when the tokens API lands.
const routes: Route[] = [
  { re: /^\/?$/, nav: 'plants', title: 'Plants', render: plantsPage },
  { re: /^\/plants\/?$/, nav: 'plants', title: 'Plants', render: plantsPage },
  { re: /^\/plants\/(?<id>-?\d+)\/?$/, nav: 'plants', title: 'Plant', render: plantPage },
  { re: /^\/events\/?$/, nav: 'events', title: 'Events', render: eventsPage },
  { re: /^\/webhooks\/?$/, nav: 'webhooks', title: 'Webhooks', render: webhooksPage },
  { re: /^\/webhooks\/(?<id>whk_[0-9a-f]{16})\/?$/, nav: 'webhooks', title: 'Webhook', render: webhookPage },
];

const navItems: { key: string; label: string; href: string }[] = [
  { key: 'plants', label: 'Plants', href: `${base}/plants` },
  { key: 'events', label: 'Events', href: `${base}/events` },
  { key: 'webhooks', label: 'Webhooks', href: `${base}/webhooks` },
];

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

// verify checks a token with one call before keeping it: a 401 is refused
// with the API's message; a 403 means the token is valid but cannot list
// plants, which is fine (its scopes are unknown until GET /me exists).
async function verify(t: string, msgs: Messages, btn: HTMLButtonElement): Promise<void> {
  btn.disabled = true;
  session.start(t);
  try {
    await ok(api.GET('/plants', { params: { query: { limit: 1 } } }));
  } catch (e) {
    if (!(e instanceof Error && 'status' in e && e.status === 403)) {
      session.end();
      btn.disabled = false;
      if (e instanceof Error && 'status' in e && e.status === 401) {
        signInMessage = e.message;
        renderSignIn();
      } else {
        msgs.error(e);
      }
      return;
    }
  }
  btn.disabled = false;
  const here = location.pathname;
  if (!here.startsWith(base)) history.replaceState(null, '', `${base}/plants`);
  render();
}

function shell(active: string): { main: HTMLElement } {
  const nav = h('nav', { 'aria-label': 'Main' },
    h('ul', null, navItems.map((n) => h('li', null,
      h('a', { href: n.href, 'aria-current': n.key === active ? 'page' : null }, n.label)))));
  const out = h('button', { type: 'button', class: 'secondary signout', onclick: () => signOut() }, 'Sign out');
  const header = h('header', { class: 'top' },
    h('a', { href: `${base}/plants`, class: 'brand' }, 'Plant Store'),
    nav, out);
  const main = h('main', { id: 'main' });
  replace(app, h('a', { href: '#main', class: 'skip' }, 'Skip to content'), header, main);
  return { main };
}

function render(): void {
  pageAbort?.abort();
  pageAbort = null;
  if (!session.session()) {
    renderSignIn();
    return;
  }
  const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : '/';
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
  if (!route) {
    document.title = 'Not found · Plant Store console';
    root.append(h('h1', null, 'Not found'), h('p', null, 'The console has no such page. ', h('a', { href: `${base}/plants` }, 'Go to the plants.')));
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
