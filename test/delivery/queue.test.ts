// The queue in the database: leases, restarts, concurrent claims, and what /metrics shows.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Writable } from 'node:stream';
import { createApp } from '../../src/app';
import type { Mta } from '../../src/delivery/mta';
import { ownBatch } from '../../src/delivery/commit';
import { claim, newLeaseOwner, nextWakeAt, nodeId, releaseStaleLeases } from '../../src/delivery/queue';
import { recordOutcome } from '../../src/delivery/record';
import type { Outcome } from '../../src/delivery/types';
import { onPostgres, scrapeMetrics, testConfig } from '../support/app';
import { startSmtpSink } from '../support/smtp-sink';
import { deliveryConfig, eventsOf, holdQueue, messageRow, pointMx, sendBatch, sendMessage, startWorld } from './world';

const delivered = (now: number): Outcome => ({
  kind: 'delivered',
  attempt: { startedAt: now, durationMs: 1, mx: 'mx.dest.test', sourceIp: '127.0.0.1', tls: false, code: 250, enhancedCode: null, response: '250 ok' },
});

describe('queue', () => {
  it('returns messages left in flight by a killed process to the queue at the next start, and delivers them', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    const { dataDir } = world.app;
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
    holdQueue(world); // keep the first MTA from picking it up
    const id = await sendMessage(world, { to: 'survivor@dest.test' });
    // What a process killed mid-send leaves behind: a live-looking lease of an owner that no longer exists.
    await world.app.db('messages').where({ id }).update({ status: 'sending', lease_owner: `${newLeaseOwner(nodeId(world.app.config))}.1`, lease_expires_at: world.clock.now() + 600_000 });
    await world.app.close();

    const restarted = await createApp(testConfig(dataDir, deliveryConfig(world.dns.address, sink.port)), { clock: world.clock, logStream: new Writable({ write: (_chunk, _enc, done) => done() }) });
    try {
      await (restarted.workers.find((w) => w.name === 'delivery') as Mta).runOnce();
      await sink.waitFor(1);
      assert.equal((await restarted.db('messages').where({ id }).first()).status, 'delivered');
    } finally {
      await restarted.close();
      await world.dns.close();
      await sink.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // SQLite's plans: PostgreSQL picks by table statistics, and on a test's few rows a scan is its right choice.
  it('finds the rows in flight through their own index, however deep the queue (no read of the whole table at start)', { skip: onPostgres }, async () => {
    const world = await startWorld({ port: 1 });
    try {
      holdQueue(world);
      const db = world.app.db;
      for (let i = 0; i < 3; i++) await sendMessage(world, { to: `r${i}@dest.test` }); // queued, due: in messages_due_idx
      const seen: Array<{ sql: string; bindings: unknown[] }> = [];
      const record = (q: { sql: string; bindings: unknown[] }) => seen.push(q);
      db.on('query', record);
      try {
        await releaseStaleLeases(db, world.clock.now(), nodeId(world.app.config));
        await nextWakeAt(db);
      } finally {
        db.off('query', record);
      }
      const inFlight = seen.filter((q) => /'sending'/.test(q.sql));
      assert.equal(inFlight.length, 2, seen.map((q) => q.sql).join('\n'));
      for (const q of inFlight) {
        const plan = ((await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings as never)) as Array<{ detail: string }>).map((r) => r.detail).join(' / ');
        assert.match(plan, /messages USING (COVERING )?INDEX messages_sending_idx/, `${q.sql}\n${plan}`);
      }
    } finally {
      await world.stop();
    }
  });

  it('does not wake for a lapsed lease no claim can take: its destination is paused', async () => {
    const world = await startWorld({ port: 1 });
    try {
      await world.mta.stop(); // the state below is built by hand
      const db = world.app.db;
      const id = await sendMessage(world, { to: 'r@dest.test' });
      const now = world.clock.now();
      // a send whose lease ran out on the wire (the pipeline drops it, the row stays `sending`), then a pause
      await db('messages').where({ id }).update({ status: 'sending', lease_owner: newLeaseOwner(nodeId(world.app.config)), lease_expires_at: now - 1 });
      await db('paused_destinations').insert({ domain: 'dest.test', paused_at: now });
      assert.deepEqual(await claim(db, { owner: 'mta-other', now, leaseMs: 60_000, limit: 10 }), [], 'the claim leaves a paused destination alone');
      // a wake-up due already would claim nothing and look again at once, over and over
      assert.equal(await nextWakeAt(db), null);
      await db('paused_destinations').where({ domain: 'dest.test' }).delete();
      assert.equal(await nextWakeAt(db), now - 1, 'once resumed, the lapsed lease is due');
    } finally {
      await world.stop();
    }
  });

  it('gives a row whose lease expired to the next claimer, and the late first owner records nothing', async () => {
    const world = await startWorld({ port: 9 });
    try {
      holdQueue(world);
      const id = await sendMessage(world, { to: 'x@dest.test' });
      const deps = { submit: ownBatch(world.app.db), clock: world.clock, config: world.app.config };
      const leaseMs = 1000;
      const [first] = await claim(world.app.db, { owner: 'a.1', now: world.clock.now(), leaseMs, limit: 10 });
      assert.equal(first.id, id);
      assert.deepEqual(await claim(world.app.db, { owner: 'b.1', now: world.clock.now(), leaseMs, limit: 10 }), [], 'a live lease is respected');

      world.clock.advance(leaseMs + 1);
      const [second] = await claim(world.app.db, { owner: 'b.2', now: world.clock.now(), leaseMs, limit: 10 });
      assert.equal(second.id, id);
      assert.equal(await recordOutcome(deps, first, delivered(world.clock.now())), null);
      assert.equal((await messageRow(world, id)).status, 'sending');
      assert.deepEqual(await recordOutcome(deps, second, delivered(world.clock.now())), { result: 'delivered', events: 2 });
      assert.equal((await eventsOf(world, id)).length, 2, 'events only from the owner');
    } finally {
      await world.stop();
    }
  });

  it('a job whose lease ran out before MAIL FROM is not sent (checked in memory, no read per message)', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const pick = world.mta.hooks.pickSource;
      let waits = 0;
      world.mta.hooks.pickSource = async (job, route) => {
        // The first attempt waits longer than its lease for a connection slot; the row is then claimed again.
        if (waits++ === 0) world.clock.advance(world.app.config.delivery.leaseSeconds * 1000 + 1);
        return pick(job, route);
      };
      const id = await sendMessage(world, { to: 'late@dest.test' });
      await world.mta.runOnce();
      // Sent once, by the second claim; the first, whose lease had run out, sent nothing and recorded nothing.
      assert.equal(waits, 2);
      assert.equal(sink.messages.length, 1);
      assert.equal((await world.app.db('message_attempts').where({ message_id: id })).length, 1);
      assert.equal((await messageRow(world, id)).status, 'delivered');
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('a row taken away by hand while in flight is sent at most once and nothing is recorded over it', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const pick = world.mta.hooks.pickSource;
      world.mta.hooks.pickSource = async (job, route) => {
        await world.app.db('messages').where({ id: job.id }).update({ status: 'cancelled', next_attempt_at: null, lease_owner: null });
        return pick(job, route);
      };
      const id = await sendMessage(world, { to: 'once@dest.test' });
      await world.mta.runOnce();
      // The lease no longer matches, so the outcome is not written over the operator's change.
      assert.equal((await messageRow(world, id)).status, 'cancelled');
      assert.ok(sink.messages.length <= 1);
      assert.deepEqual(await world.app.db('message_attempts').where({ message_id: id }), []);
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('never hands one row to two concurrent claims', async () => {
    const world = await startWorld({ port: 9 });
    try {
      holdQueue(world);
      for (let i = 0; i < 30; i++) await sendMessage(world, { to: `r${i}@dest.test` });
      const now = world.clock.now();
      const batches = await Promise.all(['a', 'b', 'c'].map((o) => claim(world.app.db, { owner: o, now, leaseMs: 60_000, limit: 12 })));
      const ids = batches.flat().map((j) => j.id);
      assert.equal(ids.length, 30);
      assert.equal(new Set(ids).size, 30);
    } finally {
      await world.stop();
    }
  });

  it('a claim takes at most its limit, however many rows are due', async () => {
    const world = await startWorld({ port: 9 });
    try {
      holdQueue(world);
      for (const batch of [0, 1]) await sendBatch(world, { to: Array.from({ length: 30 }, (_, i) => `r${batch}-${i}@dest.test`) });
      const now = world.clock.now();
      for (const limit of [1, 5, 20]) {
        const jobs = await claim(world.app.db, { owner: `o${limit}`, now, leaseMs: 60_000, limit });
        assert.equal(jobs.length, limit, `limit ${limit}`);
      }
      assert.equal((await world.app.db('messages').where({ status: 'sending' })).length, 1 + 5 + 20, 'no row leased beyond the jobs returned');
    } finally {
      await world.stop();
    }
  });

  it('shows queue depth by status, deliveries by result and latency on /metrics', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1', reply: (ctx) => (ctx.stage === 'rcpt' && ctx.rcpt?.startsWith('later') ? { code: 451, message: '4.7.1 later' } : undefined) });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      await sendMessage(world, { to: 'now@dest.test' });
      await sendMessage(world, { to: 'later@dest.test' });
      await sendMessage(world, { to: 'tomorrow@dest.test', sendAt: world.clock.now() + 86_400_000 });
      await world.mta.runOnce();
      const text = await scrapeMetrics(world.app);
      assert.match(text, /^pigeon_queue_messages\{status="deferred"\} 1$/m);
      assert.match(text, /^pigeon_queue_messages\{status="scheduled"\} 1$/m);
      assert.match(text, /^pigeon_queue_messages\{status="queued"\} 0$/m);
      assert.match(text, /^pigeon_deliveries_total\{result="delivered"\} 1$/m);
      assert.match(text, /^pigeon_deliveries_total\{result="deferred"\} 1$/m);
      assert.match(text, /^pigeon_delivery_latency_seconds_count 1$/m);
      assert.match(text, /^pigeon_smtp_connections \d+$/m);
    } finally {
      await world.stop();
      await sink.close();
    }
  });
});
