/**
 * Storage half of the accept path, without HTTP: batches are prepared
 * (validated, rendered, MIME built) first, then stored by concurrent callers
 * through acceptBatch — the part group commit changes. Same process, so it
 * isolates commit cost from HTTP and CPU noise; compare group commit on/off.
 *
 *   node dist/bench/run.js accept-store [--messages=2000] [--concurrency=1,10,50]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app';
import { acceptBatch, AcceptBatch } from '../src/messages/accept';
import { prepareSend } from '../src/messages/prepare';
import { newId } from '../src/ids';
import { isBackground } from '../src/modules';

async function measure(groupCommit: boolean, concurrency: number, count: number): Promise<{ perSecond: number; prepareMs: number; perCommit: number }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-store-'));
  const app = await createApp({ dataDir, log: { level: 'warn' }, http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } }, metrics: { port: 0 }, messages: { groupCommit } });
  try {
    await Promise.all(app.workers.filter(isBackground).map((w) => w.stop()));
    const account = await app.db('accounts').first('id');
    await app.db('domains').insert({ id: newId('dom'), account_id: account.id, name: 'example.com', status: 'verified', created_at: Date.now() });
    const sender = { accountId: account.id as string, mode: 'live' as const };
    const body = {
      from: 'Shop <orders@example.com>', to: ['customer@example.org'], subject: 'Order {{order}} confirmed',
      html: `<html><body><h1>Hello {{name}}</h1>${'<p>Your order {{order}} ships within two working days.</p>'.repeat(60)}</body></html>`,
      text: 'Hello {{name}}, your order {{order}} is confirmed.', template_data: { name: 'Ada', order: 'A-10042' },
    };
    const t0 = performance.now();
    const batches: AcceptBatch[] = [];
    for (let i = 0; i < count; i++) batches.push(await prepareSend(app.deps, sender, body));
    const prepareMs = (performance.now() - t0) / count;
    let next = 0;
    const t1 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < batches.length) await acceptBatch(app.deps, batches[next++]);
    }));
    const perSecond = count / ((performance.now() - t1) / 1000);
    const metrics = await app.deps.metrics.registry.getSingleMetricAsString('pigeon_writer_commit_weight');
    const sum = Number(/_sum (\S+)/.exec(metrics)?.[1]);
    const n = Number(/_count (\S+)/.exec(metrics)?.[1]);
    return { perSecond, prepareMs, perCommit: sum / n };
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  const get = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const count = Number(get('messages') ?? 2000);
  const levels = (get('concurrency') ?? '1,10,50').split(',').map(Number);
  console.log(`accept-store: ${count} prepared 1-recipient sends stored by concurrent callers, synchronous=FULL, load average ${os.loadavg()[0].toFixed(2)}\n`);
  console.log(['group commit', 'conc', 'stored msgs/s', 'msgs/commit', 'prepare ms/msg'].join('\t'));
  for (const concurrency of levels) {
    for (const groupCommit of [true, false]) {
      const r = await measure(groupCommit, concurrency, count);
      console.log([groupCommit ? 'on' : 'off', concurrency, r.perSecond.toFixed(0), r.perCommit.toFixed(1), r.prepareMs.toFixed(2)].join('\t'));
    }
  }
}
