// The Tokens page (/console/tokens): the owner's API tokens, oldest first
// and a page at a time (GET /tokens, Link next), with counts; the New token
// form (a checkbox per scope, a TTL; POST /tokens), whose secret is shown
// once with a Copy button and kept nowhere by the console; Revoke per active
// token after a confirmation (DELETE /tokens/{id}). Scope tokens:manage.
import { api, nextCursor, ok, type Token } from '../api';
import { empty, field, fmtTime, h, plural, replace, timeEl, uid } from '../dom';
import { base, navigate } from '../router';
import { allScopes, can, me, type Scope } from '../session';
import { busy, confirm, pageHead, pager, secretPanel, type Ctx } from '../ui';

const listSize = 100;
// The count walks the list 1000 at a time, at most countPages pages.
const countPages = 10;
// The contract's bounds of NewToken.ttl (seconds): 1 to 100 years.
const maxTTL = 3_155_760_000;
const units: Record<string, number> = { d: 86_400, h: 3_600, m: 60, s: 1 };

// Earlier pages' cursors, to go back (keyset pages have no "previous").
let previous: string[] = [];

// ttlGrammar is the TTL's one grammar, the CLI's too: a whole number of
// seconds, or a whole number with one unit, s, m, h or d (24 hours).
// Nothing repeated or mixed: 30d30d and 1h30m are refused.
const ttlGrammar = /^([0-9]+)([smhd]?)$/;
export const ttlHint = 'a whole number of seconds, or with one unit s, m, h or d: 3600, 3600s, 90m, 720h, 30d';

// parseTTL reads the TTL field (ttlGrammar; the spaces around it are not
// part of it); empty is null (the token never expires). The API takes
// whole seconds from 1 to 100 years; an error is a sentence for the alert.
export function parseTTL(text: string): { seconds: number | null } | { error: string } {
  const t = text.trim();
  if (t === '') return { seconds: null };
  const m = ttlGrammar.exec(t);
  if (!m) return { error: `TTL "${t}" is not a lifetime: write ${ttlHint}.` };
  const seconds = Number(m[1]) * (units[m[2] || 's'] ?? 1);
  if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > maxTTL) {
    return { error: `TTL must be from 1 second to 100 years (36525d, ${maxTTL} seconds); "${t}" is ${seconds.toLocaleString('en')} seconds.` };
  }
  return { seconds };
}

// defaultTTL is what the form starts with: 30 days, or less when the
// signed-in token expires sooner (a token mints none that outlives it).
function defaultTTL(expiresAt: string | null | undefined): string {
  if (!expiresAt) return '30d';
  const left = Math.floor((Date.parse(expiresAt) - Date.now()) / 1000) - 60;
  if (Number.isNaN(left) || left >= 30 * 86_400) return '30d';
  if (left >= 3_600) return `${Math.floor(left / 3_600)}h`;
  return left > 0 ? String(left) : '';
}

function statusBadge(t: Token): HTMLElement {
  const cls = t.status === 'active' ? 'badge ok' : t.status === 'revoked' ? 'badge bad' : 'badge wait';
  return h('span', { class: cls }, t.status);
}

export async function tokensPage(ctx: Ctx): Promise<void> {
  const { root, signal, messages } = ctx;
  const after = ctx.query.get('after') ?? '';
  if (!after) previous = [];
  const count = h('p', { class: 'count' }, 'Counting…');
  const newBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New token');
  const formSlot = h('div');
  const tbody = h('tbody');
  const pages = h('div');
  replace(root,
    pageHead('Tokens', count),
    h('p', { class: 'hint' }, 'The API tokens of your owner, oldest first. A token\u2019s secret is shown once, when it is created; the service keeps only its hash.'),
    h('div', { class: 'toolbar' }, newBtn),
    formSlot,
    h('div', { class: 'table-wrap' }, h('table', { class: 'tokens' },
      h('caption', { class: 'visually-hidden' }, 'API tokens'),
      h('thead', null, h('tr', null, ['ID', 'Scopes', 'Created', 'Expires', 'Status', 'Last four', 'Action'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    pages);

  const close = () => {
    formSlot.replaceChildren();
    newBtn.setAttribute('aria-expanded', 'false');
    newBtn.focus();
  };
  newBtn.addEventListener('click', () => {
    if (formSlot.firstChild) {
      close();
      return;
    }
    newBtn.setAttribute('aria-expanded', 'true');
    formSlot.append(newTokenForm(ctx, formSlot, close, () => void load().catch((e: unknown) => messages.error(e))));
    formSlot.querySelector<HTMLInputElement>('input:not([disabled])')?.focus();
  });

  const row = (t: Token) => {
    const self = t.id === me()?.token_id;
    const cellID = `t-${t.id}`;
    let action: HTMLButtonElement | null = null;
    if (t.status === 'active') {
      const revoke = h('button', { type: 'button', class: 'danger small', 'aria-describedby': cellID }, 'Revoke');
      revoke.addEventListener('click', () => void (async () => {
        const body = self
          ? `${t.id} is the token this console is signed in with: revoking it signs you out. Anything else using it is refused from now on (401).`
          : `Anything using ${t.id} is refused from now on (401). It stays in this list as revoked; this cannot be undone.`;
        if (!(await confirm(`Revoke token ${t.id}?`, body))) return;
        try {
          await busy(revoke, () => ok(api.DELETE('/tokens/{id}', { params: { path: { id: t.id } } })));
          messages.clearError();
          messages.notice(`Token ${t.id} revoked.`);
          await load(); // with its own token revoked, this answers 401: signed out
        } catch (err) {
          messages.error(err);
        }
      })());
      action = revoke;
    }
    return h('tr', null,
      h('td', { id: cellID }, h('span', { class: 'id' }, t.id), self ? h('span', { class: 'sub' }, 'this console\u2019s token') : null,
        // Narrow screens hide the Scopes column and show them here.
        h('span', { class: 'sub narrow' }, t.scopes.join(', '))),
      h('td', { class: 'scopes' }, t.scopes.map((s) => h('span', { class: 'scope' }, s))),
      h('td', null, timeEl(t.created_at)),
      h('td', null, t.expires_at ? timeEl(t.expires_at) : h('span', { class: 'none' }, 'never')),
      h('td', null, statusBadge(t), t.revoked_at ? h('span', { class: 'sub' }, timeEl(t.revoked_at)) : null,
        // Narrow screens hide the Created, Expires and Last four columns.
        h('span', { class: 'sub narrow' }, t.expires_at ? ['expires ', timeEl(t.expires_at)] : 'never expires')),
      h('td', { class: 'id' }, t.last4 ?? empty('unknown')),
      h('td', null, action));
  };

  const load = async () => {
    const { data, response } = await ok(api.GET('/tokens', {
      params: { query: { limit: listSize, after: after || undefined } },
      signal,
    }));
    const rows = data.map(row);
    if (rows.length === 0) rows.push(h('tr', null, h('td', { colspan: 7, class: 'empty' }, after ? 'No more tokens.' : 'No tokens.')));
    replace(tbody, rows);
    const next = nextCursor(response)?.get('after') ?? null;
    replace(pages, pager(previous.length > 0 || after !== '', next !== null,
      () => {
        const prev = previous.pop() ?? '';
        navigate(`${base}/tokens${prev ? `?after=${encodeURIComponent(prev)}` : ''}`);
      },
      () => {
        if (next === null) return;
        previous.push(after);
        navigate(`${base}/tokens?after=${encodeURIComponent(next)}`);
      }));

    // Counts over every token (the first page answers when it is the only one).
    let all: Token[] = data;
    let more = false;
    if (after || next !== null) {
      all = [];
      let cursor: string | undefined;
      for (let i = 0; ; i++) {
        if (i === countPages) { more = true; break; }
        const r = await ok(api.GET('/tokens', { params: { query: { limit: 1000, after: cursor } }, signal }));
        all = all.concat(r.data);
        const c = nextCursor(r.response)?.get('after');
        if (!c) break;
        cursor = c;
      }
    }
    const by = (s: Token['status']) => all.filter((t) => t.status === s).length;
    count.textContent = `${more ? 'More than ' : ''}${plural(all.length, 'token', 'tokens')}: ${by('active')} active, ${by('revoked')} revoked, ${by('expired')} expired`;
  };
  await load().catch((e: unknown) => { count.textContent = ''; throw e; });
}

// newTokenForm is the New token form: a checkbox per scope of the contract
// (those the signed-in token lacks are disabled: a token mints only scopes
// it holds), TTL, Create. The secret is then shown once in place of the
// form; Done removes it from the page.
function newTokenForm(ctx: Ctx, slot: HTMLElement, close: () => void, reload: () => void): HTMLFormElement {
  const caller = me();
  const lacksID = uid('lacks');
  const boxes = allScopes.map((s) => {
    const held = can(s);
    return h('input', { type: 'checkbox', name: 'scopes', value: s, id: uid('scope'), disabled: !held, 'aria-describedby': held ? null : lacksID });
  });
  const ttl = h('input', { type: 'text', name: 'ttl', autocomplete: 'off', spellcheck: 'false', value: defaultTTL(caller?.expires_at) });
  const bound = caller?.expires_at
    ? `This token expires at ${fmtTime(caller.expires_at)}: the new one must end by then, and cannot be left empty. At most 100 years.`
    : 'Empty: it never expires. At most 100 years.';
  const create = h('button', { type: 'submit' }, 'Create');
  const lacking = boxes.some((b) => b.disabled);
  const form = h('form', { class: 'card', 'aria-labelledby': 'new-token-title', novalidate: true },
    h('h2', { id: 'new-token-title' }, 'New token'),
    h('fieldset', { class: 'types' },
      h('legend', null, 'Scopes'),
      boxes.map((b) => h('div', { class: 'check' }, b, h('label', { for: b.id }, b.value), b.disabled ? h('span', { class: 'hint' }, '(this token lacks it)') : null)),
      lacking ? h('p', { class: 'hint', id: lacksID }, 'A token mints only scopes it holds itself.') : null),
    field('TTL', ttl, ttlHint, bound),
    h('div', { class: 'actions' },
      create,
      h('button', { type: 'button', class: 'secondary', onclick: close }, 'Cancel')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const scopes = boxes.filter((b) => b.checked && !b.disabled).map((b) => b.value as Scope);
    if (scopes.length === 0) {
      ctx.messages.error('Check at least one scope.');
      boxes.find((b) => !b.disabled)?.focus();
      return;
    }
    const life = parseTTL(ttl.value);
    if ('error' in life) {
      ctx.messages.error(life.error);
      ttl.focus();
      return;
    }
    void busy(create, async () => {
      try {
        const { data } = await ok(api.POST('/tokens', {
          body: { scopes, ttl: life.seconds ?? undefined },
        }));
        ctx.messages.clearError();
        ctx.messages.notice(`Token ${data.id} created (${data.scopes.join(', ')}${data.expires_at ? `, until ${fmtTime(data.expires_at)}` : ', no expiry'}).`);
        replace(slot, secretPanel(`Secret of the new token ${data.id}`, data.secret,
          'Shown only now: the service keeps only its hash, and the console keeps nothing once you press Done or leave the page. Copy it to where it is used.',
          close));
        slot.querySelector<HTMLElement>('h2')?.setAttribute('tabindex', '-1');
        slot.querySelector<HTMLElement>('h2')?.focus();
        reload();
      } catch (err) {
        ctx.messages.error(err);
      }
    });
  });
  return form;
}
