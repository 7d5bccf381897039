/**
 * Upload contention benchmark: does a large suppression upload of account A
 * slow down account B? The app runs in one child process, B's load (a reader
 * and a writer, back to back) in another, and this process writes the CSV and
 * uploads it. Prints B's p50/p99 latency without an upload (baseline) and
 * while the upload runs, and the upload's duration.
 *
 *   npm run bench suppression-upload-contention -- [--rows=1000000] [--baseline-seconds=5]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forkBenchServer, type BenchChild } from './child';
import { argValue } from './analytics';
import type { ContentionReady } from './upload-contention-server';
import type { PhaseLatencies } from './upload-contention-load';

async function writeCsv(file: string, rows: number): Promise<number> {
  const out = fs.createWriteStream(file);
  out.write('email,reason\n');
  for (let i = 0; i < rows; i++) {
    if (!out.write(`user${i}@upload.example,${i % 10 === 0 ? 'complaint' : ''}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise((r) => out.end(r));
  return fs.statSync(file).size;
}

/** Runs B's load from now until `during` settles. */
async function measure(load: BenchChild<{ type: 'ready' }>, during: Promise<unknown>): Promise<PhaseLatencies> {
  load.child.send({ type: 'start' });
  await during;
  const answer = new Promise<PhaseLatencies>((resolve) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== 'latencies') return;
      load.child.off('message', onMessage);
      resolve(m as PhaseLatencies);
    };
    load.child.on('message', onMessage);
  });
  load.child.send({ type: 'stop' });
  return answer;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN;
};

function report(label: string, phase: PhaseLatencies, seconds: number): void {
  const line = (kind: 'read' | 'write', what: string) => {
    const l = phase[kind];
    return `${what}: ${l.length} req (${(l.length / seconds).toFixed(0)}/s) p50 ${percentile(l, 0.5).toFixed(1)} ms, p99 ${percentile(l, 0.99).toFixed(1)} ms, max ${Math.max(...l).toFixed(0)} ms`;
  };
  console.log(`${label.padEnd(16)} ${line('read', 'GET /v1/messages')} | ${line('write', 'POST /v1/suppressions')} | errors ${phase.errors}`);
}

/** Entry of `npm run bench suppression-upload-contention`. */
export async function run(args: string[]): Promise<void> {
  const rows = Number(argValue(args, 'rows') ?? 1_000_000);
  const baselineSeconds = Number(argValue(args, 'baseline-seconds') ?? 5);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-'));
  const file = path.join(dir, 'suppressions.csv');
  const size = await writeCsv(file, rows);
  const app = await forkBenchServer<ContentionReady>('upload-contention-server.js', [], 'inherit');
  const load = await forkBenchServer<{ type: 'ready' }>('upload-contention-load.js', [app.ready.url, app.ready.otherKey], 'inherit');
  try {
    console.log(`\nsuppression upload contention: ${rows} rows (${(size / 1e6).toFixed(1)} MB) for account A; account B's latency (${os.cpus().length} CPUs)`);
    const baseline = await measure(load, new Promise((r) => setTimeout(r, baselineSeconds * 1000)));
    report('baseline', baseline, baselineSeconds);
    const body = new FormData();
    body.append('file', await fs.openAsBlob(file, { type: 'text/csv' }), 'suppressions.csv');
    body.append('reason', 'imported');
    const t0 = Date.now();
    let status = 0;
    let answer = '';
    const upload = fetch(`${app.ready.url}/v1/suppressions/upload`, { method: 'POST', headers: { authorization: `Bearer ${app.ready.uploaderKey}` }, body })
      .then(async (res) => {
        status = res.status;
        answer = await res.text();
      });
    const during = await measure(load, upload);
    const seconds = (Date.now() - t0) / 1000;
    report('during upload', during, seconds);
    const counts = status === 200 ? (JSON.parse(answer) as { added: number }) : undefined;
    console.log(`upload: HTTP ${status} in ${seconds.toFixed(1)} s (${Math.round(rows / seconds)} rows/s)${counts ? `, added ${counts.added}` : `: ${answer.slice(0, 200)}`}`);
  } finally {
    load.child.send({ type: 'exit' });
    await app.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
