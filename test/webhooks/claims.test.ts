// The dispatcher's batch claim takes at most its limit, and at most perWebhook rows of each webhook, on both databases.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { claimDue } from '../../src/webhooks/claims';
import { createWebhook, recordMessageEvent, startWebhookApp } from './helpers';

describe('webhook claims', () => {
  it('a claim leases at most its limit and perWebhook rows per webhook, however many are due', async () => {
    const app = await startWebhookApp();
    try {
      await app.workers.find((w) => w.name === 'webhooks')!.stop(); // claims by hand only
      await createWebhook(app, { url: 'http://127.0.0.1:9/a', events: ['message.delivered'] });
      await createWebhook(app, { url: 'http://127.0.0.1:9/b', events: ['message.delivered'] });
      for (let i = 0; i < 20; i++) await recordMessageEvent(app, { type: 'message.delivered' });
      const now = app.deps.clock.now();
      const leased = async () => (await app.db('webhook_deliveries').whereNotNull('lease_owner')).length;

      const one = await claimDue(app.db, { now, perWebhook: 100, limit: 1, skipWebhooks: [] }, 'o1', now + 60_000);
      assert.equal(one.length, 1);
      assert.equal(await leased(), 1, 'no row leased beyond the ones returned');

      const shared = await claimDue(app.db, { now, perWebhook: 3, limit: 100, skipWebhooks: [] }, 'o2', now + 60_000);
      const perHook = new Map<string, number>();
      for (const r of shared) perHook.set(r.webhookId, (perHook.get(r.webhookId) ?? 0) + 1);
      assert.deepEqual([...perHook.values()], [3, 3]);
      assert.equal(await leased(), 7);
    } finally {
      await app.stop();
    }
  });
});
