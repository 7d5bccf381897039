// The MTA reads a claimed batch's contents with one query, except large ones, which the prepare step reads one at a
// time: both kinds arrive whole and signed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { verifyDkim } from '../support/mail';
import { PRELOAD_MAX_BYTES, preload } from '../../src/delivery/preload';
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
});
