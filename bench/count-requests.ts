/**
 * Preloaded into a profiled bench server (`PIGEON_BENCH_PROFILE`, child.ts):
 * counts the HTTP requests the process serves, warm-up included, and writes
 * the count to `requests.<pid>.txt` beside its CPU profile (whose name holds
 * the same pid). `bench/profile-compare.ts` divides a profile's time by it:
 * the main thread's µs a request, per file, comparable between two builds.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';

const dir = process.env.PIGEON_BENCH_PROFILE;
// Worker threads run the preload too (they inherit the flags) and share the pid: only the main thread writes.
if (dir && isMainThread) {
  let requests = 0;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event === 'request') requests++;
    return emit.call(this, event, ...args);
  } as typeof http.Server.prototype.emit;
  const write = () => fs.writeFileSync(path.join(dir, `requests.${process.pid}.txt`), String(requests));
  process.on('exit', write);
}
