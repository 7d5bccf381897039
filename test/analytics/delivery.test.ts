// Through the MTA: a tracked live message is instrumented before DKIM signing and arrives verifiable;
// its pixel and link count in analytics next to sent/delivered; deferrals and suppressed sends count too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKey, liveApi } from '../support/app';
import { startSmtpSink } from '../support/smtp-sink';
import { parseMail, verifyDkim } from '../support/mail';
import { pointMx, SENDER_DOMAIN, startWorld } from '../delivery/world';

test('a tracked live send through the MTA: signed after instrumentation, and every outcome counted in analytics', async () => {
  // Not 'try later': that reads as a throttling reply (pools/throttle-rules.json), which would hold back ada's copy
  // too whenever later's answer comes first (the copies go out in parallel).
  const sink = await startSmtpSink({ reply: (ctx) => (ctx.stage === 'rcpt' && ctx.rcpt === 'later@dest.test' ? { code: 451, message: 'mailbox busy' } : undefined) });
  const world = await startWorld({ port: sink.port });
  try {
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
    const analytics = world.app.api.withKey(await createKey(world.app, 'live', ['analytics:read']));
    await (await liveApi(world.app, ['suppressions:manage'])).post('/v1/suppressions', { suppressions: [{ email: 'gone@dest.test' }] });
    const sent = await world.live.post('/v1/messages/send', {
      from: `Shop <news@${SENDER_DOMAIN}>`,
      to: [{ email: 'ada@dest.test' }, { email: 'gone@dest.test' }, { email: 'later@dest.test' }],
      subject: 'Spring sale',
      text: 'See https://shop.example/sale',
      html: '<html><body><a href="https://shop.example/sale">Shop now</a></body></html>',
      track_opens: true, track_clicks: true, list_unsubscribe: true, tags: ['sale'],
    });
    assert.equal(sent.status, 202, sent.text);
    await world.mta.runOnce();

    const [received] = await sink.waitFor(1);
    assert.deepEqual(received.rcptTo, ['ada@dest.test']);
    const [dkim] = await verifyDkim(received.raw, world.dns.address);
    assert.equal(dkim.result, 'pass', 'the signature covers the tracking changes');
    const mail = await parseMail(received.raw);
    const publicUrl = world.app.config.http.publicUrl.replace(/\/$/, '');
    const local = (url: string) => world.app.http.url + url.slice(publicUrl.length);
    const pixel = /<img src="([^"]+)"/.exec(mail.html as string)?.[1] as string;
    const link = /<a href="([^"]+)"/.exec(mail.html as string)?.[1] as string;
    assert.ok(pixel.startsWith(`${publicUrl}/t/o/`) && link.startsWith(`${publicUrl}/t/c/`));
    assert.match(received.raw.toString(), /List-Unsubscribe-Post: List-Unsubscribe=One-Click/);
    const signed = /h=([^;]+);/.exec(received.raw.toString().replace(/\r\n\s+/g, ' '))?.[1].toLowerCase().split(/\s*:\s*/) ?? [];
    assert.ok(signed.includes('list-unsubscribe') && signed.includes('list-unsubscribe-post'), `RFC 8058: both one-click headers are signed (h=${signed.join(':')})`);
    assert.equal((await fetch(local(pixel))).status, 200);
    assert.equal((await fetch(local(link), { redirect: 'manual' })).headers.get('location'), 'https://shop.example/sale');

    const stats = await analytics.get('/v1/analytics/stats?tag=sale');
    const m = stats.body.metrics;
    assert.deepEqual(
      { sent: m.sent, delivered: m.delivered, opened: m.opened_unique, clicked: m.clicked_unique, suppressed: m.suppressed, deferred: m.deferred },
      { sent: 1, delivered: 1, opened: 1, clicked: 1, suppressed: 1, deferred: 1 },
    );
    const domains = await analytics.get('/v1/analytics/breakdown/domains');
    assert.deepEqual(domains.body.data.map((d: { recipient_domain: string }) => d.recipient_domain), ['dest.test']);
  } finally {
    await world.stop();
    await sink.close();
  }
});
