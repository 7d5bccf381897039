// Tracking works for mail relayed over SMTP: X-Pigeon-Track-* asks for it, the MTA instruments the
// relayed MIME before signing, and the recipient's pixel and link fetches become events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMail, verifyDkim } from '../support/mail';
import { ids, submissionClient } from '../smtp/helpers';
import { SENDER_DOMAIN, startRelayWorld } from '../smtp/world';

test('a message relayed over SMTP with X-Pigeon-Track-Opens/Clicks arrives instrumented and signed, and its tracking URLs work', async () => {
  const world = await startRelayWorld();
  const client = submissionClient(world.app.submissionPort, world.liveKey);
  try {
    const info = await client.sendMail({
      from: `Shop <news@${SENDER_DOMAIN}>`, to: 'ada@dest.test', subject: 'News',
      text: 'Read it at https://shop.example/news',
      html: '<p>Read it <a href="https://shop.example/news">here</a>.</p>',
      headers: { 'X-Pigeon-Track-Opens': 'true', 'X-Pigeon-Track-Clicks': 'true', 'X-Pigeon-List-Unsubscribe': 'true' },
    });
    const [id] = ids(info.response);
    await world.mta.runOnce();
    const [received] = await world.sink.waitFor(1);
    const [dkim] = await verifyDkim(received.raw, world.dns.address);
    assert.equal(dkim.result, 'pass', dkim.info);
    const mail = await parseMail(received.raw);
    assert.equal((mail.text as string).trim(), 'Read it at https://shop.example/news', 'text parts are left alone');
    const publicUrl = world.app.config.http.publicUrl.replace(/\/$/, '');
    const local = (url: string) => world.app.http.url + url.slice(publicUrl.length);
    const pixel = /<img src="([^"]+)"/.exec(mail.html as string)?.[1] as string;
    const link = /<a href="([^"]+)"/.exec(mail.html as string)?.[1] as string;
    assert.match(received.raw.toString(), /List-Unsubscribe:\s+<[^>]+\/u\/[A-Za-z0-9_-]+>/);

    assert.equal((await fetch(local(pixel))).status, 200);
    const click = await fetch(local(link), { redirect: 'manual' });
    assert.equal(click.headers.get('location'), 'https://shop.example/news');
    const types = (await world.app.db('events').where({ message_id: id }).orderBy('id')).map((e: { type: string }) => e.type);
    assert.deepEqual(types, ['message.queued', 'message.sent', 'message.delivered', 'message.opened', 'message.clicked']);
  } finally {
    client.close();
    await world.stop();
  }
});
