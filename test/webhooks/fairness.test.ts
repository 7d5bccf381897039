// A dead or slow endpoint holds only its own slots: other webhooks keep receiving, and the global bound holds.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Config } from '../../src/config';
import { openDatabase } from '../../src/db';
import { startWebhookReceiver, WebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, recordMessageEvent, startWebhookApp } from './helpers';

describe('webhook dispatcher fairness', () => {
  it('keeps delivering to a healthy webhook while another one hangs', async () => {
    const app = await startWebhookApp({ webhooks: { concurrency: 4, perWebhookConcurrency: 2, timeoutMs: 20_000 } });
    const stuck = await startWebhookReceiver({ respond: () => ({ hang: true }) });
    const healthy = await startWebhookReceiver();
    try {
      await createWebhook(app, { url: stuck.url, events: ['*'] });
      await createWebhook(app, { url: healthy.url, events: ['*'] });
      for (let i = 0; i < 6; i++) await recordMessageEvent(app, { type: 'message.delivered' });
      await healthy.waitFor(6, 5000);
      assert.equal(stuck.requests.length, 2, 'the hanging webhook has two requests in flight, no more');
      const stuckHook = (await app.db('webhooks').where({ url: stuck.url }).first()).id;
      const pending = await app.db('webhook_deliveries').where({ webhook_id: stuckHook, status: 'pending' }).count({ n: '*' }).first();
      assert.equal(Number(pending?.n), 6, 'its six deliveries wait; nothing was lost');
      await app.close(); // aborts the hanging requests; they are not counted as attempts
      assert.equal(app.logs.filter((l) => /"level":50/.test(l)).length, 0, 'no errors while stopping');
    } finally {
      await app.stop();
      await Promise.all([stuck.close(), healthy.close()]);
    }
  });

  it('never has more requests in flight than webhooks.concurrency', async () => {
    const app = await startWebhookApp({ webhooks: { concurrency: 3, perWebhookConcurrency: 2, timeoutMs: 20_000 } });
    const receivers: WebhookReceiver[] = [];
    for (let i = 0; i < 3; i++) receivers.push(await startWebhookReceiver({ respond: () => ({ hang: true }) }));
    try {
      for (const r of receivers) await createWebhook(app, { url: r.url, events: ['*'] });
      for (let i = 0; i < 4; i++) await recordMessageEvent(app, { type: 'message.sent' });
      await Promise.race(receivers.map((r) => r.waitFor(1)));
      const total = async () => receivers.reduce((n, r) => n + r.requests.length, 0);
      for (let i = 0; i < 20 && (await total()) < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      await new Promise((resolve) => setTimeout(resolve, 200)); // room for a fourth request, which must not come
      assert.equal(await total(), 3);
      // The rest wait, claimed into the dispatcher's queue or still unclaimed; none was attempted.
      assert.equal((await app.db('webhook_deliveries').where({ status: 'pending', attempts: 0 })).length, 12);
      assert.equal((await app.db('webhook_attempts')).length, 0);
      await app.close();
      assert.equal(await openLeases(app.config), 0, 'a clean stop releases its leases');
    } finally {
      await app.stop();
      await Promise.all(receivers.map((r) => r.close()));
    }
  });
});

/** Read through a connection of its own: the app's are closed. */
async function openLeases(config: Config): Promise<number> {
  const db = openDatabase(config);
  try {
    return (await db('webhook_deliveries').whereNotNull('lease_owner')).length;
  } finally {
    await db.destroy();
  }
}
