// Webhooks carry the mode of the key that created them: a sandbox key's webhook never receives live events,
// and a key never sees, changes or fires a webhook of the other mode.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { liveApi } from '../support/app';
import { startSmtpSink } from '../support/smtp-sink';
import { startWebhookReceiver, type WebhookRequest } from '../support/webhook-receiver';
import { pointMx, sendMessage, startWorld } from '../delivery/world';
import { createWebhook, dispatch, recordMessageEvent, sandboxApi, startWebhookApp } from './helpers';

type Envelope = { event: string; data: { message_id: string; sandbox?: boolean } };
const envelopes = (requests: WebhookRequest[]) => requests.map((r) => r.json() as Envelope);

describe('webhook modes', () => {
  it('a webhook created with a sandbox key receives sandbox events only, never live ones', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    const sandboxHook = await startWebhookReceiver();
    const liveHook = await startWebhookReceiver();
    try {
      const { app } = world;
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const created = await app.api.post('/v1/webhooks', { url: sandboxHook.url, events: ['*'] });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.mode, 'test');
      const live = await liveApi(app, ['webhooks:manage']);
      const liveCreated = (await createWebhook(app, { url: liveHook.url, events: ['*'] }, live)) as { id: string; mode?: string };
      assert.equal(liveCreated.mode, 'live');

      const liveId = await sendMessage(world, { to: 'alice@dest.test', subject: 'Live mail' });
      const sandboxId = await sendMessage(world, { to: 'bob@dest.test', subject: 'Sandbox mail', mode: 'test' });
      await world.mta.runOnce();
      const [received] = await sink.waitFor(1);
      assert.deepEqual(received.rcptTo, ['alice@dest.test'], 'the live message really left through the MTA');
      await dispatch(app);

      // queued, sent, delivered for each message, each to its own mode's webhook only
      const toLive = envelopes(await liveHook.waitFor(3));
      const toSandbox = envelopes(await sandboxHook.waitFor(3));
      await dispatch(app);
      assert.deepEqual(new Set(envelopes(sandboxHook.requests).map((e) => e.data.message_id)), new Set([sandboxId]));
      assert.ok(toSandbox.every((e) => e.data.sandbox === true));
      assert.deepEqual(new Set(envelopes(liveHook.requests).map((e) => e.data.message_id)), new Set([liveId]));
      assert.ok(toLive.every((e) => e.data.sandbox === undefined));
      assert.ok(toLive.some((e) => e.event === 'message.delivered'));
    } finally {
      await Promise.all([sandboxHook.close(), liveHook.close()]);
      await world.stop();
      await sink.close();
    }
  });

  it('a sandbox key cannot read, change, fire, redeliver or delete a live webhook: each is 404', async () => {
    const app = await startWebhookApp(); // app.api holds a live key here
    const receiver = await startWebhookReceiver();
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] });
      await recordMessageEvent(app, { type: 'message.delivered' });
      await receiver.waitFor(1);
      const delivery = (await app.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data[0];
      const sandbox = sandboxApi(app);
      const attempts = [
        await sandbox.get(`/v1/webhooks/${hook.id}`),
        await sandbox.patch(`/v1/webhooks/${hook.id}`, { url: 'http://127.0.0.1:9/elsewhere', enabled: false }),
        await sandbox.post(`/v1/webhooks/${hook.id}/test`),
        await sandbox.get(`/v1/webhooks/${hook.id}/deliveries`),
        await sandbox.post(`/v1/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`),
        await sandbox.delete(`/v1/webhooks/${hook.id}`),
      ];
      for (const res of attempts) {
        assert.equal(res.status, 404, res.text);
        assert.equal(res.body.error.code, 'not_found');
      }
      assert.equal((await sandbox.get('/v1/webhooks')).body.pagination.total, 0, 'a sandbox key lists sandbox webhooks only');
      const kept = await app.api.get(`/v1/webhooks/${hook.id}`);
      assert.deepEqual([kept.body.url, kept.body.enabled, kept.body.mode], [receiver.url, true, 'live']);
      assert.equal(receiver.requests.length, 1, 'no test event and no redelivery reached the live receiver');
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('the test event of a sandbox webhook is marked sandbox, like the events it will receive', async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver();
    try {
      const sandbox = sandboxApi(app);
      const hook = await createWebhook(app, { url: receiver.url, events: ['*'] }, sandbox);
      assert.equal((await sandbox.post(`/v1/webhooks/${hook.id}/test`)).body.success, true);
      const [req] = await receiver.waitFor(1);
      assert.deepEqual([(req.json() as Envelope & { test: boolean }).test, (req.json() as Envelope).data.sandbox], [true, true]);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
