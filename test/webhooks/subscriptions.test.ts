// Which webhooks an event goes to is answered from memory (src/webhooks/subscriptions.ts), not a SELECT in the
// writer's transactions: every change to an account's webhooks must take effect for the very next send, and one
// account's webhooks must never see another's events. Sends go the real way (API accept, MTA, loopback sink).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../src/auth/accounts';
import { createKey } from '../../src/auth/keys';
import { ApiClient, liveApi } from '../support/app';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { addDomain, publish, verify } from '../domains/helpers';
import { pointMx, sendMessage, startWorld, statementsDuring, type World } from '../delivery/world';
import { dispatch } from './helpers';

type Envelope = { event: string; data: { message_id: string } };

/** Sends one live message with `client` and delivers it: its events (queued, sent, delivered) are recorded. */
async function sendAndDeliver(world: World, sink: SmtpSink, client: ApiClient, from: string): Promise<string> {
  const before = sink.messages.length;
  const res = await client.post('/v1/messages/send', { from, to: ['alice@dest.test'], subject: 'Hi', text: 'A test message.' });
  assert.equal(res.status, 202, res.text);
  await world.mta.runOnce();
  await sink.waitFor(before + 1);
  return res.body.data[0].id as string;
}

/** The delivery rows the message's events got, as "webhook event" (written in the events' own transactions). */
async function deliveriesOf(world: World, messageId: string): Promise<string[]> {
  const rows: Array<{ webhook_id: string; type: string }> = await world.app.db('webhook_deliveries as d')
    .join('events as e', 'e.id', 'd.event_id').where('e.message_id', messageId).select('d.webhook_id', 'e.type');
  return rows.map((r) => `${r.webhook_id} ${r.type}`).sort();
}

const all = (hook: string) => [`${hook} message.delivered`, `${hook} message.queued`, `${hook} message.sent`];

/** What the receiver got, as "message event" (after the dispatcher sent everything due). */
async function received(world: World, receiver: WebhookReceiver): Promise<string[]> {
  await dispatch(world.app);
  return receiver.requests.map((r) => r.json() as Envelope).map((e) => `${e.data.message_id} ${e.event}`).sort();
}

describe('webhook subscriptions', () => {
  it('create, disable, re-enable, a new event list and delete each take effect for the next send', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    const receiver = await startWebhookReceiver();
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const api = await liveApi(world.app);
      const send = () => sendAndDeliver(world, sink, world.live, 'App <app@sender.test>');

      const before = await send(); // the account's subscriptions (none) are now in memory
      const hook = (await api.post('/v1/webhooks', { url: receiver.url, events: ['*'] })).body.id as string;
      const afterCreate = await send();
      assert.deepEqual(await deliveriesOf(world, before), [], 'a webhook receives no event recorded before it existed');
      assert.deepEqual(await deliveriesOf(world, afterCreate), all(hook));

      assert.equal((await api.patch(`/v1/webhooks/${hook}`, { enabled: false })).status, 200);
      const whileDisabled = await send();
      assert.deepEqual(await deliveriesOf(world, whileDisabled), []);

      assert.equal((await api.patch(`/v1/webhooks/${hook}`, { enabled: true })).status, 200);
      const reenabled = await send();
      assert.deepEqual(await deliveriesOf(world, reenabled), all(hook));

      assert.equal((await api.patch(`/v1/webhooks/${hook}`, { events: ['message.delivered'] })).status, 200);
      const narrowed = await send();
      assert.deepEqual(await deliveriesOf(world, narrowed), [`${hook} message.delivered`]);

      // What reached the receiver: exactly the rows above (a disabled webhook's events are not held for it).
      const expected = [afterCreate, reenabled].flatMap((id) => ['delivered', 'queued', 'sent'].map((e) => `${id} message.${e}`));
      await receiver.waitFor(7);
      assert.deepEqual(await received(world, receiver), [...expected, `${narrowed} message.delivered`].sort());

      assert.equal((await api.delete(`/v1/webhooks/${hook}`)).status, 200);
      const afterDelete = await send();
      assert.deepEqual(await deliveriesOf(world, afterDelete), []);
      assert.equal((await world.app.db('webhook_deliveries').count({ n: '*' }).first())?.n, 0, 'the deleted webhook\'s rows went with it');
    } finally {
      await receiver.close();
      await world.stop();
      await sink.close();
    }
  });

  it("another account's webhooks never receive this account's events", async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    const [mine, theirs] = [await startWebhookReceiver(), await startWebhookReceiver()];
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const other = await createAccount(world.app.db, 'other', world.clock.now());
      const otherApi = world.app.api.withKey((await createKey(world.app.db, { accountId: other.id, name: 'other live', mode: 'live', scopes: ['messages:send', 'webhooks:manage', 'domains:manage'] }, world.clock.now())).secret);
      publish(world.dns, await addDomain(otherApi, 'other.test'));
      assert.equal((await verify(otherApi, 'other.test')).status, 'verified');

      // The other account subscribes first; this account's next sends must not reach it.
      const theirHook = (await otherApi.post('/v1/webhooks', { url: theirs.url, events: ['*'] })).body.id as string;
      const myFirst = await sendAndDeliver(world, sink, world.live, 'App <app@sender.test>');
      assert.deepEqual(await deliveriesOf(world, myFirst), []);

      const myHook = (await (await liveApi(world.app)).post('/v1/webhooks', { url: mine.url, events: ['*'] })).body.id as string;
      const mySecond = await sendAndDeliver(world, sink, world.live, 'App <app@sender.test>');
      const theirOnly = await sendAndDeliver(world, sink, otherApi, 'Other <news@other.test>');
      assert.deepEqual(await deliveriesOf(world, mySecond), all(myHook));
      assert.deepEqual(await deliveriesOf(world, theirOnly), all(theirHook));

      await Promise.all([mine.waitFor(3), theirs.waitFor(3)]);
      assert.deepEqual((await received(world, mine)).map((line) => line.split(' ')[0]), [mySecond, mySecond, mySecond]);
      assert.deepEqual((await received(world, theirs)).map((line) => line.split(' ')[0]), [theirOnly, theirOnly, theirOnly]);
    } finally {
      await Promise.all([mine.close(), theirs.close()]);
      await world.stop();
      await sink.close();
    }
  });

  it('recording events runs no SELECT on webhooks on the writer connection', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    const receiver = await startWebhookReceiver();
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const hook = (await (await liveApi(world.app)).post('/v1/webhooks', { url: receiver.url, events: ['*'] })).body.id as string;
      let id = '';
      const seen = await statementsDuring(world, async () => {
        id = await sendAndDeliver(world, sink, world.live, 'App <app@sender.test>');
      });
      assert.deepEqual(await deliveriesOf(world, id), all(hook), 'the events did go to the webhook');
      // (the dispatcher's claim, an UPDATE that joins webhooks, is a write and may run meanwhile)
      assert.deepEqual(seen.filter((sql) => /^\s*select\b[\s\S]*\bfrom\s+[`"]?webhooks[`"]?\s/i.test(sql)), []);
    } finally {
      await receiver.close();
      await world.stop();
      await sink.close();
    }
  });
});
