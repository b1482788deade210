// The Plants pages: the paged table with a search box, a tag filter,
// sortable columns and the number of plants that match, and the New plant
// form (/console/plants?q=&tag=&sort=&after=), and one plant's form with
// Save and Delete (/console/plants/{id}).
import { ApiError, api, idParam, int64, nextCursor, ok, type Plant, type PlantSort } from '../api';
import { empty, field, h, replace, timeEl } from '../dom';
import { base, navigate, pushQuery, replaceQuery } from '../router';
import { can, scopes } from '../session';
import { busy, confirm, pageHead, pager, type Ctx } from '../ui';

const pageSize = 100;
// How long typing pauses before the list follows it, in ms.
const typingPause = 250;

const sorts: readonly PlantSort[] = ['id', '-id', 'name', '-name', 'created_at', '-created_at'];
type SortKey = 'id' | 'name' | 'created_at';
// The sortable columns' headers.
const sortLabels: Record<SortKey, string> = { id: 'ID', name: 'Name', created_at: 'Created' };

// PlantQuery is what the list shows, as the page's URL keeps it.
interface PlantQuery {
  q: string;
  tag: string;
  sort: PlantSort;
}

function sortKey(s: PlantSort): SortKey {
  return s.startsWith('-') ? s.slice(1) as SortKey : s as SortKey;
}

// toggled is the order a click on key's header asks for: the other
// direction of the current order by key, else key ascending.
function toggled(cur: PlantSort, key: SortKey): PlantSort {
  const want = cur === key ? `-${key}` : key;
  return sorts.find((s) => s === want) ?? 'id';
}

// urlQuery is the page URL's query for q at the page after (the API's
// cursor; empty: the first page). The default order is left out.
function urlQuery(q: PlantQuery, after: string): URLSearchParams {
  const u = new URLSearchParams();
  if (q.q) u.set('q', q.q);
  if (q.tag) u.set('tag', q.tag);
  if (q.sort !== 'id') u.set('sort', q.sort);
  if (after) u.set('after', after);
  return u;
}

function plantsURL(q: PlantQuery, after: string): string {
  const s = urlQuery(q, after).toString();
  return `${base}/plants${s ? `?${s}` : ''}`;
}

const grouped = new Intl.NumberFormat('en-US');

// totalText is the count an answer to Prefer: count=exact carries ("1,204
// plants match", "1 plant matches"; unfiltered "1,204 plants"), or "" when
// it carries none.
export function totalText(res: Response, filtered: boolean): string {
  const v = res.headers.get('X-Total-Count')?.trim() ?? '';
  if (!/^\d{1,19}$/.test(v)) return '';
  const n = BigInt(v);
  const about = /count=estimated/.test(res.headers.get('Preference-Applied') ?? '') ? 'About ' : '';
  const plants = `${about}${grouped.format(n)} ${n === 1n ? 'plant' : 'plants'}`;
  if (!filtered) return plants;
  return `${plants} ${n === 1n ? 'matches' : 'match'}`;
}

// Earlier pages' cursors, to go back (keyset pages have no "previous").
let previous: string[] = [];
let previousKey = '';
const keyOf = (q: PlantQuery) => JSON.stringify([q.q, q.tag, q.sort]);

export async function plantsPage(ctx: Ctx): Promise<void> {
  const { root, signal, messages } = ctx;
  const query: PlantQuery = {
    q: ctx.query.get('q') ?? '',
    tag: ctx.query.get('tag') ?? '',
    sort: sorts.find((s) => s === ctx.query.get('sort')) ?? 'id',
  };
  let after = ctx.query.get('after') ?? '';
  if (previousKey !== keyOf(query) || !after) { previous = []; previousKey = keyOf(query); }

  // The count is a live region: a screen reader hears how many plants
  // match as the list follows the search.
  const count = h('p', { class: 'count', role: 'status' });
  const search = h('input', { type: 'search', name: 'q', value: query.q, autocomplete: 'off', spellcheck: 'false', maxlength: 200 });
  const filter = h('input', { type: 'search', name: 'tag', value: query.tag, autocomplete: 'off', maxlength: 64 });
  const newBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New plant');
  const formSlot = h('div');
  const tbody = h('tbody');
  const caption = h('caption', { class: 'visually-hidden' });
  // Each sortable header is a button in its th; the th carries aria-sort
  // while the list is in its order.
  const heads = {} as Record<SortKey, HTMLTableCellElement>;
  for (const key of ['id', 'name', 'created_at'] as const) {
    const btn = h('button', { type: 'button', class: 'sort' }, sortLabels[key]);
    btn.addEventListener('click', () => {
      query.sort = toggled(query.sort, key);
      show(false);
    });
    heads[key] = h('th', { scope: 'col', class: 'sortable' }, btn);
  }
  const table = h('table', { class: 'plants' },
    caption,
    h('thead', null, h('tr', null, heads.id, heads.name, h('th', { scope: 'col' }, 'Tag'), heads.created_at)),
    tbody);
  const pages = h('div');
  replace(root,
    pageHead('Plants', count),
    h('div', { class: 'toolbar' },
      h('form', { role: 'search', class: 'filter', onsubmit: (e: Event) => { e.preventDefault(); apply(true); } },
        field('Search', search),
        field('Filter by tag', filter)),
      can(scopes.plantsWrite) ? newBtn : null),
    formSlot,
    h('div', { class: 'table-wrap' }, table),
    pages);

  // describe shows the query's order on the headers and in the caption.
  const describe = () => {
    const key = sortKey(query.sort);
    for (const k of ['id', 'name', 'created_at'] as const) {
      if (k === key) heads[k].setAttribute('aria-sort', query.sort.startsWith('-') ? 'descending' : 'ascending');
      else heads[k].removeAttribute('aria-sort');
    }
    const what = [query.q ? `matching \u201c${query.q}\u201d` : '', query.tag ? `tagged ${query.tag}` : ''].filter(Boolean).join(', ');
    caption.textContent = `Plants${what ? ` ${what}` : ''}, sorted by ${sortLabels[key]}, ${query.sort.startsWith('-') ? 'descending' : 'ascending'}`;
  };
  describe();

  // load shows the page of the query at after: its rows, the count, the
  // pager. A newer load cancels an older one.
  let loading: AbortController | null = null;
  let failed = false;
  let first = true;
  const load = async (): Promise<void> => {
    loading?.abort();
    const ac = new AbortController();
    loading = ac;
    const stop = () => ac.abort();
    signal.addEventListener('abort', stop);
    table.setAttribute('aria-busy', 'true');
    try {
      const { data, response } = await ok(api.GET('/plants', {
        params: {
          query: {
            limit: pageSize,
            q: query.q || undefined,
            tag: query.tag ? [query.tag] : undefined,
            sort: query.sort === 'id' ? undefined : query.sort,
            after: after || undefined,
          },
          header: { Prefer: 'count=exact' },
        },
        signal: ac.signal,
      }));
      const filtered = query.q !== '' || query.tag !== '';
      const rows = data.map((p) => h('tr', null,
        h('td', { class: 'id' }, h('a', { href: `${base}/plants/${String(p.id)}` }, String(p.id))),
        h('td', null, p.name),
        h('td', null, p.tag ?? empty('no tag')),
        h('td', { class: 'created' }, p.created_at ? timeEl(p.created_at) : empty('not known'))));
      if (rows.length === 0) {
        rows.push(h('tr', null, h('td', { colspan: 4, class: 'empty' }, filtered ? 'No plant matches.' : 'No plants yet.')));
      }
      replace(tbody, rows);
      if (first) performance.mark('console:plants-rendered');
      first = false;
      count.textContent = totalText(response, filtered);
      const next = nextCursor(response)?.get('after') ?? null;
      replace(pages, pager(previous.length > 0 || after !== '', next !== null,
        () => navigate(plantsURL(query, previous.pop() ?? '')),
        () => {
          if (next === null) return;
          previous.push(after);
          navigate(plantsURL(query, next));
        }));
      if (failed) messages.clearError();
      failed = false;
    } catch (e) {
      if (ac.signal.aborted) return;
      count.textContent = '';
      failed = true;
      messages.error(e);
    } finally {
      signal.removeEventListener('abort', stop);
      if (loading === ac) {
        loading = null;
        table.removeAttribute('aria-busy');
      }
    }
  };

  // show lists the first page of the query in place and keeps the query in
  // the URL: typing replaces the entry its first pause added, so Back leaves
  // the search whole; a sort adds one.
  let typing = false;
  const show = (typed: boolean) => {
    after = '';
    previous = [];
    previousKey = keyOf(query);
    const u = urlQuery(query, '');
    if ((typed && typing) || `?${u.toString()}` === location.search || (u.size === 0 && location.search === '')) replaceQuery(u);
    else pushQuery(u);
    typing = typed;
    describe();
    void load();
  };

  // The search and the filter apply as the user types (after a pause) and
  // on Enter, which also goes back to the first page.
  let timer = 0;
  const apply = (submitted: boolean) => {
    window.clearTimeout(timer);
    const q = search.value.trim();
    const tag = filter.value.trim();
    if (q === query.q && tag === query.tag && !(submitted && after)) return;
    query.q = q;
    query.tag = tag;
    show(!submitted);
  };
  const pause = () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(() => apply(false), typingPause);
  };
  search.addEventListener('input', pause);
  filter.addEventListener('input', pause);
  signal.addEventListener('abort', () => { window.clearTimeout(timer); loading?.abort(); });
  const focusEnd = (el: HTMLInputElement) => {
    el.focus();
    el.setSelectionRange(el.value.length, el.value.length);
  };
  if (document.activeElement === document.body) {
    if (query.q) focusEnd(search);
    else if (query.tag) focusEnd(filter);
  }

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

  await load();
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
