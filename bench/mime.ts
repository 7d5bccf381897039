/**
 * `npm run bench mime [--rounds=3] [--attachment-mb=7] [--messages=5000]`:
 * what building the send API's MIME costs the main thread, on it (0 threads)
 * and on the MIME builder's threads (mime-pool.ts, as the send route uses it).
 *
 * - Large message: one message with a random attachment of the given size;
 *   the longest gap between the ticks of a 1 ms timer while it is built is
 *   how long every other request, SMTP session and delivery would stand still.
 * - 5 KB text messages, 50 in flight: messages/s, and the main thread's busy
 *   time per message (event-loop utilisation; CPU time would count the
 *   builder's threads too).
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { MimeInput } from '../src/messages/mime';
import { MimePool } from '../src/messages/mime-pool';

const address = (email: string) => ({ email, name: null, domain: email.split('@')[1] });
const base: MimeInput = {
  from: address('orders@shop.bench'), to: [address('someone@dest.bench')], cc: [], replyTo: [], subject: 'Your order',
  headers: [], attachments: [], messageId: 'msg_1@mta.bench', date: Date.UTC(2026, 0, 5),
};
const line = 'Your order has shipped and will arrive within two working days. Thank you!\n';
const text = line.repeat(Math.ceil(5120 / line.length));

/** ms: the longest the main thread went without running a 1 ms timer while `work` ran. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 1);
  try {
    await work();
    return Math.max(worst, performance.now() - last);
  } finally {
    clearInterval(timer);
  }
}

async function smallMessages(pool: MimePool, count: number): Promise<{ rate: number; mainUsPerMessage: number }> {
  let next = 0;
  const lane = async () => {
    while (next < count) await pool.compose({ ...base, subject: `Your order ${next++}`, text });
  };
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  await Promise.all(Array.from({ length: 50 }, lane));
  const seconds = (performance.now() - started) / 1000;
  const busyMs = performance.eventLoopUtilization(elu).active;
  return { rate: count / seconds, mainUsPerMessage: (busyMs * 1000) / count };
}

export async function run(args: string[]): Promise<void> {
  const opt = (name: string, def: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? def;
  const rounds = Number(opt('rounds', '3'));
  const attachmentMb = Number(opt('attachment-mb', '7'));
  const messages = Number(opt('messages', '5000'));
  const large: MimeInput = { ...base, text: 'See the attached file.\n', attachments: [{ filename: 'data.bin', content: crypto.randomBytes(attachmentMb * 1024 * 1024) }] };

  console.log(`mime benchmark: ${os.availableParallelism()} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${rounds} rounds, alternating`);
  console.log('| builder | longest main-thread stall, one message with a ' + `${attachmentMb} MB attachment | 5 KB text messages/s (50 in flight) | main-thread µs per 5 KB message |`);
  console.log('|---|---|---|---|');
  for (let round = 0; round < rounds; round++) {
    for (const threads of [0, 1]) {
      const pool = new MimePool(threads);
      try {
        await smallMessages(pool, 500); // warm-up: the thread starts, the composer's code is optimised
        const stall = await longestStall(() => pool.compose(large));
        const small = await smallMessages(pool, messages);
        const name = threads === 0 ? 'main thread' : '1 thread';
        console.log(`| ${name} | ${stall.toFixed(1)} ms | ${Math.round(small.rate)} | ${small.mainUsPerMessage.toFixed(1)} |`);
      } finally {
        await pool.stop();
      }
    }
  }
}
