// End to end: a send over the API yields a signed message.queued at the customer's receiver.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, sandboxApi, startWebhookApp, verifyIndependently } from './helpers';

describe('webhooks end to end', () => {
  it('POST /v1/messages/send yields a signed message.queued per recipient, marked sandbox for a test key', async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver({ https: true });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.queued'] }, sandboxApi(app));
      const sent = await sandboxApi(app).post('/v1/messages/send', {
        from: 'Shop <orders@shop.example>',
        to: [{ email: 'ada@example.org' }, { email: 'grace@example.org' }],
        subject: 'Your order',
        text: 'It is on its way.',
        tags: ['order-confirmation'],
        metadata: { order_id: '10042' },
      });
      assert.equal(sent.status, 202, sent.text);
      const ids = sent.body.data as Array<{ id: string; to: string }>;
      assert.equal(ids.length, 2);

      const requests = await receiver.waitFor(2);
      const byMessage = new Map(requests.map((r) => [(r.json() as { data: { message_id: string } }).data.message_id, r]));
      for (const m of ids) {
        const req = byMessage.get(m.id);
        assert.ok(req, `an event for ${m.id}`);
        assert.ok(verifyIndependently(req.headers['service-signature'] as string, req.body, hook.secret).valid);
        const envelope = req.json() as { event: string; data: Record<string, unknown> };
        assert.equal(envelope.event, 'message.queued');
        assert.equal(envelope.data.to, m.to);
        assert.equal(envelope.data.from, 'orders@shop.example');
        assert.deepEqual(envelope.data.tags, ['order-confirmation']);
        assert.deepEqual(envelope.data.metadata, { order_id: '10042' });
        assert.equal(envelope.data.sandbox, true);
        assert.match(envelope.data.queued_at as string, /Z$/);
      }
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
