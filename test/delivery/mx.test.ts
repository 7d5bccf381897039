// MX resolution as a sysadmin expects it: preference order, fallback, null MX, NXDOMAIN, SERVFAIL.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { attemptsOf, eventsOf, sendMessage, messageRow, pointMx, startWorld, type World } from './world';

/** Two "MX hosts" on 127.0.0.2 and 127.0.0.3 sharing one port number (delivery.port is one setting). */
async function twoSinks(first: Parameters<typeof startSmtpSink>[0] = {}): Promise<[SmtpSink, SmtpSink]> {
  const a = await startSmtpSink({ ...first, host: '127.0.0.2' });
  const b = await startSmtpSink({ host: '127.0.0.3', port: a.port });
  return [a, b];
}

async function withWorld(port: number, body: (world: World) => Promise<void>, ...closers: SmtpSink[]): Promise<void> {
  const world = await startWorld({ port });
  try {
    await body(world);
  } finally {
    await world.stop();
    for (const c of closers) await c.close();
  }
}

describe('MX resolution', () => {
  it('tries the next MX host when the first refuses at the greeting', async () => {
    const [primary, backup] = await twoSinks({ reply: (ctx) => (ctx.stage === 'connect' ? { code: 421, message: '4.3.2 busy' } : undefined) });
    await withWorld(primary.port, async (world) => {
      pointMx(world.dns, 'dest.test', [{ name: 'mx1.dest.test', address: '127.0.0.2', priority: 10 }, { name: 'mx2.dest.test', address: '127.0.0.3', priority: 20 }]);
      const id = await sendMessage(world, { to: 'bob@dest.test' });
      await world.mta.runOnce();
      await backup.waitFor(1);
      assert.equal(primary.messages.length, 0);
      assert.equal(primary.connections, 1);
      assert.equal((await messageRow(world, id)).status, 'delivered');
      assert.equal((await attemptsOf(world, id))[0].mx_host, 'mx2.dest.test');
    }, primary, backup);
  });

  it('tries the next MX host when the first does not answer at all', async () => {
    const backup = await startSmtpSink({ host: '127.0.0.3' });
    await withWorld(backup.port, async (world) => {
      // nothing listens on 127.0.0.4: connection refused
      pointMx(world.dns, 'dest.test', [{ name: 'dead.dest.test', address: '127.0.0.4', priority: 5 }, { name: 'live.dest.test', address: '127.0.0.3', priority: 50 }]);
      const id = await sendMessage(world, { to: 'bob@dest.test' });
      await world.mta.runOnce();
      await backup.waitFor(1);
      assert.equal((await messageRow(world, id)).status, 'delivered');
    }, backup);
  });

  it('falls back to the A record of the domain when it has no MX', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.2' });
    await withWorld(sink.port, async (world) => {
      world.dns.set('plain.test', [{ type: 'A', data: '127.0.0.2' }]);
      const id = await sendMessage(world, { to: 'carol@plain.test' });
      await world.mta.runOnce();
      await sink.waitFor(1);
      assert.equal((await attemptsOf(world, id))[0].mx_host, 'plain.test');
      assert.equal((await messageRow(world, id)).status, 'delivered');
    }, sink);
  });

  it('bounces hard on a null MX without connecting, and suppresses the address', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.2' });
    await withWorld(sink.port, async (world) => {
      world.dns.set('nomail.test', [{ type: 'MX', data: { preference: 0, exchange: '.' } }, { type: 'A', data: '127.0.0.2' }]);
      const id = await sendMessage(world, { to: 'dave@nomail.test' });
      await world.mta.runOnce();
      const row = await messageRow(world, id);
      assert.equal(row.status, 'bounced');
      assert.equal(sink.connections, 0);
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.equal(bounce.data.type, 'hard');
      assert.equal(bounce.data.category, 'dns');
      assert.equal(bounce.data.enhanced_code, '5.1.10');
      assert.match(String(bounce.data.diagnostic), /null MX/);
      assert.ok(await world.app.db('suppressions').where({ email: 'dave@nomail.test', reason: 'hard_bounce' }).first());
    }, sink);
  });

  it('bounces hard when the recipient domain does not exist (NXDOMAIN)', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.2' });
    await withWorld(sink.port, async (world) => {
      const id = await sendMessage(world, { to: 'erin@no-such-domain.test' });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, id)).status, 'bounced');
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.deepEqual([bounce.data.type, bounce.data.category, bounce.data.code], ['hard', 'dns', 550]);
      assert.match(String(bounce.data.diagnostic), /NXDOMAIN/);
    }, sink);
  });

  it('defers on SERVFAIL and delivers once the DNS recovers', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.2' });
    await withWorld(sink.port, async (world) => {
      world.dns.set('flaky.test', 'SERVFAIL');
      const id = await sendMessage(world, { to: 'frank@flaky.test' });
      await world.mta.runOnce();
      let row = await messageRow(world, id);
      assert.equal(row.status, 'deferred');
      assert.equal(row.attempts, 1);
      const wait = Number(row.next_attempt_at) - world.clock.now();
      assert.ok(wait >= 54_000 && wait <= 66_000, `first retry after about a minute, got ${wait} ms`);
      assert.match(row.last_response, /temporarily/);

      pointMx(world.dns, 'flaky.test', [{ name: 'mx.flaky.test', address: '127.0.0.2' }]);
      world.clock.advance(30_000);
      await world.mta.runOnce();
      assert.equal((await messageRow(world, id)).status, 'deferred', 'not due yet');
      world.clock.advance(40_000);
      await world.mta.runOnce();
      await sink.waitFor(1);
      row = await messageRow(world, id);
      assert.equal(row.status, 'delivered');
      assert.equal(row.attempts, 2);
      assert.deepEqual((await attemptsOf(world, id)).map((a: { outcome: string }) => a.outcome), ['deferred', 'delivered']);
    }, sink);
  });
});
