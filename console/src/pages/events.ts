// The Events page: the live tail (role log, "Live events") over the event
// stream, resumed with Last-Event-ID after a drop, and the history page by
// page and by type.
import { api, eventTypes, nextCursor, ok, type EventType, type PlantEvent } from '../api';
import { field, h, replace, timeEl } from '../dom';
import { base, replaceQuery } from '../router';
import { stream } from '../sse';
import { pageHead, pager, type Ctx } from '../ui';

// How many recent events the live tail starts with, and keeps.
const tailStart = 20;
const tailKeep = 200;
const historySize = 50;

let previous: string[] = [];
let previousKey = '';

export function eventsPage(ctx: Ctx): void {
  const { root, signal, messages } = ctx;
  const state = h('p', { class: 'conn', role: 'status' }, 'Connecting…');
  const list = h('ul', { class: 'events' });
  const log = h('div', { role: 'log', 'aria-label': 'Live events', class: 'log', tabindex: '0' }, list);
  const history = h('section', { 'aria-labelledby': 'history-title' });
  replace(root,
    pageHead('Events'),
    h('section', { 'aria-labelledby': 'live-title', class: 'live' },
      h('div', { class: 'section-head' }, h('h2', { id: 'live-title' }, 'Live'), state),
      h('p', { class: 'hint' }, `The latest ${tailStart} events, then each new one as it happens (newest first).`),
      log),
    history);

  const empty = h('li', { class: 'empty' }, 'No events yet.');
  list.append(empty);
  const seen = new Set<string>();
  const add = (ev: PlantEvent) => {
    const key = String(ev.seq);
    if (seen.has(key)) return;
    seen.add(key);
    empty.remove();
    list.prepend(h('li', { class: `event ${ev.type.replace('.', '-')}` },
      h('span', { class: 'type' }, ev.type),
      ' ',
      h('span', { class: 'plant' }, 'plant ', h('span', { class: 'id' }, String(ev.data.id))),
      ' ',
      h('span', { class: 'name' }, ev.data.name),
      ' ',
      h('span', { class: 'seq' }, `#${key}`),
      ' ',
      timeEl(ev.created_at)));
    while (list.children.length > tailKeep) list.lastElementChild?.remove();
  };

  void (async () => {
    try {
      const last = await lastSeq(signal);
      await stream({
        after: String(Math.max(0, last - tailStart)),
        signal,
        onEvent: add,
        onState: (s) => {
          if (s.kind === 'open') state.textContent = 'Live: connected.';
          else if (s.kind === 'connecting') state.textContent = 'Connecting…';
          else state.textContent = `Disconnected (${s.why}); reconnecting in ${Math.ceil(s.ms / 1000)} s.`;
        },
        onUnauthorized: () => {
          // ok() of the next call signs out; make that call now.
          void ok(api.GET('/events', { params: { query: { limit: 1 } } })).catch(() => {});
        },
      });
    } catch (e) {
      if (signal.aborted) return;
      state.textContent = 'Not connected.';
      messages.error(e);
    }
  })();

  void renderHistory(ctx, history);
}

// lastSeq finds the owner's latest seq with O(log n) one-event reads: the
// API lists events oldest first, and seqs have no gaps.
async function lastSeq(signal: AbortSignal): Promise<number> {
  const after = async (a: number): Promise<number | null> => {
    const { data } = await ok(api.GET('/events', { params: { query: { after: a, limit: 1 } }, signal }));
    const first = data[0];
    return first ? Number(first.seq) : null;
  };
  const first = await after(0);
  if (first === null) return 0;
  let lo = first;
  let step = 1;
  for (let i = 0; i < 60; i++) {
    const s = await after(lo + step);
    if (s === null) break;
    lo = s;
    step *= 2;
  }
  let hi = lo + step; // no event after hi
  for (let i = 0; i < 64 && lo < hi; i++) {
    const mid = Math.ceil((lo + hi) / 2);
    const s = await after(mid - 1);
    if (s === null) hi = mid - 1;
    else lo = s;
  }
  return lo;
}

async function renderHistory(ctx: Ctx, section: HTMLElement): Promise<void> {
  const { signal, messages } = ctx;
  const typeParam = ctx.query.get('type') ?? '';
  const type = eventTypes.find((t) => t === typeParam);
  const after = ctx.query.get('after') ?? '';
  if (previousKey !== (type ?? '') || !after) { previous = []; previousKey = type ?? ''; }
  const select = h('select', { name: 'type' },
    h('option', { value: '' }, 'All types'),
    eventTypes.map((t) => h('option', { value: t, selected: t === type }, t)));
  // The history pages in place: the live tail keeps its stream.
  const show = (q: URLSearchParams, focus: 'select' | 'h2') => {
    replaceQuery(q);
    void renderHistory({ ...ctx, query: q }, section).then(() => section.querySelector<HTMLElement>(focus)?.focus());
  };
  select.addEventListener('change', () => {
    const q = new URLSearchParams();
    if (select.value) q.set('type', select.value);
    show(q, 'select');
  });
  const tbody = h('tbody');
  const pages = h('div');
  replace(section,
    h('h2', { id: 'history-title', tabindex: '-1' }, 'History'),
    h('p', { class: 'hint' }, 'Every event kept, oldest first.'),
    h('div', { class: 'toolbar' }, field('Event type', select)),
    h('div', { class: 'table-wrap' }, h('table', { class: 'history' },
      h('caption', { class: 'visually-hidden' }, 'Event history'),
      h('thead', null, h('tr', null, ['Seq', 'Type', 'Plant ID', 'Name', 'Tag', 'Time'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    pages);
  try {
    const { data, response } = await ok(api.GET('/events', {
      params: { query: { limit: historySize, type: type as EventType | undefined, after: after ? Number(after) : undefined } },
      signal,
    }));
    const rows = data.map((e) => h('tr', null,
      h('td', { class: 'id' }, String(e.seq)),
      h('td', { class: 'type' }, e.type),
      h('td', { class: 'id' }, h('a', { href: `${base}/plants/${String(e.data.id)}` }, String(e.data.id))),
      h('td', null, e.data.name),
      h('td', null, e.data.tag ?? ''),
      h('td', null, timeEl(e.created_at))));
    if (rows.length === 0) rows.push(h('tr', null, h('td', { colspan: 6, class: 'empty' }, 'No events.')));
    replace(tbody, rows);
    const next = nextCursor(response)?.get('after') ?? null;
    const go = (a: string) => {
      const q = new URLSearchParams();
      if (type) q.set('type', type);
      if (a) q.set('after', a);
      show(q, 'h2');
    };
    replace(pages, pager(previous.length > 0 || after !== '', next !== null,
      () => go(previous.pop() ?? ''),
      () => { if (next !== null) { previous.push(after); go(next); } }));
  } catch (e) {
    messages.error(e);
  }
}
