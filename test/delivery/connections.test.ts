// How the MTA behaves on the wire: source binding, misbehaving MX hosts, connection reuse, STARTTLS, SIZE.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ConfigInput } from '../../src/config';
import { newId } from '../../src/ids';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { startSmtpSink, type SinkOptions, type SmtpSink } from '../support/smtp-sink';
import { testCertificate } from '../support/tls-cert';
import { type World, attemptsOf, eventsOf, messageRow, pointMx, sendBatch, sendMessage, startWorld } from './world';

async function scenario(sinkOptions: SinkOptions, config: ConfigInput, body: (world: World, sink: SmtpSink) => Promise<void>): Promise<void> {
  const sink = await startSmtpSink({ host: '127.0.0.1', ...sinkOptions });
  const world = await startWorld({ port: sink.port, config });
  try {
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
    await body(world, sink);
  } finally {
    await world.stop();
    await sink.close();
  }
}

async function createPool(world: World, name: string, addresses: string[]): Promise<void> {
  const id = newId('pool');
  await world.app.db('ip_pools').insert({ id, account_id: world.accountId, name, created_at: world.clock.now() });
  await world.app.db('ip_pool_members').insert(addresses.map((address) => ({ pool_id: id, address })));
}

describe('delivery on the wire', () => {
  it('binds each send to its pool address and EHLO name', async () => {
    const ips = [
      { address: '127.0.0.2', hostname: 'out2.pigeon.test' },
      { address: '127.0.0.3', hostname: 'out3.pigeon.test' },
    ];
    await scenario({}, { ips }, async (world, sink) => {
      await createPool(world, 'blue', ['127.0.0.2']);
      await createPool(world, 'green', ['127.0.0.3']);
      for (const pool of ['blue', 'green', 'blue', 'green']) await sendMessage(world, { to: `${pool}-${newId('x')}@dest.test`, ipPool: pool });
      await world.mta.runOnce();
      const received = await sink.waitFor(4);
      for (const m of received) {
        const pool = m.rcptTo[0].split('-')[0];
        const expected = pool === 'blue' ? ['127.0.0.2', 'out2.pigeon.test'] : ['127.0.0.3', 'out3.pigeon.test'];
        assert.deepEqual([m.remoteAddress, m.clientHostname], expected, `${m.rcptTo[0]} left from its pool`);
      }
    });
  });

  it('spreads the default pool over every configured address, round robin', async () => {
    const ips = [
      { address: '127.0.0.2', hostname: 'out2.pigeon.test' },
      { address: '127.0.0.3', hostname: 'out3.pigeon.test' },
    ];
    await scenario({}, { ips }, async (world, sink) => {
      for (let i = 0; i < 4; i++) await sendMessage(world, { to: `r${i}@dest.test` });
      await world.mta.runOnce();
      const received = await sink.waitFor(4);
      const counts = new Map<string, number>();
      for (const m of received) counts.set(m.remoteAddress, (counts.get(m.remoteAddress) ?? 0) + 1);
      assert.deepEqual(Object.fromEntries(counts), { '127.0.0.2': 2, '127.0.0.3': 2 });
    });
  });

  it('times out a sink that stalls mid-data, defers, and delivers once on the retry (no duplicate)', async () => {
    await scenario({ stallInData: (ctx) => ctx.attempt === 1 }, { delivery: { dataTimeoutMs: 300 } }, async (world, sink) => {
      const id = await sendMessage(world, { to: 'slow@dest.test' });
      await world.mta.runOnce();
      const deferred = await messageRow(world, id);
      assert.equal(deferred.status, 'deferred');
      assert.match(deferred.last_response, /ETIMEDOUT/);
      assert.equal(sink.unaccepted[0].outcome, 'stalled');

      world.clock.set(Number(deferred.next_attempt_at));
      await world.mta.runOnce();
      await sink.waitFor(1);
      const row = await messageRow(world, id);
      assert.equal(row.status, 'delivered');
      assert.equal(sink.messages.length, 1);
      // The retry sends exactly the bytes signed before the first attempt, as stored.
      const stored = await world.app.db('message_contents').where({ id: row.content_id }).first('raw');
      assert.ok(sink.unaccepted[0].raw.equals(sink.messages[0].raw));
      assert.ok(Buffer.from(stored.raw).equals(sink.messages[0].raw));
    });
  });

  it('counts a message as delivered when the sink drops the connection right after its 250, and carries on', async () => {
    await scenario({ dropAfterData: 'after-reply' }, { delivery: { maxConnectionsPerDomain: 1 } }, async (world, sink) => {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await sendMessage(world, { to: `drop${i}@dest.test` }));
      await world.mta.runOnce();
      await sink.waitFor(3);
      for (const id of ids) assert.equal((await messageRow(world, id)).status, 'delivered');
      assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), ['drop0@dest.test', 'drop1@dest.test', 'drop2@dest.test']);
      assert.equal(sink.connections, 3, 'a new connection for each message after each drop');
    });
  });

  it('defers a message whose connection drops before the reply to DATA, and delivers it on the retry', async () => {
    await scenario({ dropAfterData: (ctx) => (ctx.attempt === 1 ? 'before-reply' : undefined) }, {}, async (world, sink) => {
      const id = await sendMessage(world, { to: 'flaky@dest.test' });
      await world.mta.runOnce();
      const row = await messageRow(world, id);
      assert.equal(row.status, 'deferred');
      world.clock.set(Number(row.next_attempt_at));
      await world.mta.runOnce();
      await sink.waitFor(1);
      assert.equal(sink.messages.length, 1);
      assert.equal((await messageRow(world, id)).status, 'delivered');
    });
  });

  it('reuses connections: 100 messages to one domain use a bounded number of connections', async () => {
    const config = { delivery: { maxConnectionsPerDomain: 2, messagesPerConnection: 30 } };
    await scenario({}, config, async (world, sink) => {
      for (let batch = 0; batch < 2; batch++) await sendBatch(world, { to: Array.from({ length: 50 }, (_, i) => `bulk${batch * 50 + i}@dest.test`) });
      await world.mta.runOnce();
      await sink.waitFor(100);
      assert.equal(new Set(sink.messages.map((m) => m.rcptTo[0])).size, 100);
      assert.ok(sink.connections >= 4, `at most 30 messages per connection: ${sink.connections} connections`);
      assert.ok(sink.connections <= 8, `connections are reused: ${sink.connections} for 100 messages`);
      const metrics = await world.app.deps.metrics.registry.getSingleMetricAsString('pigeon_smtp_connections_opened_total');
      assert.match(metrics, new RegExp(`pigeon_smtp_connections_opened_total ${sink.connections}$`, 'm'));
    });
  });

  it('upgrades with STARTTLS to a server with a self-signed certificate', async () => {
    await scenario({ tls: 'starttls' }, {}, async (world, sink) => {
      const id = await sendMessage(world, { to: 'secret@dest.test' });
      await world.mta.runOnce();
      const [received] = await sink.waitFor(1);
      assert.equal(received.secure, true);
      assert.equal(Boolean((await attemptsOf(world, id))[0].tls), true);
    });
  });

  it('falls back to plain text when the STARTTLS handshake fails', async () => {
    // A server whose TLS demands a client certificate: every handshake fails, plain SMTP works.
    const received: Array<{ secure: boolean; rcpt: string }> = [];
    const server = new SMTPServer({
      ...testCertificate(),
      logger: false,
      authOptional: true,
      disabledCommands: ['AUTH'],
      maxVersion: 'TLSv1.2',
      requestCert: true,
      rejectUnauthorized: true,
      onData(stream, session, callback) {
        stream.resume();
        stream.on('end', () => {
          received.push({ secure: session.secure, rcpt: session.envelope.rcptTo[0].address });
          callback();
        });
      },
    });
    server.on('error', () => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const world = await startWorld({ port: (server.server.address() as AddressInfo).port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const id = await sendMessage(world, { to: 'plain@dest.test' });
      await world.mta.runOnce();
      assert.deepEqual(received, [{ secure: false, rcpt: 'plain@dest.test' }]);
      assert.equal((await messageRow(world, id)).status, 'delivered');
      assert.equal(Boolean((await attemptsOf(world, id))[0].tls), false);
    } finally {
      await world.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('bounces a message larger than the SIZE the server advertises without sending it, and suppresses nothing', async () => {
    await scenario({ size: 1000 }, {}, async (world, sink) => {
      const id = await sendMessage(world, { to: 'big@dest.test', body: 'x'.repeat(5000) });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, id)).status, 'bounced');
      assert.equal(sink.unaccepted.length, 0, 'no DATA was sent');
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.deepEqual([bounce.data.type, bounce.data.code, bounce.data.enhanced_code], ['hard', 552, '5.3.4']);
      assert.equal(await world.app.db('suppressions').where({ email: 'big@dest.test' }).first(), undefined);
    });
  });
});
