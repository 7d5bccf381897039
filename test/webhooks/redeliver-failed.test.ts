/** Redelivering every failed delivery at once, the delivery's request body, and the overview's webhook alert. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, dispatch, HOUR, recordMessageEvent, startWebhookApp } from './helpers';

describe('POST /v1/webhooks/{id}/redeliver-failed', () => {
  it('queues each failed delivery for an attempt now and answers how many', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    let answer = 500;
    const receiver = await startWebhookReceiver({ respond: () => ({ status: answer, body: 'down for maintenance' }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      for (let i = 0; i < 3; i++) await recordMessageEvent(app, { type: 'message.delivered' });
      await dispatch(app);
      for (let i = 0; i < 5; i++) {
        clock.advance(25 * HOUR); // past each gap of the retry schedule: the sixth attempt fails them now
        await dispatch(app);
      }
      const failed = (await app.api.get(`/v1/webhooks/${hook.id}/deliveries?status=failed`)).body;
      assert.equal(failed.pagination.total, 3);
      assert.equal(receiver.requests.length, 18, 'six attempts each');

      const one = await app.api.get(`/v1/webhooks/${hook.id}/deliveries/${failed.data[0].id}`);
      assert.equal(one.status, 200);
      assert.equal(JSON.parse(one.body.request_body).id, failed.data[0].event_id, 'the request body is the event envelope');
      assert.ok(receiver.requests.some((r) => r.body.toString() === one.body.request_body), 'byte for byte what was sent');
      assert.equal(one.body.attempt_log[5].status_code, 500);
      assert.equal(one.body.attempt_log[5].response_body, 'down for maintenance');

      const alerts = (await app.api.get('/v1/overview')).body.alerts;
      assert.ok(alerts.some((a: { kind: string; subject: string }) => a.kind === 'webhook_failing' && a.subject === hook.id), JSON.stringify(alerts));

      answer = 200;
      const res = await app.api.post(`/v1/webhooks/${hook.id}/redeliver-failed`);
      assert.equal(res.status, 202, res.text);
      assert.deepEqual(res.body, { queued: 3 });
      await dispatch(app);
      assert.equal(receiver.requests.length, 21);
      assert.equal((await app.api.get(`/v1/webhooks/${hook.id}/deliveries?status=succeeded`)).body.pagination.total, 3);
      assert.deepEqual((await app.api.post(`/v1/webhooks/${hook.id}/redeliver-failed`)).body, { queued: 0 }, 'nothing failed is left');
      assert.equal((await app.api.post('/v1/webhooks/wh_nope/redeliver-failed')).status, 404);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
