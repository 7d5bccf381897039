// The webhook endpoints: validation, secrets shown once, listing, changes, deletion, scopes, and the test event.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../src/auth/accounts';
import { createKey as createKeyFor } from '../../src/auth/keys';
import { createKey } from '../support/app';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, startWebhookApp, verifyIndependently } from './helpers';

describe('webhook API', () => {
  it('validates the creation body and names unknown event types', async () => {
    const app = await startWebhookApp();
    try {
      const bad = await app.api.post('/v1/webhooks', { url: 'https://127.0.0.1/h', events: ['message.delivered', 'message.exploded', 'email.sent'] });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.error.param, 'events[1]');
      assert.match(bad.body.error.message, /unknown event type 'message.exploded'/);
      assert.deepEqual(bad.body.error.details.map((d: { param: string }) => d.param), ['events[1]', 'events[2]']);
      assert.match(bad.body.error.details[1].message, /'email.sent'/);

      const cases: Array<[Record<string, unknown>, string]> = [
        [{ url: 'https://127.0.0.1/h', events: [] }, 'events'],
        [{ url: 'https://127.0.0.1/h' }, 'events'],
        [{ events: ['*'] }, 'url'],
        [{ url: 'https://127.0.0.1/h', events: ['*'], secret: 'short' }, 'secret'],
        [{ url: 'https://127.0.0.1/h', events: ['*'], colour: 'blue' }, 'colour'],
        [{ url: 'not a url', events: ['*'] }, 'url'],
        [{ url: 'ftp://127.0.0.1/h', events: ['*'] }, 'url'],
      ];
      for (const [body, param] of cases) {
        const res = await app.api.post('/v1/webhooks', body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.equal(res.body.error.param, param, JSON.stringify(body));
      }
      assert.equal((await app.db('webhooks')).length, 0);
    } finally {
      await app.stop();
    }
  });

  it('returns the secret once, lists newest first with pagination, and never shows the secret again', async () => {
    const app = await startWebhookApp();
    try {
      const created = await app.api.post('/v1/webhooks', { url: 'https://127.0.0.1:9/a', events: ['message.delivered', 'message.delivered'] });
      assert.equal(created.status, 201);
      assert.match(created.body.id, /^wh_/);
      assert.match(created.body.secret, /^whsec_[A-Za-z0-9]{32}$/);
      assert.deepEqual(created.body.events, ['message.delivered']);
      assert.equal(created.body.enabled, true);
      const all = await createWebhook(app, { url: 'https://127.0.0.1:9/b', events: ['message.opened', '*'], secret: 'my-own-secret-0123456789' });
      assert.equal(all.secret, 'my-own-secret-0123456789');
      const third = await createWebhook(app, { url: 'https://127.0.0.1:9/c', events: ['*'] });

      const page1 = await app.api.get('/v1/webhooks?limit=2');
      assert.equal(page1.status, 200);
      assert.deepEqual(page1.body.data.map((w: { id: string }) => w.id), [third.id, all.id]);
      assert.deepEqual(page1.body.pagination, { has_more: true, next_cursor: all.id, total: 3 });
      assert.deepEqual(page1.body.data[1].events, ['*']);
      const page2 = await app.api.get(`/v1/webhooks?limit=2&cursor=${page1.body.pagination.next_cursor}`);
      assert.deepEqual(page2.body.data.map((w: { id: string }) => w.id), [created.body.id]);
      assert.equal(page2.body.pagination.has_more, false);
      assert.doesNotMatch(page1.text + page2.text, /secret"|whsec_|my-own-secret/);
      assert.doesNotMatch((await app.api.get(`/v1/webhooks/${all.id}`)).text, /whsec_|my-own-secret/);
      assert.doesNotMatch(app.logs.join('\n'), /whsec_|my-own-secret/);
      const rows = await app.db('webhooks');
      assert.doesNotMatch(JSON.stringify(rows), /whsec_|my-own-secret/, 'secrets are sealed at rest');
      assert.ok(rows.every((r: { secret: string }) => r.secret.startsWith('v1.')));
    } finally {
      await app.stop();
    }
  });

  it('changes url, events and enabled with PATCH and checks the new url', async () => {
    const app = await startWebhookApp({ webhooks: { allowPrivateTargets: false } });
    try {
      const hook = await createWebhook(app, { url: 'https://93.184.216.34/hooks', events: ['*'] });
      const res = await app.api.patch(`/v1/webhooks/${hook.id}`, { events: ['message.bounced'], enabled: false });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.events, ['message.bounced']);
      assert.equal(res.body.enabled, false);
      assert.equal(res.body.secret, undefined);
      const refused = await app.api.patch(`/v1/webhooks/${hook.id}`, { url: 'https://192.168.1.1/hooks' });
      assert.equal(refused.status, 422);
      assert.equal(refused.body.error.code, 'private_target');
      assert.equal((await app.api.get(`/v1/webhooks/${hook.id}`)).body.url, 'https://93.184.216.34/hooks');
      const both = await app.api.patch(`/v1/webhooks/${hook.id}`, { rotate_secret: true, secret: 'another-secret-0123456789' });
      assert.equal(both.status, 422);
      const set = await app.api.patch(`/v1/webhooks/${hook.id}`, { secret: 'another-secret-0123456789' });
      assert.equal(set.body.secret, 'another-secret-0123456789');
      assert.equal((await app.api.patch('/v1/webhooks/wh_nope', { enabled: true })).status, 404);
    } finally {
      await app.stop();
    }
  });

  it('requires webhooks:manage and keeps accounts apart', async () => {
    const app = await startWebhookApp();
    try {
      const hook = await createWebhook(app, { url: 'https://127.0.0.1:9/a', events: ['*'] });
      const reader = app.api.withKey(await createKey(app, 'live', ['messages:read']));
      assert.equal((await reader.get('/v1/webhooks')).status, 403);
      assert.equal((await reader.post('/v1/webhooks', { url: 'https://127.0.0.1:9/a', events: ['*'] })).status, 403);
      const manager = app.api.withKey(await createKey(app, 'live', ['webhooks:manage']));
      assert.equal((await manager.get('/v1/webhooks')).body.pagination.total, 1, 'both modes share the account\'s webhooks');

      const other = await createAccount(app.db, 'other', Date.now());
      const { secret } = await createKeyFor(app.db, { accountId: other.id, name: 'o', mode: 'live', scopes: ['webhooks:manage'] }, Date.now());
      const stranger = app.api.withKey(secret);
      assert.equal((await stranger.get('/v1/webhooks')).body.pagination.total, 0);
      assert.equal((await stranger.get(`/v1/webhooks/${hook.id}`)).status, 404);
      assert.equal((await stranger.delete(`/v1/webhooks/${hook.id}`)).status, 404);
      assert.equal((await stranger.post(`/v1/webhooks/${hook.id}/test`)).status, 404);
    } finally {
      await app.stop();
    }
  });

  it('sends a signed test event synchronously and reports the answer', async () => {
    const app = await startWebhookApp();
    let status = 200;
    const receiver = await startWebhookReceiver({ https: true, respond: () => ({ status }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.bounced'] });
      const res = await app.api.post(`/v1/webhooks/${hook.id}/test`);
      assert.equal(res.status, 200);
      assert.equal(res.body.success, true);
      assert.equal(res.body.status_code, 200);
      assert.equal(typeof res.body.latency_ms, 'number');
      assert.equal(res.body.error, undefined);
      const [req] = receiver.requests;
      assert.ok(verifyIndependently(req.headers['service-signature'] as string, req.body, hook.secret).valid);
      const envelope = req.json() as { id: string; event: string; timestamp: string; data: Record<string, unknown>; test: boolean };
      assert.equal(envelope.test, true);
      assert.equal(envelope.event, 'message.delivered');
      assert.equal(envelope.id, res.body.event_id);
      assert.match(envelope.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.deepEqual(Object.keys(envelope.data), ['message_id', 'to', 'from', 'delivered_at']);

      status = 500;
      const failing = await app.api.post(`/v1/webhooks/${hook.id}/test?event=message.bounced`);
      assert.deepEqual({ ...failing.body, latency_ms: 0, event_id: '' }, { success: false, status_code: 500, latency_ms: 0, error: 'HTTP 500', event_id: '' });
      assert.equal((receiver.requests[1].json() as { event: string }).event, 'message.bounced');
      assert.equal((await app.db('webhook_deliveries')).length, 0, 'test events are not stored or retried');

      await receiver.close();
      const down = await app.api.post(`/v1/webhooks/${hook.id}/test`);
      assert.equal(down.body.success, false);
      assert.equal(down.body.status_code, null);
      assert.equal(down.body.error, 'connection refused');
      assert.equal((await app.api.post(`/v1/webhooks/${hook.id}/test?event=message.exploded`)).status, 400);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
