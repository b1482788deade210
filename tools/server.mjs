// Helpers the browser and TypeScript tests share to run plantstore serve on
// loopback.
import { createServer } from 'node:net';

// freePort returns a port on 127.0.0.1 that was free a moment ago.
export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => ok(port)); });
  });
}

// waitHealthy polls url/healthz until it answers 200, the process exits or ms pass.
export async function waitHealthy(url, proc, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`plantstore exited early (${proc.exitCode})`);
    try { if ((await fetch(url + '/healthz')).ok) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`plantstore not healthy after ${ms} ms`);
}

// What a browser or TypeScript run starts dies with it, even when node is
// killed (SIGKILL, a CI timeout), so that no plantstore, Chromium or folder
// outlives the run:
//   - children start through setpriv --pdeathsig KILL (util-linux): the kernel
//     kills them when node's main thread, which spawns them, exits;
//   - Chromium starts through a wrapper script that does the same (puppeteer
//     and playwright take one executable path); its own helpers (zygote,
//     renderers) exit when the browser process goes;
//   - the run's temporary folder is removed by a detached sh that reads a pipe
//     from node: the pipe closes when node exits, however it exits.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

// spawnTied is child_process.spawn for a child that must die with node.
export function spawnTied(cmd, args, opts) {
  if (!setpriv) return spawn(cmd, args, opts);
  return spawn(setpriv, ['--pdeathsig', 'KILL', '--', cmd, ...args], opts);
}

// tiedBrowser writes, in dir, a wrapper that execs executablePath tied to
// node's life, and returns its path (executablePath itself without setpriv).
export function tiedBrowser(dir, executablePath) {
  if (!setpriv) return executablePath;
  const wrapper = join(dir, 'chromium-tied');
  writeFileSync(wrapper, `#!/bin/sh\nexec ${setpriv} --pdeathsig KILL -- '${executablePath.replaceAll("'", "'\\''")}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

// removeOnExit removes dir once node has exited, however it exits.
export function removeOnExit(dir) {
  const sh = spawn('/bin/sh', ['-c', 'cat >/dev/null; rm -rf -- "$1"', 'sh', dir],
    { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  sh.unref();
  sh.stdin.unref?.();
  sh.stdin.on('error', () => {});
}
