// message.deferred (extension): one event when a message is first deferred and one per retry step after, with
// the SMTP reply, the attempt count and the next attempt time; webhooks receive it only when they name it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from '../../src/clock';
import { liveApi } from '../support/app';
import { startSmtpSink, type SinkOptions } from '../support/smtp-sink';
import { eventsOf, messageRow, pointMx, sendMessage, startWorld } from './world';

describe('message.deferred', () => {
  it('fires once per retry step through three 4xx answers, with reply, attempt and next attempt time, then the delivery', async () => {
    const reply: SinkOptions['reply'] = (ctx) => (ctx.stage === 'rcpt' && ctx.attempt <= 3 ? { code: 451, message: `4.7.1 greylisted (try ${ctx.attempt})` } : undefined);
    const sink = await startSmtpSink({ host: '127.0.0.2', reply });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
      const hooks = await liveApi(world.app, ['webhooks:manage']);
      const named = await hooks.post('/v1/webhooks', { url: 'http://127.0.0.1:9/named', events: ['message.deferred'] });
      const star = await hooks.post('/v1/webhooks', { url: 'http://127.0.0.1:9/star', events: ['*'] });
      assert.equal(named.status, 201, named.text);
      assert.deepEqual(star.body.events, ['*']);

      const id = await sendMessage(world, { to: 'grey@dest.test' });
      for (let step = 1; step <= 3; step++) {
        if (step > 1) world.clock.set(Number((await messageRow(world, id)).next_attempt_at));
        await world.mta.runOnce();
        // a run before the retry is due adds nothing: at most one event per step
        await world.mta.runOnce();
        const row = await messageRow(world, id);
        const deferred = (await eventsOf(world, id)).filter((e) => e.type === 'message.deferred');
        assert.equal(deferred.length, step, `step ${step}`);
        assert.deepEqual(deferred[step - 1].data, {
          message_id: id, to: 'grey@dest.test', from: deferred[0].data.from,
          deferred_at: iso(world.clock.now()), attempt: step, next_attempt_at: iso(Number(row.next_attempt_at)),
          code: 451, enhanced_code: '4.7.1', response: `451 4.7.1 greylisted (try ${step})`, mx_host: 'mx.dest.test',
        });
      }
      world.clock.set(Number((await messageRow(world, id)).next_attempt_at));
      await world.mta.runOnce();
      await sink.waitFor(1);
      assert.deepEqual((await eventsOf(world, id)).map((e) => e.type),
        ['message.deferred', 'message.deferred', 'message.deferred', 'message.sent', 'message.delivered']);

      const deliveries = await world.app.db('webhook_deliveries as d').join('events as e', 'e.id', 'd.event_id')
        .where('e.message_id', id).select('d.webhook_id', 'e.type');
      const of = (hook: string) => deliveries.filter((d: { webhook_id: string }) => d.webhook_id === hook).map((d: { type: string }) => d.type).sort();
      assert.deepEqual(of(named.body.id), ['message.deferred', 'message.deferred', 'message.deferred']);
      assert.deepEqual(of(star.body.id), ['message.delivered', 'message.queued', 'message.sent'], '`*` means the spec\'s events, not the extensions');
    } finally {
      await world.stop();
      await sink.close();
    }
  });
});
