// The MTA reads a claimed batch's contents with one query, except large ones, which the prepare step reads one at a
// time: both kinds arrive whole and signed.
import { describe, it } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sqliteKnex } from '../../src/db';
import type { Job } from '../../src/delivery/types';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { verifyDkim } from '../support/mail';
import { PRELOAD_MAX_BYTES, preload, PreloadBatcher } from '../../src/delivery/preload';
import { addSuppression } from '../../src/suppressions/store';
import { claim } from '../../src/delivery/queue';
import { holdQueue, pointMx, sendMessage, startWorld } from './world';

describe('batch reads of a claim', () => {
  it('a content over the preload bound is left to the prepare step, and a large and a small message both arrive signed', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      holdQueue(world); // this test claims by hand
      const bigBody = `${'A large line of text for a large message. '.repeat(60)}\n`.repeat(Math.ceil((PRELOAD_MAX_BYTES * 1.2) / 2520));
      await sendMessage(world, { to: 'big@dest.test', body: bigBody });
      await sendMessage(world, { to: 'small@dest.test', body: 'small' });

      // What one claim reads for its batch: the small content's bytes, none of the large one's.
      const jobs = await world.app.db.transaction((trx) => claim(trx, { owner: 'probe', now: world.clock.now(), leaseMs: 1, limit: 10 }));
      await preload(world.app.deps.reader, jobs);
      const byRcpt = new Map(jobs.map((j) => [j.toEmail, j]));
      assert.equal(byRcpt.get('big@dest.test')?.preloaded?.content, undefined);
      assert.ok(byRcpt.get('small@dest.test')?.preloaded?.content?.raw.includes('small'));

      world.clock.advance(10); // the probe's 1 ms lease has run out: the MTA claims both again
      await world.mta.runOnce();
      const received = await sink.waitFor(2);
      const big = received.find((m) => m.rcptTo.includes('big@dest.test'));
      assert.ok(big && big.raw.length > PRELOAD_MAX_BYTES);
      for (const m of received) assert.equal((await verifyDkim(m.raw, world.dns.address))[0].result, 'pass');
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('hand-overs asked for in the same turn share one read of suppressions and contents; each gets its own jobs filled', async () => {
    const world = await startWorld({ port: 9 }); // nothing is sent: the queue is held
    try {
      holdQueue(world);
      for (const to of ['a@dest.test', 'b@dest.test', 'c@dest.test', 'gone@dest.test']) await sendMessage(world, { to, body: `for ${to}` });
      const jobs = await world.app.db.transaction((trx) => claim(trx, { owner: 'probe', now: world.clock.now(), leaseMs: 60_000, limit: 10 }));
      assert.equal(jobs.length, 4);
      await addSuppression(world.app.db, { accountId: jobs[0].accountId, email: 'gone@dest.test', reason: 'manual' }, world.clock.now());
      const reader = world.app.deps.reader;
      const reads: string[] = [];
      const count = (q: { sql: string }) => reads.push(q.sql);
      reader.on('query', count);
      const batcher = new PreloadBatcher(reader);
      await Promise.all([batcher.preload(jobs.slice(0, 1)), batcher.preload(jobs.slice(1, 3)), batcher.preload(jobs.slice(3))]);
      reader.off('query', count);
      assert.equal(reads.filter((q) => /from [`"]suppressions[`"]/.test(q)).length, 1, reads.join('\n'));
      assert.equal(reads.filter((q) => /from [`"]message_contents[`"]/.test(q)).length, 1, reads.join('\n'));
      for (const job of jobs) {
        assert.equal(job.preloaded?.suppressed, job.toEmail === 'gone@dest.test', job.toEmail);
        assert.ok(job.preloaded?.content?.raw.includes(`for ${job.toEmail}`), job.toEmail);
      }
    } finally {
      await world.stop();
    }
  });

  it('a batched preload that fails fails each of its callers, and the next one reads again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-preload-'));
    const db = sqliteKnex(path.join(dir, 'empty.sqlite'), 1, ''); // no tables: the suppression read fails
    try {
      const batcher = new PreloadBatcher(db);
      const job = (to: string) => ({ accountId: 'acc', toEmail: to, contentId: 'cnt' }) as Job;
      const results = await Promise.allSettled([batcher.preload([job('x@dest.test')]), batcher.preload([job('y@dest.test')])]);
      assert.deepEqual(results.map((r) => (r.status === 'rejected' ? /no such table/.test(String(r.reason)) : r.status)), [true, true]);
      await db.schema.createTable('suppressions', (t) => { t.string('account_id'); t.string('email'); t.string('upload_id'); });
      await db.schema.createTable('suppression_uploads', (t) => t.string('id'));
      await db.schema.createTable('message_contents', (t) => { t.string('id'); t.binary('raw'); t.integer('size'); t.boolean('signed'); });
      const later = job('z@dest.test');
      await batcher.preload([later]);
      assert.deepEqual(later.preloaded, { suppressed: false, content: null });
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
