// Failed attempts are retried exactly 5 min, 30 min, 2 h, 8 h and 24 h after the previous failure, then the delivery fails.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { liveApi, scrapeMetrics, startTestApp, type TestApp } from '../support/app';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, dispatch, HOUR, MINUTE, recordMessageEvent, startWebhookApp } from './helpers';


async function deliveryOf(app: TestApp, webhookId: string) {
  const res = await app.api.get(`/v1/webhooks/${webhookId}/deliveries`);
  assert.equal(res.status, 200);
  return res.body.data[0];
}

describe('webhook retries', () => {
  it('retries a 500 at exactly +5 min, +30 min, +2 h, +8 h, +24 h, then fails, and a redelivery succeeds', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    let answer = 500;
    const receiver = await startWebhookReceiver({ respond: () => ({ status: answer, body: 'x'.repeat(5000) }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      const start = clock.now();
      await recordMessageEvent(app, { type: 'message.delivered' });
      await dispatch(app);
      assert.equal(receiver.requests.length, 1);

      const gaps = [5 * MINUTE, 30 * MINUTE, 2 * HOUR, 8 * HOUR, 24 * HOUR];
      for (const gap of gaps) {
        clock.advance(gap - 1);
        await dispatch(app);
        const before: number = receiver.requests.length;
        assert.equal((await deliveryOf(app, hook.id)).status, 'pending', 'not due one millisecond early');
        clock.advance(1);
        await dispatch(app);
        assert.equal(receiver.requests.length, before + 1, `an attempt ${gap / MINUTE} min after the previous failure`);
      }
      clock.advance(48 * HOUR);
      await dispatch(app);
      assert.equal(receiver.requests.length, 6, 'no seventh attempt');

      const failed = await deliveryOf(app, hook.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.next_attempt_at, null);
      assert.equal(failed.attempts, 6);
      let at = start;
      const expectedTimes = [at, ...gaps.map((g) => (at += g))].map((t) => new Date(t).toISOString());
      assert.deepEqual(failed.attempt_log.map((a: { attempted_at: string }) => a.attempted_at), expectedTimes);
      assert.deepEqual(receiver.requests.map((r) => r.headers['service-delivery-attempt']), ['1', '2', '3', '4', '5', '6']);
      const first = failed.attempt_log[0];
      assert.equal(first.status_code, 500);
      assert.equal(first.success, false);
      assert.equal(first.error, 'HTTP 500');
      assert.equal(first.response_body, 'x'.repeat(1024), 'the answer is kept truncated to 1 KB');
      assert.equal(typeof first.latency_ms, 'number');
      assert.equal((await app.api.get(`/v1/webhooks/${hook.id}/deliveries?status=failed`)).body.pagination.total, 1);

      answer = 200;
      const again = await app.api.post(`/v1/webhooks/${hook.id}/deliveries/${failed.id}/redeliver`);
      assert.equal(again.status, 202);
      assert.equal(again.body.status, 'pending');
      await dispatch(app);
      assert.equal(receiver.requests.length, 7);
      assert.equal(receiver.requests[6].headers['service-delivery-attempt'], '7');
      assert.equal(receiver.requests[6].body.toString(), receiver.requests[0].body.toString(), 'the same bytes as the first attempt');
      const done = await deliveryOf(app, hook.id);
      assert.equal(done.status, 'succeeded');
      assert.equal(done.completed_at, new Date(clock.now()).toISOString());

      const metrics = await app.deps.metrics.registry.getSingleMetricAsString('pigeon_webhook_attempts_total');
      assert.match(metrics, /result="retrying",attempt="1"} 1/);
      assert.match(metrics, /result="failed",attempt="6"} 1/);
      assert.match(metrics, /result="succeeded",attempt="7\+"} 1/);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('counts a receiver that never answers as a failure after the timeout', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({ webhooks: { timeoutMs: 300 } }, { clock });
    const receiver = await startWebhookReceiver({ respond: () => ({ hang: true }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      await recordMessageEvent(app, { type: 'message.opened', fields: { user_agent: 'Mozilla/5.0', unique: true, prefetched: false } });
      await dispatch(app);
      const d = await deliveryOf(app, hook.id);
      assert.equal(d.status, 'pending');
      assert.equal(d.attempt_log[0].error, 'timed out after 300 ms');
      assert.equal(d.attempt_log[0].status_code, null);
      assert.equal(d.next_attempt_at, new Date(clock.now() + 5 * MINUTE).toISOString());
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('does not follow a redirect and counts it as a failure', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    const target = await startWebhookReceiver();
    const receiver = await startWebhookReceiver({ respond: () => ({ redirectTo: target.url }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      await recordMessageEvent(app, { type: 'message.sent' });
      await dispatch(app);
      assert.equal(receiver.requests.length, 1);
      assert.equal(target.requests.length, 0, 'the Location was not visited');
      const d = await deliveryOf(app, hook.id);
      assert.equal(d.status, 'pending');
      assert.equal(d.last_status_code, 302);
      assert.equal(d.last_error, 'redirect (HTTP 302) not followed');
    } finally {
      await Promise.all([receiver.close(), target.close()]);
      await app.stop();
    }
  });

  it('counts a refused connection as a failure', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    const receiver = await startWebhookReceiver();
    await receiver.close(); // nothing listens on its port any more
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      await recordMessageEvent(app, { type: 'message.sent' });
      await dispatch(app);
      const d = await deliveryOf(app, hook.id);
      assert.equal(d.last_error, 'connection refused');
      assert.equal(d.next_attempt_at, new Date(clock.now() + 5 * MINUTE).toISOString());

      clock.advance(90_000);
      const text = await scrapeMetrics(app);
      assert.match(text, /^pigeon_webhook_pending_deliveries 1$/m);
      assert.match(text, /^pigeon_webhook_oldest_pending_age_seconds 90$/m);
      assert.match(text, /^pigeon_webhook_attempts_total\{result="retrying",attempt="1"\} 1$/m);
    } finally {
      await app.stop();
    }
  });

  it('counts a certificate it cannot trust as a failure', async () => {
    const clock = new FakeClock();
    const app = await startTestApp({}, { clock }); // without webhooks.tlsCaFile: the test certificate is unknown
    app.api = await liveApi(app); // live events go to live webhooks
    const receiver = await startWebhookReceiver({ https: true });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      await recordMessageEvent(app, { type: 'message.sent' });
      await dispatch(app);
      assert.equal(receiver.requests.length, 0, 'nothing was sent over the untrusted connection');
      const d = await deliveryOf(app, hook.id);
      assert.match(d.last_error, /^TLS error: /);
      assert.equal(d.status, 'pending');
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('drops the pending retries of a webhook deleted mid-retry', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    const receiver = await startWebhookReceiver({ respond: () => ({ status: 503 }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      const kept = await createWebhook(app, { url: receiver.url + '/kept', events: ['*'] });
      await recordMessageEvent(app, { type: 'message.delivered' });
      await dispatch(app);
      assert.equal(receiver.requests.length, 2);

      assert.deepEqual((await app.api.delete(`/v1/webhooks/${hook.id}`)).body, { id: hook.id, deleted: true });
      assert.equal((await app.api.get(`/v1/webhooks/${hook.id}/deliveries`)).status, 404);
      assert.equal((await app.db('webhook_deliveries').where({ webhook_id: hook.id })).length, 0);

      clock.advance(5 * MINUTE);
      await dispatch(app);
      assert.deepEqual(receiver.requests.slice(2).map((r) => r.path), ['/webhook/kept'], 'only the remaining webhook is retried');
      assert.equal((await app.api.delete(`/v1/webhooks/${hook.id}`)).status, 404);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
