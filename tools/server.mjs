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
