// The console in a real browser (issue 23): Debian's chromium driven by puppeteer-core, against a
// real `plantstore serve` on 127.0.0.1 (a fresh SQLite file, --bootstrap-token,
// --webhook-allow-private) with a webhook receiver on 127.0.0.1.
//
//   node internal/console/e2e.mjs       (from anywhere; .ci/run runs it after npm ci in internal/console/)
//
// It signs in (a bad token refused with GET /me's 401 message) and uses every page through the
// accessible names of the issue (roles and names, never CSS classes): plants (create, filter by tag,
// next page; Search as you type, one request after the pause, word prefixes folded for case and
// accents, with the count the API's X-Total-Count gives ("4 plants match") in a live region; sorting
// by the ID, Name and Created headers' buttons (aria-sort on the th); the query in the page's URL,
// kept by Back, Forward and a reload; edit, a 412 after a change made through the API and its
// reload, delete with a confirmation, during which no request fails: the browser sees the DELETE
// finish with its 204), events (a create
// shown in "Live events" within 2 s; the Live list, scrolling, cuts no row at 1440 and 375 px; the
// stream resumed with Last-Event-ID after the server restarts; history by type and page, taking the
// live events that match its filter on its newest page), webhooks (create, the secret shown once and
// verified against a signature the receiver got, Done staying on the list, a delivery and its
// attempts, each delivery with its event type, resend, ping, the chart with labels of 12 px or more at
// 375 px, disable ("Disabled by hand")/enable, recover, rotate, delete), tokens (New token with one
// scope, plants:read: the TTL's hint states its one grammar, 30d30d and 1h30m are refused with it, 30d
// makes a token living 30 days; the pst_ secret shown once, copied, gone after Done, which stays on
// the list as on Webhooks; then signed in with it: no Webhooks or Tokens link, no New plant, no Save
// or Delete on a plant, and the webhooks page opened by its URL shows the API's 403 in role alert;
// back with the bootstrap token, Revoke with a confirmation; signing in with the revoked token is
// refused with the API's 401 message), then checks nothing is left in sessionStorage. A missing tag
// is the same mark on Plants and in the event history (a dash, read as "no tag"). On every page:
// axe-core finds no serious or critical violation, every time shown has the one format
// (2027-01-27 16:50:14), and at 375 px nothing scrolls sideways and no column header breaks inside a
// word. Throughout: no browser console error (only the failed requests the test provokes on purpose
// are expected), no request other than a cancelled read (GET) fails, no request leaves 127.0.0.1,
// and every /console answer carries the CSP, nosniff and no-referrer headers. Screenshots of each
// page at 1440 and 375 px go to .ci-artifacts/console/ (its path is printed); the first paint of the
// plants page with 100 plants is measured and printed, not asserted. Exits non-zero on any failure;
// the run is bounded (150 s after the build of the binary, CONSOLE_E2E_TIMEOUT to change it).
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import puppeteer from 'puppeteer-core';
import { removeOnExit, spawnTied, tiedBrowser } from '../../tools/server.mjs';

const dir = import.meta.dirname;
const root = resolve(dir, '..', '..');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const artifacts = join(root, '.ci-artifacts', 'console');
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
const axeSource = readFileSync(join(dir, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

const started = Date.now();
// The run's bound, from the end of the build of the binary (CONSOLE_E2E_TIMEOUT seconds on a slow machine).
const limit = Number(process.env.CONSOLE_E2E_TIMEOUT) || 150;
let watchdog;

const tmp = mkdtempSync(join(tmpdir(), 'plantstore-console-e2e-'));
removeOnExit(tmp);
const token = 'e2e_' + randomBytes(24).toString('hex'); // --bootstrap-token takes any 32-256 visible characters
// The bootstrap token has every scope (plants:read, plants:write, webhooks:manage,
// tokens:manage); the one-scope token the test makes on the Tokens page has plants:read only.
let server, browser, receiver, stderr = '';
const problems = [];
const steps = [];
const step = (s) => { steps.push(s); console.log(`  ${((Date.now() - started) / 1000).toFixed(1)} s  ${s}`); };

// ---- the server and the receiver, on loopback only ----
const freePort = () => new Promise((ok, fail) => {
  const srv = createServer();
  srv.on('error', fail);
  srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => ok(port)); });
});
const bin = join(tmp, 'plantstore');
const db = join(tmp, 'plantstore.db');
let port, base;

async function startServer() {
  server = spawnTied(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--db', db, '--create-db', '--bootstrap-token', token,
    '--webhook-allow-private', '--webhook-first-retry', '1s', '--event-stream-heartbeat', '5s', '--rate-limit', '0', '--metrics-addr='],
  { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH, HOME: tmp } });
  server.stderr.on('data', (d) => { stderr += d; });
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`plantstore exited early (${server.exitCode})`);
    try { if ((await fetch(base + '/healthz')).ok) return; } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error('plantstore not healthy after 15 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}
async function stopServer() {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
}

// The receiver answers 503 to the first delivery (so a retry and a failed attempt exist), then 200.
const received = [];
function startReceiver() {
  return new Promise((ok) => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        const deliveries = received.filter((r) => !r.body.includes('"ping"')).length;
        res.writeHead(deliveries === 1 ? 503 : 200, { 'Content-Type': 'text/plain' });
        res.end(deliveries === 1 ? 'busy' : 'ok');
      });
    });
    receiver.listen(0, '127.0.0.1', () => ok(receiver.address().port));
  });
}

async function apiCall(method, path, body, headers = {}) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

// ---- browser helpers: everything by role and accessible name ----
const aria = (name, role) => `::-p-aria(${[name !== undefined ? `[name=${JSON.stringify(name)}]` : '', role ? `[role="${role}"]` : ''].join('')})`;
let page;
async function get(name, role, timeout = 5000) {
  return page.waitForSelector(aria(name, role), { timeout, visible: true }).catch((e) => {
    throw new Error(`no ${role} named ${JSON.stringify(name)} on ${page.url()}: ${e.message}`);
  });
}
async function gone(name, role, timeout = 5000) {
  await page.waitForSelector(aria(name, role), { timeout, hidden: true });
}
async function click(name, role = 'button') { await (await get(name, role)).click(); }
async function fill(name, value, role = 'textbox') {
  const el = await get(name, role);
  await el.focus();
  await el.evaluate((e) => e.select());
  await page.keyboard.press('Backspace');
  if (value) await el.type(value);
}
async function text(handle) { return handle.evaluate((e) => e.innerText.replace(/\s+/g, ' ').trim()); }
async function bodyHas(s, timeout = 5000) {
  await page.waitForFunction((t) => document.body.innerText.includes(t), { timeout }, s).catch(() => {
    throw new Error(`the page never showed ${JSON.stringify(s)} (${page.url()})`);
  });
}
// cellWhere is the cell under the column header `column` in the row whose cell under `keyColumn`
// reads `key` (a table's rows and column headers, as assistive technology reads them): its shown text
// and its accessible name, or null.
async function cellWhere(keyColumn, key, column) {
  const td = await page.evaluateHandle((keyColumn, key, column) => {
    for (const table of document.querySelectorAll('table')) {
      const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent.trim());
      const k = heads.indexOf(keyColumn), c = heads.indexOf(column);
      if (k < 0 || c < 0) continue;
      for (const tr of table.tBodies[0]?.rows ?? []) if (tr.cells[k]?.textContent.trim() === key) return tr.cells[c];
    }
    return null;
  }, keyColumn, key, column);
  const el = td.asElement();
  if (!el) return null;
  const shown = await el.evaluate((e) => e.innerText.trim());
  const name = (await page.accessibility.snapshot({ root: el, interestingOnly: false }))?.name ?? '';
  return { shown, name };
}
// noTag checks the one empty mark: a dash on the screen, read as "no tag".
async function noTag(where, keyColumn, key) {
  const c = await cellWhere(keyColumn, key, 'Tag');
  if (!c) throw new Error(`${where}: no row with ${keyColumn} ${key}`);
  if (!c.shown.startsWith('\u2014') || c.name !== 'no tag') throw new Error(`${where}: the Tag cell of ${key} shows ${JSON.stringify(c.shown)}, named ${JSON.stringify(c.name)}; want a dash named "no tag"`);
}

async function alertText(timeout = 5000) {
  const el = await get(undefined, 'alert', timeout);
  return text(el);
}

// Expected failed requests: Chromium logs each 4xx/5xx answer and refused connection as a console
// error; those the test provokes on purpose are listed here while they may happen.
const expected = [];
function expectFailure(url, what) { const e = { url, what }; expected.push(e); return () => expected.splice(expected.indexOf(e), 1); }

async function axe(name) {
  await page.evaluate(axeSource);
  const r = await page.evaluate(async () => {
    const res = await globalThis.axe.run(document, { resultTypes: ['violations'] });
    return res.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  const bad = r.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) problems.push(`axe on ${name}: ${JSON.stringify(bad)}`);
  const minor = r.filter((v) => !bad.includes(v)).map((v) => `${v.id} (${v.impact})`);
  return minor;
}

async function shoot(name) {
  await page.setViewport({ width: 1440, height: 900 });
  await page.screenshot({ path: join(artifacts, `${name}-1440.png`), fullPage: true });
  await page.setViewport({ width: 375, height: 812 });
  await new Promise((r) => setTimeout(r, 100));
  const w = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  if (w.scroll > w.client) problems.push(`${name} at 375 px scrolls sideways: scrollWidth ${w.scroll} > ${w.client}`);
  await headersWhole(name);
  await page.screenshot({ path: join(artifacts, `${name}-375.png`), fullPage: true });
  await page.setViewport({ width: 1440, height: 900 });
}

async function checkPage(name) {
  const minor = await axe(name);
  await datesOneFormat(name);
  await shoot(name);
  step(`${name}: axe (no serious/critical${minor.length ? `; minor: ${minor.join(', ')}` : ''}), one date format, screenshots at 1440 and 375 px (column headers whole words)`);
}

// One date format everywhere: every <time>, and every chart bar's title, reads 2027-01-27 16:50:14;
// no other date or time of day (1/27/2027, Jan 27, 4:50 PM) is left in the page's text.
const timeRe = /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/;
async function datesOneFormat(name) {
  const bad = await page.evaluate((src) => {
    const one = new RegExp(`^${src}$`);
    const out = [];
    for (const t of document.querySelectorAll('time')) if (!one.test(t.textContent.trim())) out.push(`<time> ${JSON.stringify(t.textContent)}`);
    for (const t of document.querySelectorAll('svg title')) {
      const m = /^(.*): \d+ succeeded/.exec(t.textContent);
      if (!m || !one.test(m[1])) out.push(`chart bar ${JSON.stringify(t.textContent)}`);
    }
    const rest = document.body.innerText.replace(new RegExp(src, 'g'), '');
    const stray = rest.match(/\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}\b|\b\d{1,2}\/\d{1,2}\/\d{2,4}\b|(^|[^\d.:])\d{1,2}:\d{2}(:\d{2})?(?!\d)|\b[AP]M\b/g);
    for (const x of stray ?? []) out.push(`text ${JSON.stringify(x.trim())}`);
    return out;
  }, timeRe.source);
  if (bad.length) problems.push(`${name}: a time not in the one format (${timeRe.source}): ${bad.slice(0, 5).join(', ')}`);
}

// Column headers break between words, never inside one: at 375 px each word of each shown header
// lies on one line.
async function headersWhole(name) {
  const broken = await page.evaluate(() => {
    const out = [];
    for (const th of document.querySelectorAll('th, [role="columnheader"]')) {
      if (!th.getClientRects().length) continue; // a column hidden on a phone
      const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        for (const m of n.data.matchAll(/\S+/g)) {
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
          if (lines.size > 1) out.push(`"${th.textContent.trim()}" (${m[0]} over ${lines.size} lines)`);
        }
      }
    }
    return out;
  });
  if (broken.length) problems.push(`${name} at 375 px: column headers broken inside a word: ${broken.join(', ')}`);
}

async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  await stopServer();
  if (receiver) receiver.close();
  rmSync(tmp, { recursive: true, force: true, maxRetries: 5 });
}

let failed = false;
try {
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  execFileSync('go', ['build', '-o', bin, './cmd/plantstore'], { cwd: root, stdio: 'inherit' });
  watchdog = setTimeout(() => { console.error(`console e2e: FAILED: still running ${limit} s after the build`); cleanup().finally(() => process.exit(1)); }, limit * 1000);
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const receiverPort = await startReceiver();
  await startServer();

  // 100 plants, tags green/red/blue.
  const tags = ['green', 'red', 'blue'];
  for (let i = 1; i <= 100; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, k) => i + k).map(async (id) => {
      const r = await apiCall('POST', '/plants', { id, name: `Plant ${id}`, tag: tags[id % 3] });
      if (r.status !== 200) throw new Error(`seed plant ${id}: ${r.status} ${JSON.stringify(r.body)}`);
    }));
  }
  step('seeded 100 plants through the API');

  browser = await puppeteer.launch({
    executablePath: tiedBrowser(tmp, executablePath),
    headless: true,
    userDataDir: join(tmp, 'chromium-profile'),
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
  // The Copy button's result is read back from the clipboard.
  await browser.defaultBrowserContext().overridePermissions(base, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  page = await browser.newPage();
  await page.setViewport({ width: 1440, height: 900 });
  const requests = [];
  const consoleResponses = [];
  const failures = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    requests.push(r.url());
    if (u.protocol === 'data:') return;
    if (u.hostname !== '127.0.0.1') problems.push(`request to another host: ${r.method()} ${r.url()}`);
  });
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (u.host !== `127.0.0.1:${port}` || !(u.pathname === '/console' || u.pathname.startsWith('/console/'))) return;
    consoleResponses.push(u.pathname);
    const h = r.headers();
    if (h['content-security-policy'] !== CSP) problems.push(`${u.pathname}: Content-Security-Policy ${JSON.stringify(h['content-security-policy'])}`);
    if (h['x-content-type-options'] !== 'nosniff') problems.push(`${u.pathname}: X-Content-Type-Options ${h['x-content-type-options']}`);
    if (h['referrer-policy'] !== 'no-referrer') problems.push(`${u.pathname}: Referrer-Policy ${h['referrer-policy']}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = m.location()?.url ?? '';
    if (expected.some((e) => e.url.test(url) && e.what.test(m.text()))) return;
    problems.push(`console error: ${m.text()} (${url})`);
  });
  page.on('requestfailed', (r) => {
    const err = r.failure()?.errorText ?? '';
    failures.push(`${r.method()} ${r.url()} ${err}`);
    // A read the console cancelled on leaving a page (its stream, a list); a change (DELETE, POST,
    // PATCH) is never cancelled, and a request answered is never failed.
    if (err === 'net::ERR_ABORTED' && r.method() === 'GET') return;
    if (expected.some((e) => e.url.test(r.url()) && e.what.test(err))) return;
    problems.push(`request failed: ${r.url()} ${err}`);
  });

  // ---- sign in ----
  await page.goto(base + '/console', { waitUntil: 'load' });
  await get('Token', 'textbox');
  await get('Sign in', 'button');
  await checkPage('signin');
  const bad = await apiCall('GET', '/me', undefined, { Authorization: 'Bearer pst_not_a_token' });
  if (bad.status !== 401) throw new Error(`GET /me with a bad token: ${bad.status}, want 401`);
  let unexpect = expectFailure(/\/me$/, /401/);
  await fill('Token', 'pst_not_a_token');
  await click('Sign in');
  const badAlert = await alertText();
  unexpect();
  if (!badAlert.includes(bad.body.message)) throw new Error(`sign-in alert ${JSON.stringify(badAlert)} lacks the API's message ${JSON.stringify(bad.body.message)}`);
  step(`a bad token is refused with the API's message in role alert: "${bad.body.message}"`);
  await fill('Token', token);
  await click('Sign in');
  await get('Sign out', 'button');
  for (const n of ['Plants', 'Events', 'Webhooks', 'Tokens']) await get(n, 'link');
  const stored = await page.evaluate(() => Object.keys(sessionStorage).map((k) => sessionStorage.getItem(k)));
  if (!stored.includes(token)) throw new Error('the token is not in sessionStorage after Sign in');
  const cookies = await page.cookies();
  if (cookies.length) throw new Error(`the console set cookies: ${JSON.stringify(cookies)}`);
  step('signed in (GET /me: every scope): Sign out and the links Plants, Events, Webhooks, Tokens shown; the token in sessionStorage, no cookie');

  // ---- plants: first paint with 100 plants ----
  await page.goto(base + '/console/plants', { waitUntil: 'load' });
  await get('100', 'link', 10_000);
  const paint = await page.evaluate(() => ({
    fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
    table: performance.getEntriesByName('console:plants-rendered')[0]?.startTime,
    rows: document.querySelectorAll('table tbody tr').length,
  }));
  if (paint.rows !== 100) throw new Error(`the plants table has ${paint.rows} rows, want 100`);
  for (const c of ['ID', 'Name', 'Tag', 'Created']) await get(c, 'columnheader');
  await bodyHas('100 plants');
  step(`plants page: 100 rows, column headers ID/Name/Tag/Created, count "100 plants"; first contentful paint ${paint.fcp?.toFixed(0)} ms, table of 100 rendered at ${paint.table?.toFixed(0)} ms after navigation start`);
  await checkPage('plants');

  // filter
  await fill('Filter by tag', 'green', 'searchbox');
  await bodyHas('33 plants match');
  await get('99', 'link');
  await gone('1', 'link');
  await fill('Filter by tag', '', 'searchbox');
  await bodyHas('100 plants');
  step('Filter by tag green: 33 plants, only the green ones');

  // create (a big id too: read and written digit for digit)
  const big = '9007199254740993';
  for (const [id, name, tag] of [['101', 'Monstera', 'green'], [big, 'Big id', '']]) {
    await click('New plant');
    await fill('ID', id);
    await fill('Name', name);
    if (tag) await fill('Tag', tag);
    await click('Create');
    await bodyHas(`Plant ${id} created.`);
  }
  const bigRead = await fetch(`${base}/plants/${big}`, { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.text());
  if (!bigRead.includes(`"id":${big}`)) throw new Error(`plant ${big} was not stored with its exact id: ${bigRead}`);
  await bodyHas('102 plants');
  await click('Next page');
  await get('101', 'link');
  await get(big, 'link');
  await noTag('plants', 'ID', big);
  step(`New plant form: created 101 and ${big} (exact), count 102, Next page shows them; ${big}'s missing tag is a dash read as "no tag"`);

  // edit, then a 412 after a change made through the API, then reload
  await click('101', 'link');
  await get('Plant 101', 'heading');
  await fill('Name', 'Monstera deliciosa');
  await click('Save');
  await bodyHas('Plant 101 saved.');
  const afterSave = await apiCall('GET', '/plants/101');
  if (afterSave.body.name !== 'Monstera deliciosa') throw new Error(`Save did not change the plant: ${JSON.stringify(afterSave.body)}`);
  const patched = await apiCall('PATCH', '/plants/101', { name: 'Changed elsewhere' });
  if (patched.status !== 200) throw new Error(`PATCH through the API: ${patched.status}`);
  const stale = await apiCall('PATCH', '/plants/101', { tag: 'x' }, { 'If-Match': afterSave.headers.get('ETag') });
  if (stale.status !== 412) throw new Error(`a stale If-Match through the API: ${stale.status}, want 412`);
  unexpect = expectFailure(/\/plants\/101$/, /412/);
  await fill('Tag', 'big');
  await click('Save');
  const conflict = await alertText();
  if (!conflict.includes(stale.body.message)) throw new Error(`412 alert ${JSON.stringify(conflict)} lacks the API's message ${JSON.stringify(stale.body.message)}`);
  await checkPage('plant-412');
  await click('Reload');
  await page.waitForFunction((el) => el.value === 'Changed elsewhere', { timeout: 5000 }, await get('Name', 'textbox'));
  unexpect();
  step(`plant 101: Save changed it; after a change through the API, Save showed the 412 ("${stale.body.message}") and Reload showed the current name`);
  await checkPage('plant');

  // delete with a confirmation: Cancel, then Confirm
  await click('Delete');
  await get('Delete plant 101?', 'dialog');
  await click('Cancel');
  await gone('Delete plant 101?', 'dialog');
  if ((await apiCall('GET', '/plants/101')).status !== 200) throw new Error('Cancel deleted the plant');
  await click('Delete');
  await get('Delete plant 101?', 'dialog');
  const failedBefore = failures.length;
  const deletes = [];
  const onDelete = (r) => { if (r.method() === 'DELETE') deletes.push(r); };
  page.on('requestfinished', onDelete);
  await click('Confirm');
  await bodyHas('Plant 101 deleted.');
  await get('100', 'link');
  await page.waitForNetworkIdle({ idleTime: 300, timeout: 5000 }).catch(() => {});
  page.off('requestfinished', onDelete);
  if (failures.length > failedBefore) throw new Error(`requests failed during the delete: ${failures.slice(failedBefore).join('; ')}`);
  if (deletes.length !== 1 || deletes[0].response()?.status() !== 204) throw new Error(`the DELETE did not finish with its 204 in the browser: ${deletes.map((r) => `${r.url()} ${r.response()?.status()}`).join(', ')}`);
  if ((await apiCall('GET', '/plants/101')).status !== 404) throw new Error('Confirm did not delete the plant');
  step('Delete: a dialog with Confirm and Cancel; Cancel kept the plant, Confirm deleted it; the browser saw DELETE /plants/101 finish with 204 and no request fail');

  {
    // search, sort and count: through the Search box, the column headers' buttons and the live count
    const finds = [['301', 'Monstera deliciosa', 'green'], ['302', 'Money tree', 'lucky'], ['303', 'Café au lait', 'dahlia'],
      ['304', 'Monstera adansonii', 'green'], ['305', 'Lemon balm', 'herb'], ['306', 'Snake plant', 'monocot']];
    for (const [id, name, tag] of finds) { // one after the other: created_at in id order
      const r = await apiCall('POST', '/plants', { id: Number(id), name, tag });
      if (r.status !== 200) throw new Error(`seed plant ${id}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const listRequests = [];
    const onList = (r) => {
      const u = new URL(r.url());
      if (r.method() === 'GET' && u.pathname === '/plants') listRequests.push({ q: u.searchParams.get('q'), prefer: r.headers().prefer });
    };
    page.on('request', onList);
    // rows: the IDs the table lists, in order; sorted: the header whose th has aria-sort, and its value.
    const rows = () => page.evaluate(() => {
      const table = [...document.querySelectorAll('table')].find((t) => [...t.querySelectorAll('thead th')].some((th) => th.textContent.trim() === 'Created'));
      const k = [...table.querySelectorAll('thead th')].findIndex((th) => th.textContent.trim() === 'ID');
      return [...table.tBodies[0].rows].filter((tr) => tr.cells.length > 1).map((tr) => tr.cells[k].textContent.trim());
    });
    const sorted = () => page.evaluate(() => [...document.querySelectorAll('thead th[aria-sort]')]
      .filter((th) => th.getAttribute('aria-sort') !== 'none').map((th) => `${th.textContent.trim()} ${th.getAttribute('aria-sort')}`));
    const listShows = async (want, count, sort, what) => {
      await page.waitForFunction((want, count) => {
        const table = [...document.querySelectorAll('table')].find((t) => [...t.querySelectorAll('thead th')].some((th) => th.textContent.trim() === 'Created'));
        if (!table || table.getAttribute('aria-busy') === 'true') return false;
        const k = [...table.querySelectorAll('thead th')].findIndex((th) => th.textContent.trim() === 'ID');
        const ids = [...table.tBodies[0].rows].filter((tr) => tr.cells.length > 1).map((tr) => tr.cells[k].textContent.trim());
        const live = [...document.querySelectorAll('[role="status"], [aria-live="polite"]')].some((e) => e.textContent.trim() === count);
        return JSON.stringify(ids) === JSON.stringify(want) && live;
      }, { timeout: 5000 }, want, count).catch(async () => {
        const live = await page.evaluate(() => [...document.querySelectorAll('[role="status"]')].map((e) => e.textContent.trim()).filter(Boolean));
        throw new Error(`${what}: the list shows ${JSON.stringify(await rows())} with ${JSON.stringify(live)} in a live region; want ${JSON.stringify(want)} and "${count}"`);
      });
      const s = await sorted();
      if (JSON.stringify(s) !== JSON.stringify([sort])) throw new Error(`${what}: aria-sort on ${JSON.stringify(s)}, want only "${sort}"`);
    };
    const urlQuery = () => Object.fromEntries(new URL(page.url()).searchParams);
    const wantURL = (want, what) => {
      const got = urlQuery();
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${what}: the page's URL has ${JSON.stringify(got)}, want ${JSON.stringify(want)} (${page.url()})`);
    };
    const searchBox = await get('Search', 'searchbox');
    if (await searchBox.evaluate((e) => e.type) !== 'search') throw new Error('the Search box is not an input of type search');
    await searchBox.focus();
    listRequests.length = 0;
    await searchBox.type('mon');
    await listShows(['301', '302', '304', '306'], '4 plants match', 'ID ascending', 'Search "mon"');
    const typed = listRequests.map((r) => r.q);
    if (typed.includes('m') || typed.includes('mo') || !typed.includes('mon')) throw new Error(`typing "mon" asked GET /plants with q ${JSON.stringify(typed)}: want one search, for "mon", after the typing paused`);
    if (!listRequests.every((r) => r.prefer === 'count=exact')) throw new Error(`GET /plants without Prefer: count=exact: ${JSON.stringify(listRequests)}`);
    wantURL({ q: 'mon' }, 'Search "mon"');
    const created = await apiCall('GET', '/plants/301');
    const when = await page.evaluate((id) => {
      const tr = [...document.querySelectorAll('table tbody tr')].find((r) => r.cells[0]?.textContent.trim() === id);
      const t = tr?.querySelector('time');
      return t ? { datetime: t.getAttribute('datetime'), text: t.textContent.trim() } : null;
    }, '301');
    if (!created.body.created_at || when?.datetime !== created.body.created_at || !timeRe.test(when.text)) throw new Error(`plant 301's Created cell: ${JSON.stringify(when)}, want a <time datetime="${created.body.created_at}"> in the one format`);
    step(`Search "mon" (typed, one request after the pause, Prefer: count=exact): Monstera deliciosa, Money tree, Monstera adansonii, Snake plant (tag monocot), not Lemon balm; "4 plants match" in a live region; ?q=mon in the URL; Created shows created_at in a <time>`);

    await click('Name');
    await listShows(['302', '304', '301', '306'], '4 plants match', 'Name ascending', 'Name clicked');
    wantURL({ q: 'mon', sort: 'name' }, 'Name clicked');
    await click('Name');
    await listShows(['306', '301', '304', '302'], '4 plants match', 'Name descending', 'Name clicked again');
    wantURL({ q: 'mon', sort: '-name' }, 'Name clicked again');
    await page.evaluate(() => history.back());
    await listShows(['302', '304', '301', '306'], '4 plants match', 'Name ascending', 'Back');
    await page.evaluate(() => history.forward());
    await listShows(['306', '301', '304', '302'], '4 plants match', 'Name descending', 'Forward');
    await checkPage('plants-search');
    await page.reload({ waitUntil: 'load' });
    await listShows(['306', '301', '304', '302'], '4 plants match', 'Name descending', 'reload');
    const kept = await (await get('Search', 'searchbox')).evaluate((e) => e.value);
    if (kept !== 'mon') throw new Error(`after a reload the Search box has ${JSON.stringify(kept)}, want "mon"`);
    step('Name header\'s button: ascending, then descending (aria-sort on its th, order by name, ?sort=name / -name); Back and Forward restore each order; a reload keeps the search, the order and the count');

    await fill('Search', 'mon del', 'searchbox');
    await listShows(['301'], '1 plant matches', 'Name descending', 'Search "mon del"');
    await fill('Search', 'CAFE', 'searchbox');
    await listShows(['303'], '1 plant matches', 'Name descending', 'Search "CAFE"');
    await fill('Search', 'mon', 'searchbox');
    await fill('Filter by tag', 'green', 'searchbox');
    await listShows(['301', '304'], '2 plants match', 'Name descending', 'Search "mon", tag green');
    wantURL({ q: 'mon', tag: 'green', sort: '-name' }, 'Search "mon", tag green');
    await click('Created');
    await listShows(['301', '304'], '2 plants match', 'Created ascending', 'Created clicked');
    await click('Created');
    await listShows(['304', '301'], '2 plants match', 'Created descending', 'Created clicked again');
    await fill('Search', 'zzz', 'searchbox');
    await listShows([], '0 plants match', 'Created descending', 'Search "zzz"');
    await bodyHas('No plant matches.');
    await fill('Search', '', 'searchbox');
    await fill('Filter by tag', '', 'searchbox');
    await click('ID');
    const all = (await apiCall('GET', '/plants?limit=1000')).body.map((p) => String(p.id));
    await listShows(all.slice(0, 100), `${all.length} plants`, 'ID ascending', 'no search');
    wantURL({}, 'no search');
    page.off('request', onList);
    step(`Search "mon del": 1 plant matches; "CAFE" finds Café au lait; "mon" with tag green: 2, by Created ascending then descending; "zzz": 0 and "No plant matches."; emptied and by ID: "${all.length} plants"`);
  }

  // ---- events ----
  const streams = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/events/stream') streams.push({ url: r.url(), lastEventID: r.headers()['last-event-id'] }); });
  await click('Events', 'link');
  const log = await get('Live events', 'log');
  await bodyHas('Live: connected.');
  const inLog = (id, type) => page.waitForFunction((el, id, type) => [...el.querySelectorAll('li')]
    .some((li) => li.textContent.includes(type) && new RegExp(`plant ${id}(\\D|$)`).test(li.textContent)), { timeout: 2000, polling: 'mutation' }, log, id, type);
  const t0 = Date.now();
  await apiCall('POST', '/plants', { id: 200, name: 'Live one' });
  await inLog('200', 'plant.created').catch(() => { throw new Error('plant 200 did not appear in Live events within 2 s'); });
  const liveMs = Date.now() - t0;
  step(`Live events: a create made through the API appeared in ${liveMs} ms (limit 2000)`);
  await checkPage('events');

  // The Live list scrolls, and shows whole rows: none is cut by its bottom edge, at 1440 and 375 px.
  const cut = () => page.evaluate(() => {
    const el = document.querySelector('[role="log"]');
    const top = el.getBoundingClientRect().top + el.clientTop;
    const bottom = top + el.clientHeight;
    const rows = [...el.querySelectorAll('li')].map((li) => li.getBoundingClientRect());
    return { scrolls: el.scrollHeight > el.clientHeight + 1, cut: rows.filter((r) => r.top < bottom - 0.5 && r.bottom > bottom + 0.5).length };
  });
  for (const width of [1440, 375]) {
    await page.setViewport({ width, height: width === 375 ? 812 : 900 });
    await page.evaluate(() => document.querySelector('[role="log"]').scrollTo(0, 0));
    let c;
    for (const until = Date.now() + 2000; ;) {
      c = await cut();
      if (c.cut === 0 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!c.scrolls) throw new Error(`at ${width} px the Live list does not scroll: the check of its rows means nothing`);
    if (c.cut) throw new Error(`at ${width} px the Live list cuts a row at its bottom edge`);
  }
  await page.setViewport({ width: 1440, height: 900 });
  step('Live events at 1440 and 375 px: the list scrolls and its bottom edge cuts no row');

  // drop: restart the server; the console resumes with Last-Event-ID
  const events = await apiCall('GET', '/events?type=plant.created&after=100&limit=1000');
  const seq200 = String(events.body.find((e) => e.data.id === 200).seq);
  unexpect = expectFailure(/\/events\/stream/, /ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|status of 503/);
  const before = streams.length;
  await stopServer();
  await startServer();
  await page.waitForFunction(() => document.body.innerText.includes('Live: connected.'), { timeout: 15_000 });
  const resumed = streams.slice(before).find((s) => s.lastEventID !== undefined);
  if (!resumed || resumed.lastEventID !== seq200) throw new Error(`after the restart the stream resumed with Last-Event-ID ${resumed?.lastEventID}, want ${seq200} (${JSON.stringify(streams)})`);
  await apiCall('POST', '/plants', { id: 201, name: 'After the drop' });
  await inLog('201', 'plant.created');
  unexpect();
  const dup = await log.evaluate((el) => [...el.querySelectorAll('li')].filter((li) => /plant 200(\D|$)/.test(li.textContent)).length);
  if (dup !== 1) throw new Error(`plant 200 appears ${dup} times in Live events, want once`);
  step(`server restarted: the stream resumed with Last-Event-ID ${seq200}, the next create appeared, nothing twice`);

  // history: by type and page by page
  const typeSelect = await get('Event type', 'combobox');
  await typeSelect.select('plant.deleted');
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('table tbody tr')];
    return rows.length === 1 && rows[0].textContent.includes('plant.deleted') && rows[0].textContent.includes('101');
  }, { timeout: 5000 });
  // History takes live events that match its filter: a create does not show under plant.deleted, its
  // delete does.
  const historyRows = () => page.evaluate(() => [...document.querySelectorAll('table tbody tr')].map((tr) => tr.innerText.replace(/\s+/g, ' ').trim()));
  const historyHas = (id, type) => page.waitForFunction((id, type) => [...document.querySelectorAll('table tbody tr')]
    .some((tr) => tr.cells[1]?.textContent === type && tr.cells[2]?.textContent === id), { timeout: 5000, polling: 'mutation' }, id, type)
    .catch(async () => { throw new Error(`History did not take the live ${type} of plant ${id}: ${JSON.stringify(await historyRows())}`); });
  await apiCall('POST', '/plants', { id: 202, name: 'Created then deleted' });
  await inLog('202', 'plant.created');
  await new Promise((r) => setTimeout(r, 300));
  if ((await historyRows()).length !== 1) throw new Error(`History under plant.deleted took a plant.created: ${JSON.stringify(await historyRows())}`);
  await apiCall('DELETE', '/plants/202');
  await inLog('202', 'plant.deleted');
  await historyHas('202', 'plant.deleted');
  await (await get('Event type', 'combobox')).select('');
  await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 50, { timeout: 5000 });
  await click('Next page');
  await page.waitForFunction(() => document.querySelector('table tbody tr td')?.textContent === '51', { timeout: 5000 });
  step('event history: by type (plant.deleted: plant 101 only; a live create of 202 not taken, its live delete taken), 50 a page, Next page from seq 51');
  // The newest page takes a live create.
  await click('Next page');
  await page.waitForFunction(() => document.querySelector('table tbody tr td')?.textContent === '101', { timeout: 5000 });
  await gone('Next page', 'button');
  await apiCall('POST', '/plants', { id: 203, name: 'Seen in History' });
  await historyHas('203', 'plant.created');
  await noTag('events history', 'Plant ID', '203');
  await noTag('events history', 'Plant ID', '200');
  step('event history, newest page: a create made through the API while the page is open gained its row; a missing tag is the dash read as "no tag", as on Plants');

  // ---- webhooks ----
  await click('Webhooks', 'link');
  await bodyHas('0 subscriptions');
  await checkPage('webhooks-empty');
  await click('New webhook');
  const hookURL = `http://127.0.0.1:${receiverPort}/hook`;
  await fill('URL', hookURL, 'textbox');
  await click('plant.created', 'checkbox');
  await click('plant.deleted', 'checkbox');
  await click('Create');
  const secret = await page.waitForFunction(() => {
    const el = [...document.querySelectorAll('body *')].find((e) => e.children.length === 0 && e.textContent.startsWith('whsec_'));
    return el && el.textContent;
  }, { timeout: 5000 }).then((h) => h.jsonValue());
  await bodyHas('1 subscription: 1 enabled, 0 disabled');
  const hooks = await apiCall('GET', '/webhooks');
  const hookID = hooks.body[0].id;
  if (hooks.body[0].url !== hookURL || JSON.stringify(hooks.body[0].types) !== '["plant.created","plant.deleted"]') throw new Error(`created ${JSON.stringify(hooks.body[0])}`);
  step(`New webhook: ${hookID} to the loopback receiver, types plant.created and plant.deleted; the secret shown once (whsec_…)`);
  await checkPage('webhooks');
  // Done after a secret: the same on Webhooks as on Tokens: the secret is gone, the list stays, with
  // the new row in it (and focus back on the button that opened the form).
  const doneStays = async (list, button, secretShown) => {
    await click('Done');
    await page.waitForFunction((s) => !document.documentElement.outerHTML.includes(s), { timeout: 5000 }, secretShown)
      .catch(() => { throw new Error(`the secret is still in the page after Done on ${list}`); });
    const where = await page.evaluate(() => location.pathname);
    if (where !== `/console/${list.toLowerCase()}`) throw new Error(`Done on ${list} went to ${where}; want to stay on the list`);
    await get(list, 'heading');
    const focused = await page.evaluate(() => document.activeElement?.textContent);
    if (focused !== button) throw new Error(`after Done on ${list} the focus is on ${JSON.stringify(focused)}, want the ${button} button`);
  };
  await doneStays('Webhooks', 'New webhook', secret);
  await click(hookID, 'link');
  await get(`Webhook ${hookID}`, 'heading');

  // a delivery: the first attempt fails (503), the retry succeeds
  await apiCall('POST', '/plants', { id: 300, name: 'Delivered' });
  await page.waitForFunction(() => {
    const t = document.querySelector('table tbody')?.textContent ?? '';
    return t.includes('#1') && t.includes('503') && t.includes('#2') && t.includes('200') && t.includes('succeeded');
  }, { timeout: 15_000 }).catch(() => { throw new Error('the delivery and its two attempts (503 then 200) did not show'); });
  const first = received.find((r) => r.body.includes('"id":300'));
  const [whID, whTS, whSig] = [first.headers['webhook-id'], first.headers['webhook-timestamp'], first.headers['webhook-signature']];
  const want = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${whID}.${whTS}.${first.body}`).digest('base64');
  if (!whSig.split(' ').includes(`v1,${want}`)) throw new Error('the delivery is not signed with the secret the console showed');
  step('a delivery shows with its attempts (503, then 200) and status, duration; the receiver verified its signature with the secret shown');

  await click('Resend');
  await page.waitForFunction(() => (document.querySelector('table tbody')?.textContent ?? '').includes('#3'), { timeout: 10_000 })
    .catch(() => { throw new Error('the resent attempt (#3) did not show'); });
  const copies = received.filter((r) => r.headers['webhook-id'] === whID).length;
  if (copies !== 3) throw new Error(`the receiver got the delivery ${copies} times, want 3 (503, retry, resend)`);
  step('Resend: a third attempt with the same webhook-id reached the receiver and shows');

  await click('Ping');
  await bodyHas('Ping succeeded: HTTP 200');
  if (!received.some((r) => r.body.includes('"type":"ping"'))) throw new Error('the receiver got no ping');
  step('Ping: the result (succeeded, HTTP 200) shown; the receiver got it');

  // role img: Chromium's accessibility tree calls it "image" (ARIA 1.3 made img a synonym).
  const img = await get('Attempts in the last 24 hours', 'image');
  if (await img.evaluate((e) => e.tagName.toLowerCase() + ':' + e.getAttribute('role')) !== 'svg:img') throw new Error('the chart is not an svg with role img');
  await click('Refresh');
  await bodyHas('Succeeded 2');
  await bodyHas('Failed 1');
  step('chart: an svg role img "Attempts in the last 24 hours" with 2 succeeded and 1 failed attempts');
  // At 375 px the chart's labels are at least 12 CSS pixels (the drawing is not shrunk to fit).
  await page.setViewport({ width: 375, height: 812 });
  const labelSizes = () => page.evaluate(() => [...document.querySelector('svg[role="img"]').querySelectorAll('text')]
    .map((t) => parseFloat(getComputedStyle(t).fontSize) * (t.getScreenCTM()?.a ?? 0)));
  let sizes = [];
  for (const until = Date.now() + 2000; ;) {
    sizes = await labelSizes();
    if ((sizes.length && Math.min(...sizes) >= 11.95) || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.setViewport({ width: 1440, height: 900 });
  if (!sizes.length || Math.min(...sizes) < 11.95) throw new Error(`at 375 px the chart's labels are ${sizes.map((x) => x.toFixed(1)).join(', ')} px; want at least 12`);
  step(`chart at 375 px: its ${sizes.length} labels are ${Math.min(...sizes).toFixed(1)} px or more`);
  // Each delivery says its event's type: a create and a delete of plant 300 tell apart.
  await apiCall('DELETE', '/plants/300');
  const deliveryTypes = () => page.evaluate(() => [...document.querySelectorAll('table tbody tr')].map((tr) => tr.cells[0]?.innerText.replace(/\s+/g, ' ') ?? ''));
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('table tbody tr')].map((tr) => tr.cells[0]?.innerText.replace(/\s+/g, ' ') ?? '');
    return rows.some((r) => r.includes('plant.deleted plant 300')) && rows.some((r) => r.includes('plant.created plant 300'));
  }, { timeout: 15_000 }).catch(async () => { throw new Error(`the deliveries do not say their event types: ${JSON.stringify(await deliveryTypes())}`); });
  step('deliveries: the create and the delete of plant 300 show as "plant.created plant 300" and "plant.deleted plant 300"');
  await checkPage('webhook');
  // The README's picture: this page's top at 1280 px (committed by hand as docs/console.png).
  await page.setViewport({ width: 1280, height: 1000 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'readme.png') });
  await page.setViewport({ width: 1440, height: 900 });

  await click('Disable');
  await get('Enable', 'button');
  if ((await apiCall('GET', `/webhooks/${hookID}`)).body.enabled !== false) throw new Error('Disable did not disable');
  await bodyHas('Disabled by hand');
  if (await page.evaluate(() => /disabled \(|by hand\)/i.test(document.body.innerText))) throw new Error('the state still reads "Disabled (disabled by hand)"');
  await click('Enable');
  await get('Disable', 'button');
  if ((await apiCall('GET', `/webhooks/${hookID}`)).body.enabled !== true) throw new Error('Enable did not enable');
  await click('Recover');
  await bodyHas('re-queued since');
  await datesOneFormat('webhook, after Recover');
  step('Disable (the state reads "Disabled by hand") then Enable (checked through the API); Recover answered, its time in the one format');

  await click('Rotate secret');
  await get('Rotate the signing secret?', 'dialog');
  await click('Confirm');
  const secret2 = await page.waitForFunction((old) => {
    const el = [...document.querySelectorAll('body *')].find((e) => e.children.length === 0 && e.textContent.startsWith('whsec_') && e.textContent !== old);
    return el && el.textContent;
  }, { timeout: 5000 }, secret).then((h) => h.jsonValue());
  step(`Rotate secret: confirmed in a dialog; a new secret shown once (${secret2.slice(0, 6)}…)`);

  unexpect = expectFailure(/\/webhooks\/whk_/, /404/);
  await click('Delete');
  await get(`Delete webhook ${hookID}?`, 'dialog');
  await click('Confirm');
  await bodyHas(`Webhook ${hookID} deleted.`);
  await bodyHas('0 subscriptions');
  unexpect();
  step('Delete: confirmed; the subscription is gone');

  // ---- tokens: a token with one scope, made on the Tokens page ----
  await click('Tokens', 'link');
  await get('Tokens', 'heading');
  for (const c of ['ID', 'Scopes', 'Created', 'Expires', 'Status', 'Last four']) await get(c, 'columnheader');
  await bodyHas('1 token: 1 active, 0 revoked, 0 expired');
  await bodyHas('this console\u2019s token');
  await click('New token');
  const allScopes = ['plants:read', 'plants:write', 'webhooks:manage', 'tokens:manage'];
  for (const s of allScopes) await get(s, 'checkbox');
  await click('plants:read', 'checkbox');
  await fill('TTL', 'a month');
  await click('Create');
  const ttlAlert = await alertText();
  if (!ttlAlert.includes('is not a lifetime')) throw new Error(`a TTL of "a month": alert ${JSON.stringify(ttlAlert)}`);
  if ((await apiCall('GET', '/tokens')).body.length !== 1) throw new Error('a refused TTL created a token');
  // One TTL grammar, the CLI's: a whole number of seconds, or with one unit; nothing repeated or mixed.
  const grammar = 'a whole number of seconds, or with one unit s, m, h or d: 3600, 3600s, 90m, 720h, 30d';
  const ttlHints = await (await get('TTL', 'textbox')).evaluate((e) => (e.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent));
  if (ttlHints[0] !== grammar) throw new Error(`the TTL's hint reads ${JSON.stringify(ttlHints[0])}, want ${JSON.stringify(grammar)}`);
  for (const bad of ['30d30d', '1h30m']) {
    await fill('TTL', bad);
    await click('Create');
    const a = await alertText();
    if (!a.includes(`TTL "${bad}" is not a lifetime`) || !a.includes(grammar)) throw new Error(`a TTL of "${bad}": alert ${JSON.stringify(a)}, want it refused with the grammar`);
    if ((await apiCall('GET', '/tokens')).body.length !== 1) throw new Error(`a TTL of "${bad}" created a token`);
  }
  await fill('TTL', '30d');
  await click('Create');
  const oneScope = await page.waitForFunction(() => {
    const el = [...document.querySelectorAll('body *')].find((e) => e.children.length === 0 && e.textContent.startsWith('pst_'));
    return el && el.textContent;
  }, { timeout: 5000 }).then((h) => h.jsonValue());
  if (!/^pst_[0-9a-f]{72}$/.test(oneScope)) throw new Error(`the secret shown is not a token: ${oneScope}`);
  await bodyHas('2 tokens: 2 active, 0 revoked, 0 expired');
  const made = (await apiCall('GET', '/tokens')).body.find((t) => t.last4 === oneScope.slice(-4));
  if (!made || JSON.stringify(made.scopes) !== '["plants:read"]' || made.status !== 'active') throw new Error(`the token made: ${JSON.stringify(made)}`);
  const life = (Date.parse(made.expires_at) - Date.parse(made.created_at)) / 1000;
  if (life !== 30 * 86_400) throw new Error(`TTL 30d made a token living ${life} s, want ${30 * 86_400}`);
  if ((await fetch(base + '/me', { headers: { Authorization: `Bearer ${oneScope}` } }).then((r) => r.json())).token_id !== made.id) throw new Error('the secret shown is not the token made');
  await bodyHas(made.id);
  await bodyHas(made.last4);
  await checkPage('tokens');
  await click('Copy');
  await bodyHas('Copied.');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  if (copied !== oneScope) throw new Error('Copy did not put the secret on the clipboard');
  await doneStays('Tokens', 'New token', oneScope);
  const kept = await page.evaluate((s) => [sessionStorage, localStorage].some((st) => Object.keys(st).some((k) => (st.getItem(k) ?? '').includes(s))), oneScope);
  if (kept) throw new Error('the console stored the new secret');
  step(`New token: plants:read, TTL 30d (the hint states the grammar; "a month", "30d30d" and "1h30m" refused first with it, nothing sent); ${made.id} lives 30 days; its pst_ secret shown once, copied, gone from the page after Done (the list stays, as on Webhooks), stored nowhere`);

  // ---- signed in with the one-scope token: what it lacks is hidden ----
  await click('Sign out');
  await fill('Token', oneScope);
  await click('Sign in');
  await get('Sign out', 'button');
  await get('Plants', 'link');
  await get('Events', 'link');
  await get('ID', 'columnheader');
  const plantCount = (await apiCall('GET', '/plants?limit=1000')).body.length;
  await bodyHas(`${plantCount} plants`);
  const absent = async (name, role) => { if (await page.$(aria(name, role))) throw new Error(`a ${role} ${JSON.stringify(name)} is shown to a plants:read token (${page.url()})`); };
  // (no Previous page either: the first page has none, whatever was paged before sign-out)
  for (const [n, r] of [['Webhooks', 'link'], ['Tokens', 'link'], ['New plant', 'button'], ['Previous page', 'button']]) await absent(n, r);
  await checkPage('plants-read-only');
  await click('1', 'link');
  await get('Plant 1', 'heading');
  const nameBox = await get('Name', 'textbox');
  if (!(await nameBox.evaluate((e) => e.readOnly))) throw new Error('the plant form is editable for a plants:read token');
  for (const n of ['Save', 'Delete']) await absent(n, 'button');
  step('signed in with the plants:read token: Plants and Events links only (no Webhooks, no Tokens), no New plant; a plant read-only, without Save or Delete');

  // The 403 path: a page it lacks the scope for, opened by its URL (no link leads there).
  const forbidden = await fetch(base + '/webhooks?limit=100', { headers: { Authorization: `Bearer ${oneScope}` } });
  const forbiddenBody = await forbidden.json();
  if (forbidden.status !== 403) throw new Error(`GET /webhooks with the plants:read token: ${forbidden.status}, want 403`);
  unexpect = expectFailure(/\/webhooks\?limit=100$/, /403/);
  await page.goto(base + '/console/webhooks', { waitUntil: 'load' });
  const denied = await alertText();
  unexpect();
  if (!denied.includes(forbiddenBody.message) || !denied.includes('403')) throw new Error(`403 alert ${JSON.stringify(denied)} lacks the API's message ${JSON.stringify(forbiddenBody.message)} or the status`);
  for (const [n, r] of [['Webhooks', 'link'], ['New webhook', 'button']]) await absent(n, r);
  await checkPage('webhooks-403');
  step(`/console/webhooks opened by its URL with the plants:read token (the session kept over the reload): the API's 403 in role alert ("${denied}")`);

  // ---- back with the bootstrap token: revoke the one-scope token ----
  await click('Sign out');
  await fill('Token', token);
  await click('Sign in');
  await click('Tokens', 'link');
  await bodyHas('2 tokens: 2 active, 0 revoked, 0 expired');
  const revokeOf = async (id) => {
    for (const row of await page.$$('table tbody tr')) {
      if ((await text(row)).includes(id)) return row.$(aria('Revoke', 'button'));
    }
    return null;
  };
  const revoke = await revokeOf(made.id);
  if (!revoke) throw new Error(`no Revoke button in the row of ${made.id}`);
  await revoke.click();
  await get(`Revoke token ${made.id}?`, 'dialog');
  await click('Cancel');
  await gone(`Revoke token ${made.id}?`, 'dialog');
  if ((await apiCall('GET', `/tokens/${made.id}`)).body.status !== 'active') throw new Error('Cancel revoked the token');
  await (await revokeOf(made.id)).click();
  await get(`Revoke token ${made.id}?`, 'dialog');
  await click('Confirm');
  await bodyHas(`Token ${made.id} revoked.`);
  await bodyHas('2 tokens: 1 active, 1 revoked, 0 expired');
  if ((await apiCall('GET', `/tokens/${made.id}`)).body.status !== 'revoked') throw new Error('Confirm did not revoke the token');
  if (await revokeOf(made.id)) throw new Error('a revoked token still has a Revoke button');
  await checkPage('tokens-revoked');
  step(`Revoke ${made.id}: a dialog with Confirm and Cancel; Cancel kept it, Confirm revoked it (status revoked through the API)`);

  // ---- the revoked token is refused; nothing is left behind ----
  await click('Sign out');
  await get('Sign in', 'button');
  if (await page.evaluate(() => sessionStorage.length) !== 0) throw new Error('sessionStorage keeps the token after Sign out');
  const refused = await fetch(base + '/me', { headers: { Authorization: `Bearer ${oneScope}` } });
  const refusedBody = await refused.json();
  if (refused.status !== 401) throw new Error(`GET /me with the revoked token: ${refused.status}, want 401`);
  unexpect = expectFailure(/\/me$/, /401/);
  await fill('Token', oneScope);
  await click('Sign in');
  const refusedAlert = await alertText();
  unexpect();
  if (!refusedAlert.includes(refusedBody.message)) throw new Error(`sign-in alert ${JSON.stringify(refusedAlert)} lacks the API's message ${JSON.stringify(refusedBody.message)}`);
  await get('Sign in', 'button');
  const left = await page.evaluate(() => sessionStorage.length);
  if (left !== 0) throw new Error(`sessionStorage keeps ${left} item(s) after a refused sign-in`);
  step(`Sign out, then sign-in with the revoked token refused with the API's 401 message ("${refusedBody.message}"); sessionStorage empty`);

  // ---- what the page did overall ----
  const assetResponses = consoleResponses.filter((p) => p.startsWith('/console/assets/'));
  if (!assetResponses.length || !consoleResponses.includes('/console')) throw new Error(`too few console responses seen: ${consoleResponses.join(', ')}`);
  const hosts = new Set(requests.map((u) => new URL(u).host));
  step(`${requests.length} requests, all to ${[...hosts].filter(Boolean).join(', ')} (and data: URLs); ${consoleResponses.length} console answers, each with the CSP, nosniff and no-referrer`);
  if (problems.length) throw new Error(problems.join('\n'));
  console.log(`console e2e: passed in ${((Date.now() - started) / 1000).toFixed(1)} s; first paint of the plants page with 100 plants: ${paint.fcp?.toFixed(0)} ms (first contentful paint), table at ${paint.table?.toFixed(0)} ms; live event in ${liveMs} ms; screenshots in ${artifacts}`);
} catch (e) {
  failed = true;
  console.error('console e2e: FAILED:', e.message);
  if (problems.length) console.error(problems.join('\n'));
  if (page) await page.screenshot({ path: join(artifacts, 'failure.png'), fullPage: true }).catch(() => {});
  if (stderr) console.error('plantstore stderr (last 4000 characters):\n' + stderr.slice(-4000));
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(failed ? 1 : 0);
