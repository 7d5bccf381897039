/**
 * `node dist/bench/profile-compare.js A.cpuprofile B.cpuprofile [--top=25] [--by=file|function]`:
 * the main thread's self time per HTTP request of two bench servers'
 * main-thread profiles (the `CPU.….<pid>.0.….cpuprofile` files: a worker
 * thread's profile has the same pid and another thread number;
 * `PIGEON_BENCH_PROFILE=dir`, whose count-requests.ts wrote the
 * requests each served beside them), by source file or function, and the
 * largest differences B − A. Both runs should have the same warm-up, so that
 * start-up (module loading) weighs the same in each.
 *
 * Why per request: req/s on a shared guest swings more between minutes than a
 * small change moves it. A profile's times swing with the guest too, but
 * every line alike, so B is also shown scaled to A by code neither changes.
 */
import fs from 'node:fs';
import path from 'node:path';

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

function requestsOf(file: string): number {
  const pid = /\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(path.basename(file))?.[1];
  const count = pid && path.join(path.dirname(file), `requests.${pid}.txt`);
  if (!count || !fs.existsSync(count)) throw new Error(`no request count beside ${file} (was it written by a bench run with PIGEON_BENCH_PROFILE?)`);
  const requests = Number(fs.readFileSync(count, 'utf8'));
  if (!(requests > 0)) throw new Error(`${count} holds no request count`);
  return requests;
}

/** `dist/src/db/buffer.js`, `node_modules/knex/…`, or a native name such as `(garbage collector)` */
function keyOf(frame: CpuProfile['nodes'][number]['callFrame'], byFunction: boolean): string {
  const file = (frame.url || frame.functionName).replace(/.*\/(node_modules\/)/, '$1').replace(/.*\/dist\//, 'dist/');
  return byFunction ? `${frame.functionName || '(anonymous)'} ${file}` : file;
}

/** µs of self time per request by key, and the busy (non-idle) total */
function perRequest(file: string, byFunction: boolean): { busy: number; byKey: Map<string, number> } {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const requests = requestsOf(file);
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byKey = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    if (!frame || frame.functionName === '(idle)') return;
    const us = (profile.timeDeltas[i] ?? 0) / requests;
    busy += us;
    const key = keyOf(frame, byFunction);
    byKey.set(key, (byKey.get(key) ?? 0) + us);
  });
  return { busy, byKey };
}

/**
 * Code neither build changes and every request runs the same way: Node's HTTP server and Koa. The guest's
 * speed scales every line of a profile alike (a descheduled thread's samples count its stolen time), so B is
 * also shown scaled by this code's A ÷ B.
 */
const REFERENCE = /^(node:_http_|node_modules\/koa\/lib\/)/;

function referenceOf(byKey: Map<string, number>, byFunction: boolean): number {
  let total = 0;
  for (const [key, us] of byKey) if (REFERENCE.test(byFunction ? key.slice(key.lastIndexOf(' ') + 1) : key)) total += us;
  return total;
}

function main(): void {
  const [a, b] = process.argv.slice(2).filter((x) => !x.startsWith('--'));
  const opt = (name: string, fallback: string) => process.argv.find((x) => x.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
  if (!a || !b) throw new Error('usage: profile-compare A.cpuprofile B.cpuprofile [--top=25] [--by=file|function]');
  const byFunction = opt('by', 'file') === 'function';
  const top = Number(opt('top', '25'));
  const [pa, pb] = [perRequest(a, byFunction), perRequest(b, byFunction)];
  const scale = referenceOf(pa.byKey, byFunction) / referenceOf(pb.byKey, byFunction);
  console.log(`main thread busy, µs a request: A ${pa.busy.toFixed(1)} (${requestsOf(a)} requests), B ${pb.busy.toFixed(1)} (${requestsOf(b)})`);
  console.log(`Node's HTTP server and Koa took A ÷ B = ${scale.toFixed(2)} times as long: B·k is B scaled by it`);
  const rows = [...new Set([...pa.byKey.keys(), ...pb.byKey.keys()])]
    .map((key) => ({ key, a: pa.byKey.get(key) ?? 0, b: pb.byKey.get(key) ?? 0 }))
    .sort((x, y) => x.b * scale - x.a - (y.b * scale - y.a));
  const show = (r: { key: string; a: number; b: number }) =>
    console.log([r.a, r.b, r.b * scale, r.b * scale - r.a].map((v) => v.toFixed(2).padStart(8)).join(' ') + `  ${r.key.slice(0, 120)}`);
  console.log('       A        B      B·k  B·k − A  (µs a request; most reduced first)');
  rows.slice(0, top).forEach(show);
  console.log('most increased:');
  rows.slice(-top).reverse().forEach(show);
}

main();
