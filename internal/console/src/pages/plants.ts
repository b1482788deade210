// The Plants pages: the paged table with a tag filter, counts and the New
// plant form (/console/plants), and one plant's form with Save and Delete
// (/console/plants/{id}).
import { ApiError, api, idParam, int64, nextCursor, ok, type Plant } from '../api';
import { empty, field, h, plural, replace } from '../dom';
import { base, navigate, replaceQuery } from '../router';
import { can, scopes } from '../session';
import { busy, confirm, pageHead, pager, type Ctx } from '../ui';

const pageSize = 100;
// The count walks the list 1000 at a time, at most countPages pages.
const countPages = 10;

// Earlier pages' cursors, to go back (keyset pages have no "previous").
let previous: string[] = [];
let previousKey = '';

export async function plantsPage(ctx: Ctx): Promise<void> {
  const { root, signal, messages } = ctx;
  const tag = ctx.query.get('tag') ?? '';
  const after = ctx.query.get('after') ?? '';
  if (previousKey !== tag || !after) { previous = []; previousKey = tag; }

  const count = h('p', { class: 'count', id: 'plants-count' }, 'Counting…');
  const filter = h('input', { type: 'search', name: 'tag', value: tag, autocomplete: 'off', maxlength: 64 });
  const newBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New plant');
  const formSlot = h('div');
  const tbody = h('tbody');
  const table = h('table', { class: 'plants' },
    h('caption', { class: 'visually-hidden' }, tag ? `Plants tagged ${tag}` : 'Plants'),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'ID'), h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Tag'))),
    tbody);
  const pages = h('div');
  replace(root,
    pageHead('Plants', count),
    h('div', { class: 'toolbar' },
      h('form', { role: 'search', class: 'filter', onsubmit: (e: Event) => { e.preventDefault(); apply(); } },
        field('Filter by tag', filter)),
      can(scopes.plantsWrite) ? newBtn : null),
    formSlot,
    h('div', { class: 'table-wrap' }, table),
    pages);

  // The filter applies as the user types (after a pause) and on Enter.
  let timer = 0;
  const apply = () => {
    window.clearTimeout(timer);
    const q = new URLSearchParams();
    const v = filter.value.trim();
    if (v) q.set('tag', v);
    if (v === tag && !after) return;
    const s = q.toString();
    navigate(`${base}/plants${s ? `?${s}` : ''}`);
  };
  filter.addEventListener('input', () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(apply, 300);
  });
  signal.addEventListener('abort', () => window.clearTimeout(timer));
  if (document.activeElement === document.body && tag) filter.focus();

  newBtn.addEventListener('click', () => {
    if (formSlot.firstChild) {
      formSlot.replaceChildren();
      newBtn.setAttribute('aria-expanded', 'false');
      return;
    }
    newBtn.setAttribute('aria-expanded', 'true');
    formSlot.append(newPlantForm(ctx, () => {
      formSlot.replaceChildren();
      newBtn.setAttribute('aria-expanded', 'false');
    }));
    formSlot.querySelector('input')?.focus();
  });

  // The page.
  const { data, response } = await ok(api.GET('/plants', {
    params: { query: { limit: pageSize, tag: tag || undefined, after: after ? idParam(after) : undefined } },
    signal,
  })).catch((e: unknown) => { count.textContent = ''; throw e; });
  const rows = data.map((p) => h('tr', null,
    h('td', { class: 'id' }, h('a', { href: `${base}/plants/${String(p.id)}` }, String(p.id))),
    h('td', null, p.name),
    h('td', null, p.tag ?? empty('no tag'))));
  if (rows.length === 0) {
    rows.push(h('tr', null, h('td', { colspan: 3, class: 'empty' }, tag ? `No plant is tagged ${tag}.` : 'No plants yet.')));
  }
  replace(tbody, rows);
  performance.mark('console:plants-rendered');
  const next = nextCursor(response)?.get('after') ?? null;
  replace(pages, pager(previous.length > 0 || after !== '', next !== null,
    () => {
      const prev = previous.pop() ?? '';
      const q = new URLSearchParams();
      if (tag) q.set('tag', tag);
      if (prev) q.set('after', prev);
      navigate(`${base}/plants${q.size ? `?${q}` : ''}`);
    },
    () => {
      if (next === null) return;
      previous.push(after);
      const q = new URLSearchParams();
      if (tag) q.set('tag', tag);
      q.set('after', next);
      navigate(`${base}/plants?${q}`);
    }));

  // The count: the first page answers it when it is the only one;
  // otherwise walk the list in pages of 1000, at most countPages of them.
  const what = tag ? ` tagged ${tag}` : '';
  if (!after && next === null) {
    count.textContent = `${plural(data.length, 'plant', 'plants')}${what}`;
    return;
  }
  let n = 0;
  let cursor: string | undefined;
  for (let i = 0; i < countPages; i++) {
    const r = await ok(api.GET('/plants', {
      params: { query: { limit: 1000, tag: tag || undefined, after: cursor !== undefined ? idParam(cursor) : undefined } },
      signal,
    }));
    n += r.data.length;
    const c = nextCursor(r.response)?.get('after');
    if (!c) {
      count.textContent = `${plural(n, 'plant', 'plants')}${what}`;
      return;
    }
    cursor = c;
  }
  count.textContent = `More than ${n.toLocaleString('en')} plants${what}`;
}

// newPlantForm is the New plant form: ID, Name, Tag, Create.
function newPlantForm(ctx: Ctx, close: () => void): HTMLFormElement {
  const id = h('input', { type: 'text', inputmode: 'numeric', name: 'id', required: true, autocomplete: 'off' });
  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 256, autocomplete: 'off' });
  const tag = h('input', { type: 'text', name: 'tag', maxlength: 64, autocomplete: 'off' });
  const create = h('button', { type: 'submit' }, 'Create');
  const form = h('form', { class: 'card', 'aria-labelledby': 'new-plant-title', novalidate: true },
    h('h2', { id: 'new-plant-title' }, 'New plant'),
    h('div', { class: 'grid' },
      field('ID', id, 'An integer, unique among your plants.'),
      field('Name', name),
      field('Tag', tag, 'Optional.')),
    h('div', { class: 'actions' },
      create,
      h('button', { type: 'button', class: 'secondary', onclick: close }, 'Cancel')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const idText = int64(id.value);
    if (idText === null) {
      ctx.messages.error('ID must be an integer from -9223372036854775808 to 9223372036854775807.');
      id.focus();
      return;
    }
    if (name.value === '') {
      ctx.messages.error('Name is required.');
      name.focus();
      return;
    }
    const body: Plant = { id: idParam(idText), name: name.value };
    if (tag.value !== '') body.tag = tag.value;
    void busy(create, async () => {
      try {
        // The id is written from its digits: a JSON number past 2^53-1
        // would otherwise be rounded.
        const { data } = await ok(api.POST('/plants', {
          body,
          bodySerializer: (b) => JSON.stringify({ ...b, id: 0 }).replace('"id":0', `"id":${idText}`),
        }));
        ctx.messages.clearError();
        close();
        navigate(`${location.pathname}${location.search}`, `Plant ${String(data.id)} created.`);
      } catch (err) {
        ctx.messages.error(err);
      }
    });
  });
  return form;
}

// plantPage is one plant: its form (Name, Tag, Save) and Delete.
export async function plantPage(ctx: Ctx): Promise<void> {
  const { root, signal, messages } = ctx;
  const idText = ctx.params.id ?? '';
  const title = `Plant ${idText}`;
  const body = h('div');
  replace(root, h('p', { class: 'back' }, h('a', { href: `${base}/plants` }, 'All plants')), pageHead(title), body);

  let etag = '';
  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 256, autocomplete: 'off' });
  const tag = h('input', { type: 'text', name: 'tag', maxlength: 64, autocomplete: 'off' });
  const save = h('button', { type: 'submit' }, 'Save');
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete');
  const conflict = h('div');
  const canWrite = can(scopes.plantsWrite);

  const load = async () => {
    const { data, response } = await ok(api.GET('/plants/{id}', { params: { path: { id: idParam(idText) } }, signal }));
    etag = response.headers.get('ETag') ?? '';
    name.value = data.name;
    tag.value = data.tag ?? '';
    conflict.replaceChildren();
  };
  try {
    await load();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      messages.error(e);
      body.append(h('p', null, 'This plant does not exist (or belongs to another owner). ', h('a', { href: `${base}/plants` }, 'Back to the plants.')));
      return;
    }
    throw e;
  }

  const form = h('form', { class: 'card', 'aria-label': title, novalidate: true },
    h('dl', { class: 'facts' }, h('dt', null, 'ID'), h('dd', { class: 'id' }, idText)),
    field('Name', name),
    field('Tag', tag, 'Empty: no tag.'),
    conflict,
    canWrite ? h('div', { class: 'actions' }, save, del) : null);
  if (!canWrite) { name.readOnly = true; tag.readOnly = true; }
  body.append(form);

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (name.value === '') {
      messages.error('Name is required.');
      name.focus();
      return;
    }
    void busy(save, async () => {
      try {
        const { data, response } = await ok(api.PATCH('/plants/{id}', {
          params: { path: { id: idParam(idText) }, header: { 'If-Match': etag || undefined } },
          body: { name: name.value, tag: tag.value === '' ? null : tag.value },
          headers: { 'Content-Type': 'application/merge-patch+json' },
        }));
        etag = response.headers.get('ETag') ?? etag;
        name.value = data.name;
        tag.value = data.tag ?? '';
        messages.clearError();
        messages.notice(`Plant ${idText} saved.`);
      } catch (err) {
        changed(err);
      }
    });
  });

  // changed shows a 412 (the plant changed since it was read) with a
  // Reload button; other errors as they are.
  const changed = (err: unknown) => {
    if (!(err instanceof ApiError && err.status === 412)) {
      messages.error(err);
      return;
    }
    messages.error(err);
    const reload = h('button', { type: 'button', class: 'secondary' }, 'Reload');
    replace(conflict, h('div', { class: 'conflict' },
      h('p', null, 'This plant was changed by someone else since you opened it; nothing was saved. Reload it to see the current version (your edits are discarded), then edit again.'),
      reload));
    reload.addEventListener('click', () => {
      void busy(reload, async () => {
        try {
          await load();
          messages.clearError();
          messages.notice(`Plant ${idText} reloaded.`);
          name.focus();
        } catch (e2) {
          messages.error(e2);
        }
      });
    });
  };

  del.addEventListener('click', () => {
    void (async () => {
      if (!(await confirm(`Delete plant ${idText}?`, `Plant ${idText} (${name.value}) is deleted for good.`))) return;
      try {
        await ok(api.DELETE('/plants/{id}', { params: { path: { id: idParam(idText) }, header: { 'If-Match': etag || undefined } } }));
        navigate(`${base}/plants`, `Plant ${idText} deleted.`);
      } catch (err) {
        changed(err);
      }
    })();
  });
}
