// End to end: a send over the API, instrumented by the delivery hook, then its pixel, link and
// unsubscribe URL fetched over HTTP reach the webhook receiver and analytics; the send is a sandbox one, so
// its unsubscribe leaves the account's (live) suppression list alone (endpoints.test.ts covers a live one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trackingHook } from '../../src/tracking/hook';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { parseMail } from '../support/mail';
import { createWebhook, sandboxApi, startWebhookApp, verifyIndependently } from '../webhooks/helpers';

test('a tracked send: its pixel and link over HTTP become signed webhook events and analytics; its one-click unsubscribe answers but suppresses nothing', async () => {
  const app = await startWebhookApp({ tracking: { trackOpensDefault: true } });
  const receiver = await startWebhookReceiver({ https: true });
  try {
    // This test plays the MTA's part itself (below); the real one must not deliver the message first.
    await app.workers.find((w) => w.name === 'delivery')?.stop();
    const hook = await createWebhook(app, { url: receiver.url, events: ['message.opened', 'message.clicked'] }, sandboxApi(app));
    const sent = await sandboxApi(app).post('/v1/messages/send', {
      from: 'Shop <news@shop.example>',
      to: [{ email: 'ada@example.org' }],
      subject: 'Spring sale',
      text: 'See https://shop.example/sale',
      html: '<html><body><p>Spring sale</p><a href="https://shop.example/sale?utm=mail">Shop now</a></body></html>',
      track_clicks: true,
      list_unsubscribe: true,
      tags: ['sale'],
    });
    assert.equal(sent.status, 202, sent.text);
    const id = sent.body.data[0].id as string;

    // What delivery does in its prepare step, with the row the MTA would claim.
    const row = await app.db('messages as m').join('message_contents as c', 'c.id', 'm.content_id').where('m.id', id)
      .first('m.id', 'm.account_id', 'm.to_email', 'm.track_opens', 'm.track_clicks', 'm.list_unsubscribe', 'c.raw');
    assert.deepEqual([Boolean(row.track_opens), Boolean(row.track_clicks), Boolean(row.list_unsubscribe)], [true, true, true], 'track_opens came from the config default');
    const prepare = trackingHook({ ...app.config, http: { ...app.config.http, publicUrl: app.http.url } });
    const raw = await prepare({
      id, accountId: row.account_id, toEmail: row.to_email, trackOpens: true, trackClicks: true, listUnsubscribe: true,
    }, Buffer.from(row.raw));
    const mail = await parseMail(raw);
    assert.equal((mail.text as string).trim(), 'See https://shop.example/sale');
    const pixel = /<img src="([^"]+)"/.exec(mail.html as string)?.[1] as string;
    const link = /<a href="([^"]+)"/.exec(mail.html as string)?.[1] as string;
    const unsubscribe = /List-Unsubscribe:\s+<([^>]+)>/.exec(raw.toString())?.[1] as string;

    assert.equal((await fetch(pixel, { headers: { 'user-agent': 'Mail/1.0' } })).status, 200);
    const click = await fetch(link, { redirect: 'manual' });
    assert.equal(click.status, 302);
    assert.equal(click.headers.get('location'), 'https://shop.example/sale?utm=mail');

    const requests = await receiver.waitFor(2, 5000);
    const events = requests.map((r) => {
      assert.ok(verifyIndependently(r.headers['service-signature'] as string, r.body, hook.secret).valid, 'signed');
      return r.json() as { event: string; data: Record<string, unknown> };
    }).sort((a, b) => a.event.localeCompare(b.event));
    assert.deepEqual(events.map((e) => [e.event, e.data.message_id, e.data.unique, e.data.tags]), [
      ['message.clicked', id, true, ['sale']],
      ['message.opened', id, true, ['sale']],
    ]);
    assert.equal(events[0].data.url, 'https://shop.example/sale?utm=mail');
    assert.equal(events[1].data.user_agent, 'Mail/1.0');

    const stats = await sandboxApi(app).get('/v1/analytics/stats?tag=sale');
    assert.equal(stats.status, 200);
    assert.deepEqual([stats.body.metrics.opened_unique, stats.body.metrics.clicked_unique], [1, 1]);
    const exported = await sandboxApi(app).get('/v1/analytics/export?format=json');
    assert.deepEqual(exported.body.map((e: { event: string }) => e.event).sort(), ['message.clicked', 'message.opened', 'message.queued']);

    assert.equal((await fetch(unsubscribe, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 200);
    assert.equal((await sandboxApi(app).get('/v1/suppressions/ada@example.org')).status, 404, 'a sandbox message suppresses nothing');
  } finally {
    await receiver.close();
    await app.stop();
  }
});
