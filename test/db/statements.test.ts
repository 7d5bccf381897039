// How many SQL statements the hot path costs on the writer connection, from accept to delivered: the figure the
// batched data path exists for, kept here so it cannot silently grow back (benchmarks measure the time).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { pointMx, sendBatch, sendMessage, startWorld, statementsDuring } from '../delivery/world';

describe('statements per message on the writer', () => {
  it('one live message alone, from accept to delivered', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      await sendMessage(world, { to: 'warm@dest.test' }); // caches and the first signature warm up
      await world.mta.runOnce();
      // Work on timers, for every send at once, is not this message's path: the pools worker's write of buffered
      // IP statistics (stopped here) and the writer's WAL checkpoint between commits (left out of the count).
      await world.app.workers.find((w) => w.name === 'pools')?.stop();
      const seen = (await statementsDuring(world, async () => {
        await sendMessage(world, { to: 'alice@dest.test' });
        await world.mta.runOnce();
      })).filter((sql) => !/wal_checkpoint/i.test(sql));
      await sink.waitFor(2);
      console.log(`# one message: ${seen.length} statements\n#   ${seen.join('\n#   ')}`);
      assert.ok(seen.length <= ONE_MESSAGE_BOUND, `${seen.length} statements:\n${seen.join('\n')}`);
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('a burst of 100 messages, from accept to delivered', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      await sendMessage(world, { to: 'warm@dest.test' });
      await world.mta.runOnce();
      const seen = await statementsDuring(world, async () => {
        await Promise.all(Array.from({ length: 10 }, (_, i) => sendBatch(world, { to: Array.from({ length: 10 }, (_, j) => `r${i}-${j}@dest.test`) })));
        await world.mta.runOnce();
      });
      await sink.waitFor(101);
      const perMessage = seen.length / 100;
      console.log(`# burst of 100: ${seen.length} statements, ${perMessage.toFixed(2)} per message`);
      assert.ok(perMessage <= BURST_PER_MESSAGE_BOUND, `${perMessage} statements per message`);
    } finally {
      await world.stop();
      await sink.close();
    }
  });
});

// Measured on this code (was 43–62 per message alone before the writer); lower them as the path gets leaner,
// never raise them without a reason in the commit.
// 12 on this code: accept (BEGIN, content, message, event, usage, COMMIT) and outcome (BEGIN, one batched
// UPDATE, attempt, events, one rollup upsert for the totals' and the recipient domain's rows, COMMIT); no claim,
// as a fresh message reaches the MTA in memory, and no webhook lookup, as the subscriptions come from memory
// (webhooks/subscriptions.ts). It was 13 while the two row sets were two tables.
const ONE_MESSAGE_BOUND = 12;
// A burst's figure moves with timing: how many outcome transactions the 100 deliveries take (12-19 here, 6
// statements each) depends on how their ends fall against the writer's commits. With the WAL synced beside
// the writer, commits end sooner and take fewer outcomes each: 1.09-1.73 over runs of this code on a loaded
// 2-core machine (the build before: 1.44-1.55 there), where 1.6 had no room left. The bound is the issue's
// target (under 2), and still fails by far on the path it replaced (2.9 with one UPDATE per outcome).
const BURST_PER_MESSAGE_BOUND = 1.95;
