/**
 * The load generator of the upload-contention benchmark, in its own process so
 * it neither shares the app's event loop nor the driver's: account B's
 * requests, one reader (GET /v1/messages) and one writer (POST
 * /v1/suppressions) back to back, from `start` to `stop`; answers `stop` with
 * the latencies of that phase.
 */
import { performance } from 'node:perf_hooks';

export interface PhaseLatencies {
  type: 'latencies';
  read: number[];
  write: number[];
  errors: number;
}

const [url, key] = process.argv.slice(2);
let running = false;
let phase: PhaseLatencies = { type: 'latencies', read: [], write: [], errors: 0 };

async function loop(kind: 'read' | 'write'): Promise<void> {
  let i = 0;
  while (running) {
    const t0 = performance.now();
    const res = kind === 'read'
      ? await fetch(`${url}/v1/messages?limit=10`, { headers: { authorization: `Bearer ${key}` } })
      : await fetch(`${url}/v1/suppressions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ suppressions: [{ email: `b${process.pid}-${Date.now()}-${i++}@example.org` }] }),
      });
    await res.arrayBuffer();
    if (res.ok) phase[kind].push(performance.now() - t0);
    else phase.errors++;
  }
}

let loops: Promise<unknown> = Promise.resolve();
process.on('message', async (msg: { type: string }) => {
  if (msg.type === 'start') {
    phase = { type: 'latencies', read: [], write: [], errors: 0 };
    running = true;
    loops = Promise.all([loop('read'), loop('write')]);
  }
  if (msg.type === 'stop') {
    running = false;
    await loops;
    process.send?.(phase);
  }
  if (msg.type === 'exit') process.exit(0);
});
process.send?.({ type: 'ready' });
