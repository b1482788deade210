// Shared pieces of the pages: the page context, error alerts, notices,
// confirmation dialogs, the one-time secret panel.
import { ApiError } from './api';
import { h, replace, uid, type Child } from './dom';

// Ctx is what a page renders into; signal is aborted when the user leaves
// the page (its requests and timers stop).
export interface Ctx {
  root: HTMLElement;
  signal: AbortSignal;
  // params of the route (e.g. id) and the query.
  params: Record<string, string>;
  query: URLSearchParams;
  // messages shows errors (role alert) and notices (role status) above
  // the page's content.
  messages: Messages;
}

// Messages is a page's alert and status area.
export class Messages {
  readonly el: HTMLDivElement;
  private readonly statusEl: HTMLParagraphElement;
  private alertEl: HTMLDivElement | null = null;

  constructor() {
    this.statusEl = h('p', { role: 'status', class: 'notice' });
    this.el = h('div', { class: 'messages' }, this.statusEl);
  }

  // error shows e in an element with role alert: an ApiError's message as
  // the API wrote it, then its status and code.
  error(e: unknown, extra?: Child): void {
    if (e instanceof DOMException && e.name === 'AbortError') return;
    let text: string;
    let detail = '';
    if (e instanceof ApiError) {
      text = e.message;
      if (e.status === 403) detail = `Forbidden (HTTP 403${e.code ? `, error ${e.code}` : ''}): the API does not allow this token to do this.`;
      else if (e.status) detail = `HTTP ${e.status}${e.code ? `, error ${e.code}` : ''}`;
    } else if (e instanceof Error) {
      text = e.message;
    } else {
      text = String(e);
    }
    this.clear();
    this.alertEl = h('div', { role: 'alert', class: 'alert' },
      h('p', { class: 'alert-message' }, text),
      detail ? h('p', { class: 'alert-detail' }, detail) : null,
      extra ?? null);
    this.el.prepend(this.alertEl);
  }

  clearError(): void {
    this.alertEl?.remove();
    this.alertEl = null;
  }

  // notice says what just happened (role status, polite).
  notice(text: string): void {
    this.statusEl.textContent = text;
  }

  clear(): void {
    this.clearError();
    this.notice('');
  }
}

// confirm asks in a modal dialog (role dialog) with the buttons Confirm and
// Cancel; it resolves true on Confirm. Escape cancels.
export function confirm(title: string, body: string, confirmLabel = 'Confirm'): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = uid('dlg');
    const descId = uid('dlgd');
    const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    const ok = h('button', { type: 'button', class: 'danger' }, confirmLabel);
    const dlg = h('dialog', { 'aria-labelledby': titleId, 'aria-describedby': descId, class: 'confirm' },
      h('h2', { id: titleId }, title),
      h('p', { id: descId }, body),
      h('div', { class: 'actions' }, cancel, ok));
    let answered = false;
    const done = (v: boolean) => {
      if (answered) return;
      answered = true;
      if (dlg.open) dlg.close();
      dlg.remove();
      resolve(v);
    };
    cancel.addEventListener('click', () => done(false));
    ok.addEventListener('click', () => done(true));
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    dlg.addEventListener('close', () => done(false));
    document.body.appendChild(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// secretPanel shows a secret once, with a copy button; the element with
// class secret-value holds exactly the secret.
export function secretPanel(title: string, secret: string, note: string, onDone: () => void): HTMLElement {
  const value = h('code', { class: 'secret-value' }, secret);
  const copied = h('span', { role: 'status', class: 'copied' });
  const copy = h('button', { type: 'button', class: 'secondary' }, 'Copy');
  copy.addEventListener('click', () => {
    navigator.clipboard.writeText(secret).then(
      () => { copied.textContent = 'Copied.'; },
      () => { copied.textContent = 'Could not copy: select the secret and copy it.'; });
  });
  const done = h('button', { type: 'button', class: 'secondary' }, 'Done');
  const panel = h('section', { class: 'secret', 'aria-label': title },
    h('h2', null, title),
    h('p', null, note),
    value,
    h('div', { class: 'actions' }, copy, done, copied));
  done.addEventListener('click', () => { panel.remove(); onDone(); });
  return panel;
}

// busy disables a button while p runs.
export async function busy<T>(btn: HTMLButtonElement, p: () => Promise<T>): Promise<T> {
  btn.disabled = true;
  btn.setAttribute('aria-busy', 'true');
  try {
    return await p();
  } finally {
    btn.disabled = false;
    btn.removeAttribute('aria-busy');
  }
}

// sleep resolves after ms, or rejects when signal aborts.
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) { reject(signal.reason); return; }
    const t = setTimeout(() => { signal.removeEventListener('abort', stop); resolve(); }, ms);
    const stop = () => { clearTimeout(t); reject(signal.reason); };
    signal.addEventListener('abort', stop, { once: true });
  });
}

// pager renders Previous page / Next page buttons for a keyset-paged list.
export function pager(hasPrev: boolean, hasNext: boolean, prev: () => void, next: () => void): HTMLElement {
  const nav = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  if (hasPrev) nav.appendChild(h('button', { type: 'button', class: 'secondary', onclick: prev }, 'Previous page'));
  if (hasNext) nav.appendChild(h('button', { type: 'button', class: 'secondary', onclick: next }, 'Next page'));
  return nav;
}

export function pageHead(title: string, ...extra: Child[]): HTMLElement {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, title), extra);
}

export { replace };
