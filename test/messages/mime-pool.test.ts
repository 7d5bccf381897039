/**
 * The MIME builder's worker threads (mime-pool.ts): the bytes built there
 * are the main thread's bytes, attachments included; a burst asked in one
 * turn is answered message by message; a thread that ends mid-batch leaves
 * no send unanswered; after stop() the main thread builds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:worker_threads';
import { composeMime, type MimeInput } from '../../src/messages/mime';
import { MimePool } from '../../src/messages/mime-pool';
import { mimeInput } from './mime-input';

const text = 'Your order has shipped and will arrive within two working days.\n'.repeat(80);

/** The message with its MIME boundaries (random per build) replaced by one name. */
const sameBoundaries = (raw: Buffer) => {
  const s = raw.toString('latin1');
  const boundaries = [...s.matchAll(/boundary="([^"]+)"/g)].map((m) => m[1]);
  return boundaries.reduce((out, b, i) => out.split(b).join(`BOUNDARY${i}`), s);
};

const threadOf = (pool: MimePool): Worker | undefined => (pool as unknown as { slots: Array<{ worker?: Worker }> }).slots[0].worker;

test('a text message built on a worker thread is byte for byte the one the main thread builds', async () => {
  const pool = new MimePool(1);
  try {
    const input: MimeInput = { ...mimeInput, subject: 'Grüße', text };
    const built = await pool.compose(input);
    assert.ok(Buffer.isBuffer(built));
    assert.equal(pool.liveThreads, 1, 'a thread built it');
    assert.ok(built.equals(await composeMime(input)));
  } finally {
    await pool.stop();
  }
});

test('html, text and attachments built on a worker thread match the main thread but for the random boundaries', async () => {
  const pool = new MimePool(1);
  try {
    const pdf = Buffer.from(Array.from({ length: 9000 }, (_, i) => i % 251));
    const input: MimeInput = {
      ...mimeInput,
      html: '<p>Your <b>invoice</b></p><img src="cid:logo">',
      text,
      attachments: [
        { filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' },
        { filename: 'logo.png', content: Buffer.from('\x89PNG fake', 'latin1'), contentType: 'image/png', contentId: 'logo' },
        // a text attachment, whose bytes arrive on the thread as a plain Uint8Array
        { filename: 'prices.csv', content: Buffer.from('Ωμέγα;Ψυχή\n'.repeat(40)), contentType: 'text/csv' },
      ],
    };
    const built = await pool.compose(input);
    assert.equal(pool.liveThreads, 1);
    assert.equal(sameBoundaries(built), sameBoundaries(await composeMime(input)));
    assert.match(built.toString('latin1'), /Content-Disposition: attachment; filename=invoice\.pdf/);
    assert.ok(built.toString('latin1').includes(pdf.toString('base64').slice(0, 76)), 'the attachment bytes went across whole');
    assert.match(built.toString('latin1'), /Content-Type: text\/csv; name=prices\.csv\r\nContent-Transfer-Encoding: base64/);
  } finally {
    await pool.stop();
  }
});

test('a burst asked in one turn, more than a batch per thread, is answered message by message', async () => {
  const pool = new MimePool(2);
  try {
    // 40 on 2 threads: a full batch of 16 goes at once, the rest at the end of the turn; every answer is over
    // 4 KB, so each owns its memory and several are handed over in one message
    const built = await Promise.all(Array.from({ length: 40 }, (_, i) => pool.compose({ ...mimeInput, subject: `order ${i}`, text: `${text}body ${i}\n` })));
    built.forEach((raw, i) => {
      const s = raw.toString('latin1');
      assert.ok(raw.length > 4096);
      assert.match(s, new RegExp(`^Subject: order ${i}\\r$`, 'm'));
      assert.match(s, new RegExp(`\\r\\nbody ${i}\\r\\n$`));
    });
    assert.equal(pool.liveThreads, 2, 'both threads took a share');
  } finally {
    await pool.stop();
  }
});

test('a small message asked beside a large one is answered first', async () => {
  const pool = new MimePool(1);
  try {
    await pool.compose({ ...mimeInput, text: 'warm-up\n' });
    const order: string[] = [];
    const large = pool.compose({ ...mimeInput, attachments: [{ filename: 'big.bin', content: Buffer.alloc(8 * 1024 * 1024, 7) }] }).then(() => order.push('large'));
    const small = pool.compose({ ...mimeInput, text: 'small\n' }).then(() => order.push('small'));
    await Promise.all([large, small]);
    assert.deepEqual(order, ['small', 'large']);
  } finally {
    await pool.stop();
  }
});

test('a thread that ends with messages in hand: they are built on the main thread, it is reported, and its slot rests', async () => {
  const failures: Array<[string, number]> = [];
  const pool = new MimePool(1, { onThreadFailure: (reason, orphans) => failures.push([reason, orphans]), respawnDelayMs: 60_000 });
  try {
    await pool.compose({ ...mimeInput, text: 'warm-up\n' });
    const first = threadOf(pool);
    assert.ok(first);
    const asked = Array.from({ length: 5 }, (_, i) => pool.compose({ ...mimeInput, subject: `held ${i}`, text }));
    // ends before the turn is over: the five are still in the outbox, and would never be posted
    await first.terminate();
    const built = await Promise.all(asked);
    built.forEach((raw, i) => assert.match(raw.toString('latin1'), new RegExp(`^Subject: held ${i}\\r$`, 'm')));
    assert.equal(failures.length, 1);
    assert.deepEqual(failures[0], ['exit code 1', 5], 'the five it held were reported');
    assert.equal(pool.builtHere, 5);
    assert.equal(pool.liveThreads, 0);

    const next = await pool.compose({ ...mimeInput, subject: 'resting', text });
    assert.match(next.toString('latin1'), /^Subject: resting\r$/m);
    assert.equal(pool.liveThreads, 0, 'while the slot rests no new thread starts');
    assert.equal(pool.builtHere, 6, 'the main thread built it');
  } finally {
    await pool.stop();
  }
});

test('a batch a thread cannot take: the messages of its slot are built on the main thread, the failure is reported and the slot rests', async () => {
  const failures: Array<[string, number]> = [];
  const pool = new MimePool(1, { onThreadFailure: (reason, orphans) => failures.push([reason, orphans]), respawnDelayMs: 60_000 });
  try {
    await pool.compose({ ...mimeInput, text: 'warm-up\n' });
    // a value structured clone cannot copy makes postMessage throw; composeMime itself never reads it
    const uncloneable = { ...mimeInput, subject: 'odd', text, extra: () => 1 } as MimeInput;
    const asked = [pool.compose({ ...mimeInput, subject: 'plain', text }), pool.compose(uncloneable)];
    const [plain, odd] = await Promise.all(asked);
    assert.match(plain.toString('latin1'), /^Subject: plain\r$/m);
    assert.match(odd.toString('latin1'), /^Subject: odd\r$/m);
    assert.equal(failures.length, 1);
    assert.match(failures[0][0], /could not be cloned/);
    assert.equal(failures[0][1], 2);
    assert.equal(pool.builtHere, 2);
    assert.equal(pool.liveThreads, 0, 'the thread was ended, and the slot rests');
  } finally {
    await pool.stop();
  }
});

test('stop() lets the threads finish what they hold, then later sends build on the main thread', async () => {
  const pool = new MimePool(1);
  await pool.compose({ ...mimeInput, text: 'warm-up\n' });
  const asked = Array.from({ length: 20 }, (_, i) => pool.compose({ ...mimeInput, subject: `late ${i}`, text }));
  await pool.stop();
  const built = await Promise.all(asked);
  built.forEach((raw, i) => assert.match(raw.toString('latin1'), new RegExp(`^Subject: late ${i}\\r$`, 'm')));
  assert.equal(pool.builtHere, 0, 'the thread built all twenty before it ended');
  assert.equal(pool.liveThreads, 0);
});

test('after stop() messages are built on the main thread', async () => {
  const pool = new MimePool(1);
  await pool.compose({ ...mimeInput, text: 'warm-up\n' });
  await pool.stop();
  assert.equal(pool.liveThreads, 0);
  const built = await pool.compose({ ...mimeInput, text });
  assert.equal(pool.liveThreads, 0, 'no thread was started again');
  assert.equal(pool.builtHere, 1);
  assert.ok(built.equals(await composeMime({ ...mimeInput, text })));
});

test('0 threads builds on the main thread', async () => {
  const pool = new MimePool(0);
  const built = await pool.compose({ ...mimeInput, text });
  assert.equal(pool.liveThreads, 0);
  assert.ok(built.equals(await composeMime({ ...mimeInput, text })));
  await pool.stop();
});
