// End-to-end check of the contract as a TypeScript integrator meets it: generate a client
// with openapi-typescript + openapi-fetch from the document a running server serves, type-check
// tools/ts/plants.ts against it (tsc, strict, no non-null assertions), then run it.
//
//   node tools/e2e-typescript.mjs      (from the repository root; .ci/run runs it)
//
// Builds plantstore, serves it on 127.0.0.1 with a temporary SQLite file (--create-db
// --no-bootstrap-admin), makes a token with `plantstore token create`, fetches /openapi.json,
// generates openapi.d.ts from it in a temporary directory, refuses `!`, `any` and ts-ignore in
// plants.ts, runs `tsc --noEmit` (strict), emits JS and runs it against the server: create,
// page (Link rel="next"), patch, delete. Also checks that the check can fail: the same script
// must not compile against a copy of the document whose Plant.id is optional again.
// Exits non-zero on any failure. Nothing leaves 127.0.0.1.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { freePort, removeOnExit, spawnTied, waitHealthy } from './server.mjs';

const root = resolve(import.meta.dirname, '..');
const tools = join(root, 'tools');
const tsc = join(tools, 'node_modules', 'typescript', 'bin', 'tsc');

// forbidden lists what plants.ts must not use to get past the types: non-null assertions,
// `any`, and comments that silence the checker.
function forbidden(file) {
  const text = readFileSync(file, 'utf8');
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const found = [];
  const at = (n) => `${file}:${src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1}`;
  (function walk(n) {
    if (n.kind === ts.SyntaxKind.NonNullExpression) found.push(`${at(n)}: non-null assertion ${n.getText(src)}`);
    if (n.kind === ts.SyntaxKind.AnyKeyword) found.push(`${at(n)}: any`);
    ts.forEachChild(n, walk);
  })(src);
  for (const m of text.matchAll(/@ts-(ignore|expect-error|nocheck)/g)) found.push(`${file}: @ts-${m[1]}`);
  return found;
}

// project writes a TypeScript project in dir: plants.ts, tsconfig.json, the types generated
// from doc, and node_modules pointing at tools/node_modules (openapi-fetch).
async function project(dir, doc) {
  mkdirSync(dir, { recursive: true });
  for (const f of ['plants.ts', 'tsconfig.json']) cpSync(join(tools, 'ts', f), join(dir, f));
  writeFileSync(join(dir, 'package.json'), '{"private": true, "type": "module"}\n');
  symlinkSync(join(tools, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc, null, 2));
  const types = astToString(await openapiTS(pathToFileURL(join(dir, 'openapi.json'))));
  writeFileSync(join(dir, 'openapi.d.ts'), types);
  return types;
}

function typeCheck(dir) {
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '-p', join(dir, 'tsconfig.json')], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
    return '';
  } catch (e) {
    return (e.stdout || '') + (e.stderr || '') || e.message;
  }
}

const tmp = mkdtempSync(join(tmpdir(), 'plantstore-e2e-ts-'));
removeOnExit(tmp);
let server, stderr = '';
let failed = false;
try {
  const problems = forbidden(join(tools, 'ts', 'plants.ts'));
  if (problems.length) throw new Error('plants.ts gets past the types:\n' + problems.join('\n'));

  const bin = join(tmp, 'plantstore');
  execFileSync('go', ['build', '-o', bin, './cmd/plantstore'], { cwd: root, stdio: 'inherit' });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const db = join(tmp, 'plantstore.db');
  const env = { PATH: process.env.PATH, HOME: tmp };
  server = spawnTied(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--metrics-addr=', '--db', db, '--create-db', '--no-bootstrap-admin'],
    { stdio: ['ignore', 'ignore', 'pipe'], env });
  server.stderr.on('data', (d) => { stderr += d; });
  await waitHealthy(url, server, 10000);
  const token = execFileSync(bin, ['token', 'create', '--owner', 'e2e-typescript', '--db', db], { env, encoding: 'utf8' }).trim();

  // The served document, as an integrator gets it.
  const res = await fetch(url + '/openapi.json');
  if (!res.ok) throw new Error(`GET /openapi.json: ${res.status}`);
  const doc = await res.json();
  const servers = JSON.stringify(doc.servers);
  if (!Array.isArray(doc.servers) || doc.servers.length !== 1 || doc.servers[0].url !== '/') {
    throw new Error(`servers = ${servers}, want one relative "/" (no fixed host or port)`);
  }

  const dir = join(tmp, 'ts');
  const types = await project(dir, doc);
  if (!types.includes('"/plants/{id}"')) throw new Error('generated types lack /plants/{id}');
  const errors = typeCheck(dir);
  if (errors) throw new Error('tsc --noEmit (strict) failed:\n' + errors);
  console.log(`e2e-typescript: plants.ts type-checks (strict, no !) against the types generated from ${url}/openapi.json`);

  // The check can fail: with Plant.id optional (as it once was) the same script does not compile.
  const loose = structuredClone(doc);
  loose.components.schemas.Plant.required = loose.components.schemas.Plant.required.filter((r) => r !== 'id');
  await project(join(tmp, 'ts-loose'), loose);
  const looseErrors = typeCheck(join(tmp, 'ts-loose'));
  if (!/'number \| undefined' is not assignable to type 'number'/.test(looseErrors)) {
    throw new Error('plants.ts compiled against a Plant with an optional id: the type check proves nothing\n' + looseErrors);
  }

  // Run it for real.
  execFileSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir, stdio: 'inherit' });
  const { run } = await import(pathToFileURL(join(dir, 'out', 'plants.js')).href);
  await run(url, token, (line) => console.log(`e2e-typescript: ${line}`));
  console.log(`e2e-typescript: the generated TypeScript client created, paged, patched and deleted plants on ${url}`);
} catch (e) {
  failed = true;
  console.error('e2e-typescript: FAILED:', e.message);
  if (stderr) console.error('plantstore stderr:\n' + stderr);
} finally {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => { server.once('exit', r); setTimeout(r, 5000); });
  }
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
