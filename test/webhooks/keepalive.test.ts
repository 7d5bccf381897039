// Kept-alive connections to receivers: reused for the same checked address, never for another one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDnsServer } from '../support/dns-server';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, recordMessageEvent, startWebhookApp } from './helpers';

describe('webhook keep-alive', () => {
  it('ten deliveries to one receiver, one at a time, travel over one kept-alive connection', async () => {
    const app = await startWebhookApp({ webhooks: { perWebhookConcurrency: 1 } });
    const receiver = await startWebhookReceiver({ https: true });
    try {
      await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      for (let i = 0; i < 10; i++) await recordMessageEvent(app, { type: 'message.delivered' });
      const requests = await receiver.waitFor(10, 5000);
      assert.equal(requests.length, 10);
      assert.equal(receiver.connections(), 1, 'one TLS connection for all ten requests');
      assert.equal(requests[0].headers.connection, 'keep-alive');
    } finally {
      await app.stop();
      await receiver.close();
    }
  });

  it('a receiver whose DNS moves to another address gets no request over the pooled connection: the next one opens a connection to the new address', async () => {
    const dns = await startDnsServer({ 'hooks.customer.test': [{ type: 'A', data: '127.0.0.1' }] });
    const before = await startWebhookReceiver();
    // The same port on another loopback address: only the checked address tells the two apart.
    const after = await startWebhookReceiver({ host: '127.0.0.2', port: before.port });
    const app = await startWebhookApp({ dns: { servers: [dns.address] }, webhooks: { perWebhookConcurrency: 1 } });
    try {
      await createWebhook(app, { url: `http://hooks.customer.test:${before.port}/webhook`, events: ['message.delivered'] });
      await recordMessageEvent(app, { type: 'message.delivered' });
      await recordMessageEvent(app, { type: 'message.delivered' });
      await before.waitFor(2);
      assert.equal(before.connections(), 1, 'the two requests shared one connection');

      dns.set('hooks.customer.test', [{ type: 'A', data: '127.0.0.2' }]);
      await recordMessageEvent(app, { type: 'message.delivered' });
      const [moved] = await after.waitFor(1);
      assert.equal(moved.headers.host, `hooks.customer.test:${before.port}`);
      assert.equal(before.requests.length, 2, 'nothing more went to the old address over its idle connection');
      assert.equal(after.connections(), 1);
    } finally {
      await app.stop();
      await Promise.all([before.close(), after.close(), dns.close()]);
    }
  });

  it('a receiver that answers Connection: close gets every delivery, each over a new connection, none failed', async () => {
    const app = await startWebhookApp({ webhooks: { perWebhookConcurrency: 1 } });
    const receiver = await startWebhookReceiver({ respond: () => ({ headers: { connection: 'close' } }) });
    try {
      const hook = await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      for (let i = 0; i < 5; i++) await recordMessageEvent(app, { type: 'message.delivered' });
      await receiver.waitFor(5, 5000);
      const deadline = Date.now() + 5000;
      let rows: Array<{ status: string; attempts: number }> = [];
      while (Date.now() < deadline) {
        rows = await app.db('webhook_deliveries').where({ webhook_id: hook.id }).select('status', 'attempts');
        if (rows.every((r) => r.status === 'succeeded')) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(rows.map((r) => [r.status, Number(r.attempts)]), Array(5).fill(['succeeded', 1]));
      assert.equal(receiver.connections(), 5, 'a connection the receiver closed is not reused');
    } finally {
      await app.stop();
      await receiver.close();
    }
  });
});
