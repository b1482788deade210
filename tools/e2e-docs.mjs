// End-to-end check of the /docs page in a real browser (Debian's chromium,
// driven by playwright-core; no browser download).
//
//   node tools/e2e-docs.mjs        (from the repository root; .ci/run runs it)
//
// Builds plantstore, serves it on 127.0.0.1 with a temporary SQLite file,
// opens /docs headless with every host but 127.0.0.1 unresolvable (nothing
// leaves the machine), checks that Redoc's sidebar groups the operations by
// the document's tags (plants, webhooks, events; no "other" group, no operation
// outside a group), opens each group and an operation, saves
// test-output/docs.png, and exits non-zero on any failure: page errors, failed
// requests (to any host), Content-Security-Policy violations, an image that did
// not load, or a /docs answer without its CSP header (frame-ancestors 'none').
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { freePort, removeOnExit, spawnTied, tiedBrowser, waitHealthy } from './server.mjs';

const root = resolve(import.meta.dirname, '..');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const outDir = join(root, 'test-output');
const screenshot = join(outDir, 'docs.png');
// The sidebar's tag groups and the operations (summaries) each must hold; more operations may
// join a group. Opening "Create a plant" must show its description.
const groups = {
  plants: ['List plants', 'Create a plant', 'Get a plant', 'Delete a plant'],
  webhooks: ['List webhook subscriptions', 'Subscribe a URL to new plants or plant events', 'Get a webhook subscription',
    'Change a webhook subscription', 'Delete a webhook subscription', "Rotate a subscription's signing secret",
    'Delivery attempts of a subscription', 'Resend one delivery', 'Re-queue the failed deliveries since a time',
    'Send a test ping'],
  events: ['List events', 'Stream events (Server-Sent Events)'],
  tokens: ['List tokens', 'Create a token', 'Get a token', 'Revoke a token', 'Who the token is'],
};
const description = 'Creates a new plant in the store';

// sidebar lists Redoc's menu entries: label text and link (#/section/..., #/TAG, #/TAG/OPERATION).
function sidebar(page) {
  return page.$$eval('li[data-testid="menu-item-label"]', (els) => els.map((e) => ({
    text: e.innerText.replace(/\s+/g, ' ').trim(),
    href: e.closest('a')?.getAttribute('href') ?? '',
    group: !!e.querySelector('[data-component-name*="Chevron"]'),
  })));
}

const tmp = mkdtempSync(join(tmpdir(), 'plantstore-e2e-docs-'));
removeOnExit(tmp);
let server, browser, stderr = '';
let failed = false;
try {
  const bin = join(tmp, 'plantstore');
  execFileSync('go', ['build', '-o', bin, './cmd/plantstore'], { cwd: root, stdio: 'inherit' });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  server = spawnTied(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--metrics-addr=', '--db', join(tmp, 'plantstore.db'), '--create-db', '--no-bootstrap-admin'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH, HOME: tmp } });
  server.stderr.on('data', (d) => { stderr += d; });
  await waitHealthy(url, server, 10000);

  browser = await chromium.launch({
    executablePath: tiedBrowser(tmp, executablePath),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
  // Tall: Redoc renders lazily what is in view.
  const page = await browser.newPage({ viewport: { width: 1280, height: 6000 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  // Every CSP violation (a refused image, script, style, connection...), as the page sees it, but
  // one: the Redoc bundle probes whether it may compile code (try { Function(...) } catch) to run
  // its search index in a worker, and on the refusal, which the policy means, indexes in the page.
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      if (e.blockedURI === 'eval' && e.sourceFile.endsWith('/docs/redoc.standalone.js')) return;
      window.cspViolations.push(`${e.violatedDirective} refused ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`);
    });
  });
  const res = await page.goto(url + '/docs', { waitUntil: 'load', timeout: 20000 });
  if (!res || res.status() !== 200) throw new Error(`GET /docs: status ${res && res.status()}`);
  const csp = (await res.allHeaders())['content-security-policy'] || '';
  if (!/(^|;)\s*frame-ancestors 'none'\s*(;|$)/.test(csp)) {
    throw new Error(`GET /docs: Content-Security-Policy header ${JSON.stringify(csp)} lacks frame-ancestors 'none'`);
  }
  const menu = page.locator('li[data-testid="menu-item-label"]');
  await page.locator('a[href="#/plants"]').first().waitFor({ state: 'visible', timeout: 20000 });
  const shown = (await sidebar(page)).filter((m) => m.group && /^#\/[^/]+$/.test(m.href)).map((m) => m.text);
  if (JSON.stringify(shown) !== JSON.stringify(Object.keys(groups))) {
    throw new Error(`sidebar groups = ${JSON.stringify(shown)}, want ${JSON.stringify(Object.keys(groups))} (tags, no "other")`);
  }
  const found = [];
  for (const [tag, ops] of Object.entries(groups)) {
    // Open the group (an accordion: opening one may close another), then read its operations.
    await page.locator(`a[href="#/${tag}"]`).first().click();
    await page.locator(`a[href^="#/${tag}/"]`).first().waitFor({ state: 'visible', timeout: 10000 });
    const items = await sidebar(page);
    const stray = items.filter((m) => /^#\/[^/]+\/[^/]+$/.test(m.href) && !m.href.startsWith('#/section/') && !(m.href.split('/')[1] in groups));
    if (stray.length) throw new Error(`operations outside the tag groups: ${JSON.stringify(stray)}`);
    const inGroup = items.filter((m) => m.href.startsWith(`#/${tag}/`)).map((m) => m.text);
    for (const op of ops) {
      if (!inGroup.some((t) => t === op || t.startsWith(op + ' '))) throw new Error(`group ${tag} lacks "${op}": it has ${JSON.stringify(inGroup)}`);
    }
    found.push(`${tag}: ${inGroup.length} operations`);
  }
  await page.locator('a[href="#/plants"]').first().click();
  await menu.filter({ hasText: /^Create a plant/ }).first().click();
  await page.getByText(description, { exact: false }).first().waitFor({ state: 'visible', timeout: 20000 });
  const title = await page.title();
  mkdirSync(outDir, { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: false });
  // No image refused or broken (Redoc's "API docs by" logo among them).
  const images = await page.$$eval('img', (els) => els.map((e) => ({ src: e.currentSrc || e.src, ok: e.complete && e.naturalWidth > 0 })));
  for (const img of images) if (!img.ok) problems.push(`image not shown: ${img.src}`);
  if (!images.some((img) => img.src.endsWith('/docs/redocly.svg'))) problems.push(`the Redoc logo is not shown: images ${JSON.stringify(images)}`);
  problems.push(...(await page.evaluate(() => window.cspViolations)).map((v) => `CSP violation: ${v}`));
  if (problems.length) throw new Error(problems.join('\n'));
  console.log(`e2e-docs: /docs ("${title}") groups the operations by tag (${found.join('; ')}) and shows "${description}", with no CSP violation and ${images.length} images shown; screenshot ${screenshot}`);
} catch (e) {
  failed = true;
  console.error('e2e-docs: FAILED:', e.message);
  if (stderr) console.error('plantstore stderr:\n' + stderr);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => { server.once('exit', r); setTimeout(r, 5000); });
  }
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
