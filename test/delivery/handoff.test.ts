// Fresh sends reach the MTA in memory (src/delivery/handoff.ts): leased in the accept transaction, no claim.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Mta } from '../../src/delivery/mta';
import { startSmtpSink } from '../support/smtp-sink';
import { messageRow, pointMx, sendBatch, sendMessage, startWorld, statementsDuring, type World } from './world';

/**
 * Claim statements (the MTA's UPDATE … lease_owner … RETURNING; on PostgreSQL after its WITH "due" AS
 * MATERIALIZED (…) prefix) run on the writer while `work` runs.
 */
async function claimsDuring(world: World, work: () => Promise<void>): Promise<number> {
  const claim = /^(with [`"]due[`"] as materialized \(.*\) )?update [`"]messages[`"] set [`"]status[`"] = (\?|\$\d+), [`"]lease_owner/s;
  return (await statementsDuring(world, work)).filter((sql) => claim.test(sql)).length;
}

describe('hand-off from accept to the MTA', () => {
  it('a send due now is written leased to the MTA and delivered with no claim of the queue', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      let id = '';
      const claims = await claimsDuring(world, async () => {
        id = await sendMessage(world, { to: 'alice@dest.test' });
        await sink.waitFor(1);
        await world.mta.runOnce();
      });
      assert.equal(claims, 0);
      assert.equal((await messageRow(world, id)).status, 'delivered');
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('copies beyond the free slots wait in the queue and are claimed; all arrive once', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port, config: { delivery: { concurrency: 2 } } });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const to = Array.from({ length: 7 }, (_, i) => `r${i}@dest.test`);
      const claims = await claimsDuring(world, async () => {
        await sendBatch(world, { to });
        await sink.waitFor(7);
        await world.mta.runOnce();
      });
      assert.ok(claims >= 1, 'the five copies over the two slots went through the queue');
      assert.deepEqual(sink.messages.flatMap((m) => m.rcptTo).sort(), [...to].sort());
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('a grant that is cancelled (its accept failed) gives its slots back', async () => {
    const world = await startWorld({ port: 9, config: { delivery: { concurrency: 3 } } });
    try {
      const mta = world.mta as Mta;
      const batch = { accountId: 'acc_any', mode: 'test' as const, ipPool: null };
      const grant = await mta.reserve(5, world.clock.now(), batch);
      assert.equal(grant?.count, 3);
      assert.equal(await mta.reserve(1, world.clock.now(), batch), null, 'every slot is promised');
      grant!.cancel();
      grant!.cancel(); // twice changes nothing
      assert.equal((await mta.reserve(5, world.clock.now(), batch))?.count, 3);
    } finally {
      await world.stop();
    }
  });
});
