// End-to-end check of the /docs page in a real browser (Debian's chromium,
// driven by playwright-core; no browser download).
//
//   node tools/e2e-docs.mjs        (from the repository root; .ci/run runs it)
//
// Builds plantstore, serves it on 127.0.0.1 with a temporary SQLite file,
// opens /docs headless with every host but 127.0.0.1 unresolvable (nothing
// leaves the machine), waits until Redoc lists the operations, saves
// test-output/docs.png, and exits non-zero on any failure (page errors and
// failed requests included).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const root = resolve(import.meta.dirname, '..');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const outDir = join(root, 'test-output');
const screenshot = join(outDir, 'docs.png');
// What the page must show: the operations' summaries (sidebar) and a description.
const expected = ['Create a plant', 'List plants', 'Get a plant', 'Delete a plant', 'Creates a new plant in the store'];

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => ok(port)); });
  });
}

async function waitHealthy(url, proc, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`plantstore exited early (${proc.exitCode})`);
    try { if ((await fetch(url + '/healthz')).ok) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`plantstore not healthy after ${ms} ms`);
}

const tmp = mkdtempSync(join(tmpdir(), 'plantstore-e2e-docs-'));
let server, browser, stderr = '';
let failed = false;
try {
  const bin = join(tmp, 'plantstore');
  execFileSync('go', ['build', '-o', bin, './cmd/plantstore'], { cwd: root, stdio: 'inherit' });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  server = spawn(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--db', join(tmp, 'plantstore.db'), '--create-db', '--no-bootstrap-admin'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH, HOME: tmp } });
  server.stderr.on('data', (d) => { stderr += d; });
  await waitHealthy(url, server, 10000);

  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
  // Tall: Redoc renders lazily what is in view.
  const page = await browser.newPage({ viewport: { width: 1280, height: 6000 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // Redoc's logo from cdn.redoc.ly is refused by the page's CSP on purpose.
    if (new URL(r.url()).host === `127.0.0.1:${port}`) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  const res = await page.goto(url + '/docs', { waitUntil: 'load', timeout: 20000 });
  if (!res || res.status() !== 200) throw new Error(`GET /docs: status ${res && res.status()}`);
  for (const text of expected) {
    await page.getByText(text, { exact: false }).first().waitFor({ state: 'visible', timeout: 20000 });
  }
  const title = await page.title();
  mkdirSync(outDir, { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: false });
  if (problems.length) throw new Error(problems.join('\n'));
  console.log(`e2e-docs: /docs ("${title}") lists the operations (${expected.join(', ')}); screenshot ${screenshot}`);
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
