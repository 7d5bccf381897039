// Outbound delivery refuses MX hosts at loopback/private addresses unless delivery.allowPrivateTargets is set.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { eventsOf, messageRow, pointMx, sendMessage, startWorld } from './world';

const GUARDED = { delivery: { allowPrivateTargets: false } };

describe('delivery to private addresses', () => {
  it('a recipient whose MX resolves to 127.0.0.1 hard-bounces with category policy naming 127.0.0.1, and nothing is dialled', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port, config: GUARDED });
    try {
      pointMx(world.dns, 'intranet.test', [{ name: 'mx.intranet.test', address: '127.0.0.1' }]);
      const id = await sendMessage(world, { to: 'admin@intranet.test' });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, id)).status, 'bounced');
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.deepEqual([bounce.data.type, bounce.data.category], ['hard', 'policy']);
      assert.match(String(bounce.data.diagnostic), /127\.0\.0\.1, a loopback address/);
      assert.equal(sink.connections, 0, 'the sink received no connection');
      assert.equal(await world.app.db('suppressions').count({ n: '*' }).first().then((r) => Number(r?.n)), 0, 'our refusal does not suppress the address');
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('a domain without MX whose own A record is 10.0.0.1 (implicit MX fallback) is refused the same way', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port, config: GUARDED });
    try {
      world.dns.set('plain.test', [{ type: 'A', data: '10.0.0.1' }]);
      const plain = await sendMessage(world, { to: 'carol@plain.test' });
      await world.mta.runOnce();
      const [bounce] = (await eventsOf(world, plain)).filter((e) => e.type === 'message.bounced');
      assert.equal(bounce.data.category, 'policy');
      assert.match(String(bounce.data.diagnostic), /10\.0\.0\.1, a private address/);
      assert.equal(sink.connections, 0);
    } finally {
      await world.stop();
      await sink.close();
    }
  });
});
