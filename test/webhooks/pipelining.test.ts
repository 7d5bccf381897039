// While mail flows, the dispatcher neither claims at every commit nor lets its slots idle while a claim waits.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from '../../src/clock';
import { isPostgres } from '../../src/db';
import { newId } from '../../src/ids';
import { messageEventData, recordEvent } from '../../src/events/record';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { eventually } from '../support/wait';
import { CLAIM_ROUNDS } from '../../src/webhooks/dispatcher';
import { accountIdOf, createWebhook, startWebhookApp } from './helpers';
import type { TestApp } from '../support/app';

/** `count` delivered events in one transaction and no signal: the dispatcher hears of them from the commit only. */
async function recordUnsignalled(app: TestApp, accountId: string, count: number): Promise<void> {
  await app.db.transaction(async (trx) => {
    for (let i = 0; i < count; i++) {
      const at = app.deps.clock.now();
      const m = { id: newId('msg'), mode: 'live' as const, toEmail: `u${i}@example.org`, fromEmail: 'app@shop.example', tags: [], metadata: {} };
      await recordEvent(trx, { accountId, mode: 'live', type: 'message.delivered', messageId: m.id, data: messageEventData(m, { delivered_at: iso(at) }), at });
    }
  });
}

const leased = async (app: TestApp) => (await app.db('webhook_deliveries').whereNotNull('lease_owner')).length;

/** `count` delivered events to every webhook of the account, in one transaction. */
async function recordMany(app: TestApp, count: number): Promise<void> {
  await recordUnsignalled(app, await accountIdOf(app), count);
  app.deps.signals.emit('webhooksChanged');
}

/** A receiver whose answers wait until `open()`. */
async function gatedReceiver() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const receiver = await startWebhookReceiver({ respond: () => gate.then(() => undefined) });
  return { receiver, open };
}

describe('webhook dispatcher pipelining', () => {
  it('leaves rows committed for a webhook that holds a full batch to the claim made when the batch runs low', async () => {
    // one request in flight a webhook: a claim takes CLAIM_ROUNDS rows, the next comes at half of that held or fewer
    const app = await startWebhookApp({ webhooks: { perWebhookConcurrency: 1 } });
    const { receiver, open } = await gatedReceiver();
    try {
      await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      const accountId = await accountIdOf(app);
      await recordUnsignalled(app, accountId, CLAIM_ROUNDS + 4);
      await receiver.waitFor(1, 5000);
      await eventually(async () => (await leased(app)) === CLAIM_ROUNDS, 5000, `a batch of ${CLAIM_ROUNDS} claimed`);
      const claims: string[] = [];
      // a claim's UPDATE (on PostgreSQL inside a WITH … AS MATERIALIZED): it sets the lease
      const count = ({ sql }: { sql: string }) => /update .webhook_deliveries. set .lease_owner. = (\?|\$\d+), .lease_expires_at./i.test(sql) && claims.push(sql);
      app.db.on('query', count);
      for (let i = 0; i < 5; i++) await recordUnsignalled(app, accountId, 1);
      await new Promise((resolve) => setTimeout(resolve, 300)); // room for claims, which must not come
      app.db.off('query', count);
      assert.equal(claims.length, 0, 'no claim while the webhook holds its batch');
      open();
      await receiver.waitFor(CLAIM_ROUNDS + 9, 10_000); // the refill claims found the rest: no wake-up was lost
      await eventually(async () => (await app.db('webhook_deliveries').where({ status: 'succeeded' })).length === CLAIM_ROUNDS + 9, 5000, 'all recorded');
    } finally {
      await app.stop();
      await receiver.close();
    }
  });

  it('keeps sending queued deliveries while a claim waits for the database', async () => {
    const app = await startWebhookApp({ webhooks: { perWebhookConcurrency: 1 } });
    const { receiver, open } = await gatedReceiver();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding: Promise<void> | undefined;
    try {
      await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      await recordUnsignalled(app, await accountIdOf(app), CLAIM_ROUNDS + 4);
      await receiver.waitFor(1, 5000);
      await eventually(async () => (await leased(app)) === CLAIM_ROUNDS, 5000, `a batch of ${CLAIM_ROUNDS} claimed`);
      // Claims now wait: SQLite's one writer connection is taken, PostgreSQL's table locked against their UPDATE.
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      holding = app.db.transaction(async (trx) => {
        if (isPostgres(trx)) await trx.raw('LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE');
        locked();
        await held;
      });
      await lockTaken;
      open();
      // The first batch drains: at half held a claim starts and waits, and the half still queued go out meanwhile.
      await receiver.waitFor(CLAIM_ROUNDS, 5000);
      release();
      await holding;
      await receiver.waitFor(CLAIM_ROUNDS + 4, 10_000);
    } finally {
      release();
      await holding?.catch(() => undefined);
      await app.stop();
      await receiver.close();
    }
  });

  it('serves a slow webhook in turn while fast ones could take every slot', async () => {
    // Two slots for three webhooks. The slow one answers after 1.2 s, so its lane is over a second old whenever
    // its slot frees, and must be re-read then even though the fast lanes have taken both slots meanwhile.
    const app = await startWebhookApp({ webhooks: { concurrency: 2, perWebhookConcurrency: 1, timeoutMs: 20_000 } });
    const slow = await startWebhookReceiver({ respond: () => ({ delayMs: 1200 }) });
    const fast = [await startWebhookReceiver({ respond: () => ({ delayMs: 20 }) }), await startWebhookReceiver({ respond: () => ({ delayMs: 20 }) })];
    try {
      for (const r of [slow, ...fast]) await createWebhook(app, { url: r.url, events: ['message.delivered'] });
      await recordMany(app, 300); // more than the fast ones can take in the time below
      await slow.waitFor(1, 5000);
      await new Promise((resolve) => setTimeout(resolve, 4000));
      assert.ok(fast[0].requests.length + fast[1].requests.length > 20, 'the fast webhooks were busy meanwhile');
      assert.ok(slow.requests.length >= 3, `the slow webhook had its turn each time it finished: ${slow.requests.length} requests in 4 s`);
    } finally {
      await app.stop();
      await Promise.all([slow, ...fast].map((r) => r.close()));
    }
  });
});
