// The Events page: the live tail (role log, "Live events") over the event
// stream, resumed with Last-Event-ID after a drop, and the history page by
// page and by type.
import { api, eventTypes, lastSeq, nextCursor, ok, type EventType, type PlantEvent } from '../api';
import { empty, field, h, replace, timeEl } from '../dom';
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

  // The log scrolls, and shows whole rows only: its height is that of the
  // first rows that fit in at most 24rem (or 60% of the window), measured
  // again when rows come or the width changes (a row that wraps on a
  // narrow screen is taller).
  let fitting = 0;
  const fit = () => {
    fitting = 0;
    const rem = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
    const budget = Math.max(8 * rem, Math.min(24 * rem, window.innerHeight * 0.6));
    let height = 0;
    for (const li of list.children) {
      const rowHeight = li.getBoundingClientRect().height;
      if (height > 0 && height + rowHeight > budget) break;
      height += rowHeight;
    }
    const frame = log.offsetHeight - log.clientHeight; // its borders
    const v = `${(height + frame).toFixed(2)}px`;
    if (log.style.maxHeight !== v) log.style.maxHeight = v;
  };
  const refit = () => { if (!fitting) fitting = requestAnimationFrame(fit); };
  const ro = new ResizeObserver(refit);
  ro.observe(list);
  window.addEventListener('resize', refit, { signal });
  signal.addEventListener('abort', () => { ro.disconnect(); cancelAnimationFrame(fitting); });

  const none = h('li', { class: 'empty' }, 'No events yet.');
  list.append(none);
  const seen = new Set<string>();
  // History takes the live events too (on its newest page, when they
  // match its filter); it is told of the ones it may have missed while it
  // loads.
  const live: LiveHistory = { recent: [], add: null, shown: 0 };
  const add = (ev: PlantEvent) => {
    const key = String(ev.seq);
    if (seen.has(key)) return;
    seen.add(key);
    none.remove();
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
    live.recent.push(ev);
    if (live.recent.length > tailKeep) live.recent.shift();
    live.add?.(ev);
    refit();
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

  void renderHistory(ctx, history, live);
}

// LiveHistory is how the live tail feeds the history table: recent are the
// live events received so far (the latest tailKeep), add the history's
// taker of the next ones (null while it loads), shown counts the history's
// renderings (only the latest one takes events).
interface LiveHistory {
  recent: PlantEvent[];
  add: ((ev: PlantEvent) => void) | null;
  shown: number;
}

async function renderHistory(ctx: Ctx, section: HTMLElement, live: LiveHistory): Promise<void> {
  const { signal, messages } = ctx;
  live.add = null;
  const rendering = ++live.shown;
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
    void renderHistory({ ...ctx, query: q }, section, live).then(() => section.querySelector<HTMLElement>(focus)?.focus());
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
    h('p', { class: 'hint' }, 'Every event kept, oldest first; the newest page takes new events as they happen.'),
    h('div', { class: 'toolbar' }, field('Event type', select)),
    h('div', { class: 'table-wrap' }, h('table', { class: 'history' },
      h('caption', { class: 'visually-hidden' }, 'Event history'),
      h('thead', null, h('tr', null, ['Seq', 'Type', 'Plant ID', 'Name', 'Tag', 'Time'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    pages);
  const row = (e: PlantEvent) => h('tr', null,
    h('td', { class: 'id' }, String(e.seq)),
    h('td', { class: 'type' }, e.type),
    h('td', { class: 'id' }, h('a', { href: `${base}/plants/${String(e.data.id)}` }, String(e.data.id))),
    h('td', null, e.data.name),
    h('td', null, e.data.tag ?? empty('no tag')),
    h('td', null, timeEl(e.created_at)));
  try {
    const { data, response } = await ok(api.GET('/events', {
      params: { query: { limit: historySize, type: type as EventType | undefined, after: after ? Number(after) : undefined } },
      signal,
    }));
    if (data.length === 0) replace(tbody, h('tr', null, h('td', { colspan: 6, class: 'empty' }, 'No events.')));
    else replace(tbody, data.map(row));
    let next = nextCursor(response)?.get('after') ?? null;
    const go = (a: string) => {
      const q = new URLSearchParams();
      if (type) q.set('type', type);
      if (a) q.set('after', a);
      show(q, 'h2');
    };
    const renderPager = () => replace(pages, pager(previous.length > 0 || after !== '', next !== null,
      () => go(previous.pop() ?? ''),
      () => { if (next !== null) { previous.push(after); go(next); } }));
    renderPager();

    // The newest page takes each new event of its type after its last
    // row; once the page is full, the event is on the next page, which
    // Next page then shows.
    let shown = data.length;
    let lastShown = data.length ? Number(data[data.length - 1]?.seq) : Number(after || 0);
    const take = (ev: PlantEvent) => {
      if (next !== null || (type && ev.type !== type) || Number(ev.seq) <= lastShown) return;
      if (shown >= historySize) {
        next = String(lastShown);
        renderPager();
        return;
      }
      if (shown === 0) tbody.replaceChildren();
      tbody.append(row(ev));
      shown++;
      lastShown = Number(ev.seq);
    };
    if (rendering !== live.shown) return;
    for (const ev of live.recent) take(ev);
    live.add = take;
  } catch (e) {
    messages.error(e);
  }
}
