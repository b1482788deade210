// The Webhooks pages: the subscriptions with counts and the New webhook
// form (/console/webhooks), and one subscription (/console/webhooks/{id}):
// Ping, Rotate secret, Disable/Enable, Delete, Recover, the attempts chart
// and the deliveries with their attempts and Resend.
import { ApiError, api, eventTypes, lastSeq, nextCursor, ok, type Delivery, type EventType, type Webhook } from '../api';
import { bucket, chart } from '../chart';
import { empty, field, fmtTime, h, plural, replace, timeEl, uid } from '../dom';
import { base, navigate } from '../router';
import { can, scopes } from '../session';
import { busy, confirm, pageHead, pager, secretPanel, sleep, type Ctx } from '../ui';

const listSize = 100;
const deliveriesSize = 50;
// The chart reads the attempts of the last 24 hours, 1000 a page, at most
// chartPages pages (then it says the chart is partial).
const chartPages = 10;
const refreshEvery = 5_000;
// How far back (pages of 1000 events) a delivery's event type is looked up.
const typePages = 5;

// eventIDOf is the id of the event whose deliveries carry messageID.
function eventIDOf(messageID: string): string {
  return `evt_${messageID.replace(/^msg_/, '')}`;
}

// stateText says whether w is enabled, and why it was disabled.
function stateText(w: Webhook): string {
  if (w.enabled) return 'Enabled';
  switch (w.disabled_reason) {
    case 'manual': return 'Disabled by hand';
    case 'gone': return 'Disabled: the receiver answered 410';
    case 'failing': return 'Disabled: deliveries kept failing';
    case undefined: return 'Disabled';
    default: return `Disabled: ${String(w.disabled_reason)}`;
  }
}

function typesText(w: Webhook): string {
  return w.types && w.types.length ? w.types.join(', ') : 'New plants (untyped)';
}

export async function webhooksPage(ctx: Ctx): Promise<void> {
  const { root, signal, messages } = ctx;
  const manage = can(scopes.webhooksManage);
  const count = h('p', { class: 'count' }, 'Counting…');
  const newBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New webhook');
  const formSlot = h('div');
  const tbody = h('tbody');
  const pages = h('div');
  replace(root,
    pageHead('Webhooks', count),
    h('p', { class: 'hint' }, 'Subscriptions POST your plants\u2019 changes to a URL of yours, signed (Standard Webhooks).'),
    manage ? h('div', { class: 'toolbar' }, newBtn) : null,
    formSlot,
    h('div', { class: 'table-wrap' }, h('table', { class: 'webhooks' },
      h('caption', { class: 'visually-hidden' }, 'Webhook subscriptions'),
      h('thead', null, h('tr', null, ['ID', 'URL', 'Event types', 'State', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    pages);

  newBtn.addEventListener('click', () => {
    if (formSlot.firstChild) {
      formSlot.replaceChildren();
      newBtn.setAttribute('aria-expanded', 'false');
      return;
    }
    newBtn.setAttribute('aria-expanded', 'true');
    formSlot.append(newWebhookForm(ctx, formSlot, () => {
      formSlot.replaceChildren();
      newBtn.setAttribute('aria-expanded', 'false');
      newBtn.focus();
    }));
    formSlot.querySelector('input')?.focus();
  });

  const after = ctx.query.get('after') ?? '';
  const { data, response } = await ok(api.GET('/webhooks', {
    params: { query: { limit: listSize, after: after || undefined } },
    signal,
  })).catch((e: unknown) => { count.textContent = ''; throw e; });
  const rows = data.map((w) => h('tr', null,
    h('td', { class: 'id' }, h('a', { href: `${base}/webhooks/${w.id}` }, w.id)),
    h('td', { class: 'url' }, w.url),
    h('td', null, typesText(w)),
    h('td', null, h('span', { class: w.enabled ? 'badge ok' : 'badge bad' }, stateText(w))),
    h('td', null, timeEl(w.created_at))));
  if (rows.length === 0) rows.push(h('tr', null, h('td', { colspan: 5, class: 'empty' }, 'No subscriptions yet.')));
  replace(tbody, rows);
  const next = nextCursor(response)?.get('after') ?? null;
  replace(pages, pager(after !== '', next !== null,
    () => navigate(`${base}/webhooks`),
    () => { if (next !== null) navigate(`${base}/webhooks?after=${encodeURIComponent(next)}`); }));

  // Counts over every subscription (an owner has at most 1000).
  let all = data;
  if (after || next !== null) {
    all = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await ok(api.GET('/webhooks', { params: { query: { limit: 1000, after: cursor } }, signal }));
      all = all.concat(r.data);
      const c = nextCursor(r.response)?.get('after');
      if (!c) break;
      cursor = c;
    }
  }
  const enabled = all.filter((w) => w.enabled).length;
  count.textContent = `${plural(all.length, 'subscription', 'subscriptions')}: ${enabled} enabled, ${all.length - enabled} disabled`;
  void messages;
}

// newWebhookForm is the New webhook form: URL, Description, the event
// types, Create; the secret is then shown once in place of the form.
function newWebhookForm(ctx: Ctx, slot: HTMLElement, close: () => void): HTMLFormElement {
  const url = h('input', { type: 'url', name: 'url', required: true, maxlength: 2048, autocomplete: 'off', placeholder: 'https://' });
  const description = h('input', { type: 'text', name: 'description', maxlength: 256, autocomplete: 'off' });
  const boxes = eventTypes.map((t) => h('input', { type: 'checkbox', name: 'types', value: t, id: uid('type') }));
  const hintId = uid('hint');
  const create = h('button', { type: 'submit' }, 'Create');
  const form = h('form', { class: 'card', 'aria-labelledby': 'new-webhook-title', novalidate: true },
    h('h2', { id: 'new-webhook-title' }, 'New webhook'),
    field('URL', url, 'Where the deliveries are POSTed: an absolute http:// or https:// URL.'),
    field('Description', description, 'Optional.'),
    h('fieldset', { class: 'types', 'aria-describedby': hintId },
      h('legend', null, 'Event types'),
      boxes.map((b) => h('div', { class: 'check' }, b, h('label', { for: b.id }, b.value))),
      h('p', { class: 'hint', id: hintId }, 'Each checked type is delivered as an event. None checked: each new plant is delivered as a bare plant.')),
    h('div', { class: 'actions' },
      create,
      h('button', { type: 'button', class: 'secondary', onclick: close }, 'Cancel')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (url.value.trim() === '') {
      ctx.messages.error('URL is required.');
      url.focus();
      return;
    }
    const types = boxes.filter((b) => b.checked).map((b) => b.value as EventType);
    void busy(create, async () => {
      try {
        const { data } = await ok(api.POST('/webhooks', {
          body: { url: url.value.trim(), description: description.value || undefined, types: types.length ? types : undefined },
        }));
        ctx.messages.clearError();
        ctx.messages.notice(`Webhook ${data.id} created.`);
        replace(slot, secretPanel(`Signing secret of ${data.id}`, data.secret,
          'Shown only now: store it where your receiver verifies signatures. Rotate it if it leaks.',
          close));
        slot.querySelector<HTMLElement>('h2')?.setAttribute('tabindex', '-1');
        slot.querySelector<HTMLElement>('h2')?.focus();
        void refreshList(ctx);
      } catch (err) {
        ctx.messages.error(err);
      }
    });
  });
  return form;
}

// refreshList re-reads the list under the secret panel without leaving it.
async function refreshList(ctx: Ctx): Promise<void> {
  const tbody = ctx.root.querySelector('table.webhooks tbody');
  if (!tbody) return;
  const { data } = await ok(api.GET('/webhooks', { params: { query: { limit: listSize } }, signal: ctx.signal }));
  replace(tbody, data.map((w) => h('tr', null,
    h('td', { class: 'id' }, h('a', { href: `${base}/webhooks/${w.id}` }, w.id)),
    h('td', { class: 'url' }, w.url),
    h('td', null, typesText(w)),
    h('td', null, h('span', { class: w.enabled ? 'badge ok' : 'badge bad' }, stateText(w))),
    h('td', null, timeEl(w.created_at)))));
  const count = ctx.root.querySelector('.count');
  if (count && data.length < listSize) {
    const enabled = data.filter((w) => w.enabled).length;
    count.textContent = `${plural(data.length, 'subscription', 'subscriptions')}: ${enabled} enabled, ${data.length - enabled} disabled`;
  }
}

// localInput formats a time for a datetime-local input (the browser's zone).
function localInput(t: number): string {
  const d = new Date(t);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export async function webhookPage(ctx: Ctx): Promise<void> {
  const { root, signal, messages } = ctx;
  const id = ctx.params.id ?? '';
  const facts = h('div');
  const actions = h('div', { class: 'actions toolbar' });
  const result = h('div', { class: 'result', 'aria-live': 'polite' });
  const chartSlot = h('div', { class: 'chart-slot' }, h('p', { class: 'hint' }, 'Loading the attempts…'));
  const deliveriesSlot = h('div');
  const since = h('input', { type: 'datetime-local', name: 'since', required: true, value: localInput(Date.now() - 24 * 3_600_000) });
  const recover = h('button', { type: 'submit' }, 'Recover');
  const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  const recoverForm = h('form', { class: 'recover', 'aria-labelledby': 'recover-title', novalidate: true },
    h('h2', { id: 'recover-title' }, 'Recover failed deliveries'),
    h('div', { class: 'inline' }, field('Since', since, 'Re-queue every delivery that failed and was created at or after this time.'), recover));
  replace(root,
    h('p', { class: 'back' }, h('a', { href: `${base}/webhooks` }, 'All webhooks')),
    pageHead(`Webhook ${id}`),
    facts,
    actions,
    result,
    h('section', { 'aria-labelledby': 'chart-title' }, h('h2', { id: 'chart-title' }, 'Attempts in the last 24 hours'), chartSlot),
    h('section', { 'aria-labelledby': 'deliveries-title' },
      h('div', { class: 'section-head' }, h('h2', { id: 'deliveries-title' }, 'Deliveries'), refresh),
      deliveriesSlot),
    recoverForm);

  let hook: Webhook;
  const loadHook = async () => {
    const r = await ok(api.GET('/webhooks/{id}', { params: { path: { id } }, signal }));
    hook = r.data;
    renderFacts();
  };
  const renderFacts = () => {
    replace(facts, h('dl', { class: 'facts card' },
      h('dt', null, 'URL'), h('dd', { class: 'url' }, hook.url),
      h('dt', null, 'Description'), h('dd', null, hook.description || empty('no description')),
      h('dt', null, 'Event types'), h('dd', null, typesText(hook)),
      h('dt', null, 'State'), h('dd', null, h('span', { class: hook.enabled ? 'badge ok' : 'badge bad' }, stateText(hook)),
        hook.disabled_at ? [' since ', timeEl(hook.disabled_at)] : null),
      h('dt', null, 'Created'), h('dd', null, timeEl(hook.created_at))));
    renderActions();
  };
  try {
    await loadHook();
  } catch (e) {
    // Not found, or not allowed (a token without webhooks:manage that
    // opened this page by its URL: the 403 as the API says it): nothing
    // of the page can be used.
    messages.error(e);
    if (e instanceof ApiError && e.status === 404) {
      replace(facts, h('p', null, 'This subscription does not exist (or belongs to another owner). ', h('a', { href: `${base}/webhooks` }, 'Back to the webhooks.')));
    }
    for (const el of root.querySelectorAll('section')) el.remove();
    actions.remove(); recoverForm.remove();
    return;
  }

  function renderActions(): void {
    const ping = h('button', { type: 'button' }, 'Ping');
    const rotate = h('button', { type: 'button', class: 'secondary' }, 'Rotate secret');
    const toggle = h('button', { type: 'button', class: 'secondary' }, hook.enabled ? 'Disable' : 'Enable');
    const del = h('button', { type: 'button', class: 'danger' }, 'Delete');
    replace(actions, ping, rotate, toggle, del);

    ping.addEventListener('click', () => void busy(ping, async () => {
      try {
        const { data: p } = await ok(api.POST('/webhooks/{id}/ping', { params: { path: { id } } }));
        messages.clearError();
        const outcome = p.succeeded ? 'succeeded' : 'failed';
        replace(result, h('div', { class: `ping card ${p.succeeded ? 'ok' : 'bad'}`, 'aria-label': 'Ping result', role: 'group' },
          h('p', null, h('strong', null, `Ping ${outcome}`), ': ',
            p.status_code !== undefined ? `HTTP ${p.status_code}` : `no answer (${p.error ?? 'unknown error'})`,
            ` in ${p.duration_ms.toFixed(1)} ms`, ' (', h('span', { class: 'id' }, p.webhook_id), ')'),
          p.response_body ? h('pre', { class: 'body' }, p.response_body) : null));
      } catch (err) {
        messages.error(err);
      }
    }));

    rotate.addEventListener('click', () => void (async () => {
      if (!(await confirm('Rotate the signing secret?', 'A new secret is made and shown once. The current one keeps signing for 24 hours, so your receiver can switch without losing deliveries.'))) return;
      try {
        const { data } = await ok(api.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } } }));
        messages.clearError();
        messages.notice('Secret rotated.');
        replace(result, secretPanel(`New signing secret of ${id}`, data.secret,
          'Shown only now. The previous secret keeps signing for 24 hours.', () => result.replaceChildren()));
      } catch (err) {
        messages.error(err);
      }
    })());

    toggle.addEventListener('click', () => void busy(toggle, async () => {
      try {
        const { data } = await ok(api.PATCH('/webhooks/{id}', {
          params: { path: { id } },
          body: { enabled: !hook.enabled },
          headers: { 'Content-Type': 'application/merge-patch+json' },
        }));
        hook = data;
        messages.clearError();
        messages.notice(data.enabled ? `Webhook ${id} enabled.` : `Webhook ${id} disabled.`);
        if (data.enabled && data.missed_since) {
          since.value = localInput(Date.parse(data.missed_since));
          replace(result, h('p', { class: 'card' }, 'Deliveries failed or were not written from ', timeEl(data.missed_since),
            ' on. Recover below re-queues the failed ones since then; plants created while it was disabled are in the event history.'));
        }
        renderFacts();
        actions.querySelector<HTMLButtonElement>('button:nth-child(3)')?.focus();
      } catch (err) {
        messages.error(err);
      }
    }));

    del.addEventListener('click', () => void (async () => {
      if (!(await confirm(`Delete webhook ${id}?`, 'Deliveries to it stop, pending retries included. Its delivery history is deleted.'))) return;
      try {
        await ok(api.DELETE('/webhooks/{id}', { params: { path: { id } } }));
        navigate(`${base}/webhooks`, `Webhook ${id} deleted.`);
      } catch (err) {
        messages.error(err);
      }
    })());
  }

  recoverForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = Date.parse(since.value);
    if (Number.isNaN(t)) {
      messages.error('Since must be a date and time.');
      since.focus();
      return;
    }
    void busy(recover, async () => {
      try {
        const { data } = await ok(api.POST('/webhooks/{id}/recover', { params: { path: { id } }, body: { since: new Date(t).toISOString() } }));
        messages.clearError();
        messages.notice(`Recover: ${plural(Number(data.requeued), 'failed delivery', 'failed deliveries')} re-queued since ${fmtTime(data.since)}.`);
        void loadDeliveries();
      } catch (err) {
        messages.error(err);
      }
    });
  });

  // Deliveries: the attempt log's newest page, grouped by delivery.
  let deliveriesAfter = '';
  const olderStack: string[] = [];
  const loadDeliveries = async () => {
    const { data, response } = await ok(api.GET('/webhooks/{id}/deliveries', {
      params: { path: { id }, query: { limit: deliveriesSize, after: deliveriesAfter || undefined } },
      signal,
    }));
    const next = nextCursor(response)?.get('after') ?? null;
    await findTypes(data.map((a) => a.webhook_id));
    renderDeliveries(data, next);
  };

  // The event type of each delivery (a create and a delete of one plant
  // look alike otherwise): a delivery's message id is its event's id with
  // msg_ for evt_, and the event, from GET /events, has the type. Events
  // never change, so each is looked up once, among the newest events first
  // (a delivery's event is recent), at most typePages pages of 1000 back.
  // Without plants:read (or once the event is past the retention) the
  // delivery shows without its type.
  const typeOf = new Map<string, EventType>();
  const looked = new Set<string>();
  const findTypes = async (messageIDs: string[]) => {
    const missing = new Set(messageIDs.map(eventIDOf).filter((e) => !typeOf.has(e) && !looked.has(e)));
    if (missing.size === 0 || !can(scopes.plantsRead)) return;
    try {
      let hi = await lastSeq(signal);
      for (let i = 0; i < typePages && hi > 0 && missing.size > 0; i++) {
        const from = Math.max(0, hi - 1000);
        const { data } = await ok(api.GET('/events', { params: { query: { after: from, limit: 1000 } }, signal }));
        for (const e of data) {
          typeOf.set(e.id, e.type);
          missing.delete(e.id);
        }
        hi = from;
      }
    } catch (err) {
      if (signal.aborted) throw err;
      // Shown without their types; the deliveries themselves still are.
    }
    for (const e of missing) looked.add(e);
  };
  const renderDeliveries = (attempts: Delivery[], next: string | null) => {
    const groups = new Map<string, Delivery[]>();
    for (const a of attempts) {
      const g = groups.get(a.webhook_id);
      if (g) g.push(a); else groups.set(a.webhook_id, [a]);
    }
    const rows: HTMLTableRowElement[] = [];
    for (const [msg, list] of groups) {
      const latest = list[0];
      if (!latest) continue;
      const resend = h('button', { type: 'button', class: 'secondary small', 'aria-describedby': `d-${msg}` }, 'Resend');
      resend.addEventListener('click', () => void busy(resend, async () => {
        try {
          const { data } = await ok(api.POST('/webhooks/{id}/deliveries/{delivery_id}/resend', { params: { path: { id, delivery_id: msg } } }));
          messages.clearError();
          messages.notice(`Delivery ${msg} queued again (${plural(data.attempts, 'attempt', 'attempts')} so far).`);
          void (async () => {
            for (const ms of [1000, 2000, 4000]) {
              await sleep(ms, signal);
              await loadDeliveries();
            }
          })().catch(() => {});
        } catch (err) {
          messages.error(err);
        }
      }));
      rows.push(h('tr', null,
        h('td', { id: `d-${msg}` },
          h('span', { class: 'id msg' }, msg),
          h('span', { class: 'sub' }, [
            typeOf.has(eventIDOf(msg)) ? [h('span', { class: 'type' }, typeOf.get(eventIDOf(msg))), ' '] : null,
            latest.plant_id !== undefined ? `plant ${String(latest.plant_id)}` : null]),
          h('span', { class: `badge ${latest.state === 'succeeded' ? 'ok' : latest.state === 'failed' ? 'bad' : 'wait'}` }, latest.state),
          latest.next_attempt_at ? h('span', { class: 'sub' }, 'next attempt ', timeEl(latest.next_attempt_at)) : null),
        h('td', null, h('ul', { class: 'attempts' }, list.map((a) => h('li', null,
          `#${a.attempt} `,
          a.status_code !== undefined ? h('span', { class: a.status_code >= 200 && a.status_code < 300 ? 'code ok' : 'code bad' }, String(a.status_code)) : h('span', { class: 'code bad' }, 'no answer'),
          a.duration_ms !== undefined ? ` ${a.duration_ms.toFixed(1)} ms` : '',
          a.error ? [' · ', h('span', { class: 'err' }, a.error)] : null,
          ' · ', timeEl(a.attempted_at))))),
        h('td', null, can(scopes.webhooksManage) ? resend : null)));
    }
    if (rows.length === 0) rows.push(h('tr', null, h('td', { colspan: 3, class: 'empty' }, 'No delivery attempts yet.')));
    replace(deliveriesSlot,
      h('div', { class: 'table-wrap' }, h('table', { class: 'deliveries' },
        h('caption', { class: 'visually-hidden' }, 'Deliveries and their attempts, newest first'),
        h('thead', null, h('tr', null, ['Delivery and state', 'Attempts (status, duration, error)', 'Action'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, rows))),
      pager(deliveriesAfter !== '', next !== null,
        () => { deliveriesAfter = olderStack.pop() ?? ''; void loadDeliveries().catch((e2: unknown) => messages.error(e2)); },
        () => { if (next !== null) { olderStack.push(deliveriesAfter); deliveriesAfter = next; void loadDeliveries().catch((e2: unknown) => messages.error(e2)); } }));
  };

  // The chart: every attempt of the last 24 hours.
  const loadChart = async () => {
    const now = Date.now();
    const from = now - 24 * 3_600_000;
    let attempts: Delivery[] = [];
    let cursor: string | undefined;
    let partial = false;
    for (let i = 0; ; i++) {
      if (i === chartPages) { partial = true; break; }
      const r = await ok(api.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 1000, after: cursor } }, signal }));
      attempts = attempts.concat(r.data);
      const oldest = r.data[r.data.length - 1];
      const c = nextCursor(r.response)?.get('after');
      if (!c || !oldest || Date.parse(oldest.attempted_at) < from) break;
      cursor = c;
    }
    replace(chartSlot, chart(bucket(attempts, now)),
      partial ? h('p', { class: 'hint' }, `Only the latest ${chartPages * 1000} attempts are counted.`) : null);
  };

  refresh.addEventListener('click', () => void busy(refresh, async () => {
    try {
      await Promise.all([loadDeliveries(), loadChart()]);
    } catch (err) {
      messages.error(err);
    }
  }));

  await Promise.all([loadDeliveries(), loadChart()]);

  // Keep the first page fresh while the page is shown; the chart every
  // sixth time.
  void (async () => {
    for (let n = 1; ; n++) {
      await sleep(refreshEvery, signal);
      if (document.visibilityState !== 'visible' || deliveriesAfter !== '') continue;
      try {
        await loadDeliveries();
        if (n % 6 === 0) await loadChart();
      } catch (err) {
        if (signal.aborted) return;
        messages.error(err);
      }
    }
  })().catch(() => {});
}
