// Events reach subscribed receivers over real HTTPS, signed, byte-exact, and only the events they asked for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { recordEvent } from '../../src/events/record';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, dispatch, sandboxApi, HOUR, recordMessageEvent, startWebhookApp, verifyIndependently } from './helpers';

describe('webhook delivery', () => {
  it('signs every request so the receiver can verify it with the secret alone, over HTTPS', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    const receiver = await startWebhookReceiver({ https: true });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.delivered'], secret: 'a-receiver-chosen-secret-1234' });
      const event = await recordMessageEvent(app, { type: 'message.delivered', tags: ['welcome'], metadata: { order: '1042' } });
      const [req] = await receiver.waitFor(1);

      const check = verifyIndependently(req.headers['service-signature'] as string, req.body, 'a-receiver-chosen-secret-1234');
      assert.ok(check.valid, 'HMAC-SHA256 over "<t>.<raw body>" matches');
      assert.equal(check.v1.length, 1);
      assert.equal(check.t, Math.floor(clock.now() / 1000), 't is the unix time of the attempt');
      assert.equal(verifyIndependently(req.headers['service-signature'] as string, req.body, 'another-secret-of-16+').valid, false);

      // The body is the envelope of SPEC.md part 2 and exactly the bytes that were signed.
      const row = await app.db('events').where({ id: event.id }).first();
      const expected = `{"id":"${event.id}","event":"message.delivered","timestamp":"${new Date(clock.now()).toISOString()}","data":${row.data}}`;
      assert.equal(req.body.toString('utf8'), expected);
      const envelope = req.json() as { id: string; event: string; timestamp: string; data: Record<string, unknown> };
      assert.deepEqual(Object.keys(envelope), ['id', 'event', 'timestamp', 'data']);
      assert.match(envelope.id, /^evt_/);
      assert.deepEqual(envelope.data, {
        message_id: event.messageId, to: 'ada@example.org', from: 'billing@shop.example',
        delivered_at: new Date(clock.now()).toISOString(), tags: ['welcome'], metadata: { order: '1042' },
      });

      assert.equal(req.method, 'POST');
      assert.equal(req.path, '/webhook');
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['service-event-id'], event.id);
      assert.equal(req.headers['service-delivery-attempt'], '1');
      assert.match(req.headers['user-agent'] as string, /^Pigeon-Webhooks\/\d+\.\d+\.\d+$/);

      await dispatch(app); // the answer is recorded after the receiver has the request: wait for that write
      const list = await app.api.get(`/v1/webhooks/${hook.id}/deliveries`);
      assert.equal(list.body.data[0].status, 'succeeded');
      assert.equal(list.body.data[0].attempt_log[0].status_code, 200);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('sends a webhook for message.bounced nothing else, and fans one event out to every subscriber', async () => {
    const app = await startWebhookApp();
    const bouncesOnly = await startWebhookReceiver();
    const everything = await startWebhookReceiver();
    try {
      await createWebhook(app, { url: bouncesOnly.url, events: ['message.bounced'] });
      await createWebhook(app, { url: everything.url, events: ['*'] });
      for (const type of ['message.queued', 'message.sent', 'message.delivered', 'message.complained', 'message.opened', 'message.clicked']) {
        await recordMessageEvent(app, { type });
      }
      const bounce = await recordMessageEvent(app, {
        type: 'message.bounced',
        fields: { type: 'hard', code: 550, enhanced_code: '5.1.1', diagnostic: '550 5.1.1 user unknown', category: 'invalid_recipient' },
      });
      await everything.waitFor(7);
      await dispatch(app);
      assert.equal(bouncesOnly.requests.length, 1);
      assert.equal(bouncesOnly.requests[0].headers['service-event-id'], bounce.id);
      assert.deepEqual(
        everything.requests.map((r) => (r.json() as { event: string }).event).sort(),
        ['message.bounced', 'message.clicked', 'message.complained', 'message.delivered', 'message.opened', 'message.queued', 'message.sent'],
      );
    } finally {
      await Promise.all([bouncesOnly.close(), everything.close()]);
      await app.stop();
    }
  });

  it('marks sandbox events and leaves disabled webhooks without deliveries', async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver();
    try {
      const sandbox = sandboxApi(app);
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.queued'] }, sandbox);
      await recordMessageEvent(app, { type: 'message.queued', mode: 'test' });
      const [req] = await receiver.waitFor(1);
      assert.equal((req.json() as { data: { sandbox?: boolean } }).data.sandbox, true);

      assert.equal((await sandbox.patch(`/v1/webhooks/${hook.id}`, { enabled: false })).status, 200);
      await recordMessageEvent(app, { type: 'message.queued', mode: 'test' });
      await dispatch(app);
      assert.equal(receiver.requests.length, 1);
      assert.equal((await sandbox.get(`/v1/webhooks/${hook.id}/deliveries`)).body.pagination.total, 1);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('sends at once even when the recording stage forgets the webhooksChanged signal', async () => {
    const app = await startWebhookApp({ webhooks: { pollIntervalMs: 600_000 } });
    const receiver = await startWebhookReceiver();
    try {
      await createWebhook(app, { url: receiver.url, events: ['message.complained'] });
      const accountId = (await app.api.get('/v1/account')).body.id as string;
      const event = await app.db.transaction((trx) => recordEvent(trx, {
        accountId, mode: 'live', type: 'message.complained', messageId: 'msg_x',
        data: { message_id: 'msg_x', to: 'ada@example.org', from: 'billing@shop.example', complained_at: new Date().toISOString(), feedback_type: 'abuse' },
        at: app.deps.clock.now(),
      }));
      const [req] = await receiver.waitFor(1);
      assert.equal(req.headers['service-event-id'], event.id);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const clock = new FakeClock();
    const app = await startWebhookApp({}, { clock });
    const receiver = await startWebhookReceiver();
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      assert.match(hook.secret, /^whsec_[A-Za-z0-9]{32}$/);
      const rotated = await app.api.patch(`/v1/webhooks/${hook.id}`, { rotate_secret: true });
      assert.equal(rotated.status, 200);
      const fresh = rotated.body.secret as string;
      assert.match(fresh, /^whsec_[A-Za-z0-9]{32}$/);
      assert.notEqual(fresh, hook.secret);
      assert.equal(rotated.body.previous_secret_expires_at, new Date(clock.now() + 24 * HOUR).toISOString());

      await recordMessageEvent(app, { type: 'message.sent' });
      const [during] = await receiver.waitFor(1);
      const header = during.headers['service-signature'] as string;
      assert.equal(verifyIndependently(header, during.body, fresh).v1.length, 2);
      assert.ok(verifyIndependently(header, during.body, fresh).valid);
      assert.ok(verifyIndependently(header, during.body, hook.secret).valid);

      clock.advance(24 * HOUR);
      await recordMessageEvent(app, { type: 'message.sent' });
      const [, after] = await receiver.waitFor(2);
      const later = after.headers['service-signature'] as string;
      assert.ok(verifyIndependently(later, after.body, fresh).valid);
      assert.equal(verifyIndependently(later, after.body, hook.secret).valid, false);
      assert.equal((await app.api.get(`/v1/webhooks/${hook.id}`)).body.previous_secret_expires_at, null);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
