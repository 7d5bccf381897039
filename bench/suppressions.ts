/*
 * Suppression upload benchmark: a CSV of N rows (with duplicates and invalid
 * rows) streamed from disk through POST /v1/suppressions/upload; reports time
 * and peak RSS (server and client share the process, so RSS covers both).
 *
 *   node --expose-gc dist/bench/run.js suppression-upload [--rows 1000000]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createApp, App } from '../src/app';
import { argValue } from './analytics';

export async function suppressionUpload(app: App, key: string, rows: number, dir: string): Promise<void> {
  const file = path.join(dir, 'suppressions.csv');
  const out = fs.createWriteStream(file);
  out.write('email,reason\n');
  // A domain of its own per run, so a kept database (--data) does not turn the run into "already present".
  const domain = `run${Date.now().toString(36)}.example`;
  for (let i = 0; i < rows; i++) {
    const line = i % 1000 === 7 ? `not-an-address-${i},\n` : i % 500 === 3 ? `User${i - 1}@${domain.toUpperCase()},\n` : `user${i}@${domain},${i % 10 === 0 ? 'complaint' : ''}\n`;
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise((r) => out.end(r));
  const size = fs.statSync(file).size;
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const body = new FormData();
  body.append('file', await fs.openAsBlob(file, { type: 'text/csv' }), 'suppressions.csv');
  body.append('reason', 'imported');
  const t0 = Date.now();
  const res = await fetch(`${app.http.url}/v1/suppressions/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body });
  const result = await res.json();
  const seconds = (Date.now() - t0) / 1000;
  clearInterval(sampler);
  const r = result as { received: number; added: number; duplicates: number; invalid_count: number };
  console.log(`\nsuppression upload: ${rows} rows, ${(size / 1e6).toFixed(1)} MB → HTTP ${res.status} in ${seconds.toFixed(1)} s ` +
    `(${Math.round(rows / seconds)} rows/s); received ${r.received}, added ${r.added}, duplicates ${r.duplicates}, invalid ${r.invalid_count}`);
  console.log(`RSS: ${(baseline / 2 ** 20).toFixed(0)} MiB before, peak ${(peak / 2 ** 20).toFixed(0)} MiB during (+${((peak - baseline) / 2 ** 20).toFixed(0)} MiB; server and client in one process)`);
}

/** Entry of `npm run bench suppression-upload [--rows N]`. */
export async function run(args: string[]): Promise<void> {
  const rows = Number(argValue(args, 'rows') ?? 1_000_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-'));
  const app = await createApp({
    dataDir: dir, log: { level: 'warn' }, http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } }, metrics: { port: 0 },
    suppressions: { uploadMaxBytes: 512 * 2 ** 20 },
  }, { logStream: new Writable({ write: (_c, _e, cb) => cb() }) });
  try {
    await suppressionUpload(app, app.bootstrapKey as string, rows, dir);
  } finally {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
