// New delivery rows of events the writer records reach the dispatcher in memory (src/webhooks/handoff.ts):
// written leased to it, handed over once durable, sent without a claim or a job load; a rolled-back transaction
// hands nothing and keeps no room.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from '../../src/clock';
import { newId } from '../../src/ids';
import { messageEventData, recordEvent } from '../../src/events/record';
import { eventBody } from '../../src/webhooks/event-body';
import { eventually } from '../support/wait';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { accountIdOf, createWebhook, startWebhookApp } from './helpers';
import type { TestApp } from '../support/app';
import type { WebhookDispatcher } from '../../src/webhooks/dispatcher';

const dispatcherOf = (app: TestApp) => app.workers.find((w) => w.name === 'webhooks') as unknown as WebhookDispatcher;

/** Creates the webhook and lets the claim its creation asks for end: a claim under way takes no hand-overs. */
async function webhookTo(app: TestApp, url: string): Promise<void> {
  await createWebhook(app, { url, events: ['message.delivered'] });
  await dispatcherOf(app).runOnce();
}

/** Records `count` delivered events in one writer transaction, as the MTA records a batch of outcomes. */
const rollBack = async () => {
  throw new Error('rolled back');
};

async function recordThroughWriter(app: TestApp, accountId: string, count: number, then?: () => Promise<void>): Promise<void> {
  await app.deps.writer.run(async (trx) => {
    for (let i = 0; i < count; i++) {
      const at = app.deps.clock.now();
      const m = { id: newId('msg'), mode: 'live' as const, toEmail: `u${i}@example.org`, fromEmail: 'app@shop.example', tags: [], metadata: {} };
      await recordEvent(trx, { accountId, mode: 'live', type: 'message.delivered', messageId: m.id, data: messageEventData(m, { delivered_at: iso(at) }), at });
    }
    await then?.(); // still in the transaction
  }, count);
}

interface Watch {
  /** rows the dispatcher's claims took */
  claimed: number;
  /** statements that load claimed jobs (deliveries joined with events) */
  jobLoads: number;
  stop(): void;
}

/** Watches the app's statements: what each claim returned, and every job load. */
function watchClaims(app: TestApp): Watch {
  const watch: Watch = { claimed: 0, jobLoads: 0, stop: () => app.db.off('query-response', seen) };
  function seen(response: unknown, q: { sql: string }): void {
    if (/CROSS JOIN webhook_deliveries/i.test(q.sql) && /^update/i.test(q.sql.trim())) watch.claimed += Array.isArray(response) ? response.length : 0;
    if (/join .events. as .e./i.test(q.sql)) watch.jobLoads++;
  }
  app.db.on('query-response', seen);
  return watch;
}

describe('webhook deliveries handed over in memory', () => {
  it('events the writer records are sent without a claim or a job load, with the body a redelivery sends', async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver();
    try {
      await webhookTo(app, receiver.url);
      const accountId = await accountIdOf(app);
      const watch = watchClaims(app);
      await recordThroughWriter(app, accountId, 20);
      const requests = await receiver.waitFor(20, 20_000);
      await app.deps.writer.drained();
      watch.stop();
      assert.equal(watch.claimed, 0, 'no row came by a claim');
      assert.equal(watch.jobLoads, 0, 'no job was loaded');
      const rows = await app.db('webhook_deliveries as d').join('events as e', 'e.id', 'd.event_id').select('e.*', 'd.status', 'd.lease_owner');
      assert.equal(rows.length, 20);
      const stored = new Map(rows.map((r) => [r.id as string, eventBody(r)]));
      for (const request of requests) {
        const { id } = request.json() as { id: string };
        assert.equal(request.body.toString('utf8'), stored.get(id), 'the bytes a redelivery rebuilds from the row');
      }
      await eventually(async () => (await app.db('webhook_deliveries').where({ status: 'succeeded', lease_owner: null })).length === 20, 10_000, 'results recorded, leases given back');
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('a rolled-back transaction hands nothing and gives its room back', async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver();
    try {
      await webhookTo(app, receiver.url);
      const accountId = await accountIdOf(app);
      // Far more rows than a webhook's share of the dispatcher's memory: a leaked reservation would leave none.
      const { perWebhookConcurrency, concurrency } = app.deps.config.webhooks;
      const many = 3 * concurrency * perWebhookConcurrency;
      await assert.rejects(recordThroughWriter(app, accountId, many, rollBack), /rolled back/);
      await assert.rejects(recordThroughWriter(app, accountId, many, rollBack), /rolled back/);
      const watch = watchClaims(app);
      await recordThroughWriter(app, accountId, 5);
      await receiver.waitFor(5, 20_000);
      await app.deps.writer.drained();
      watch.stop();
      assert.equal(watch.claimed, 0, 'the 5 were handed over: the rolled-back reservations were given back');
      assert.equal(receiver.requests.length, 5, 'nothing of the rolled-back events was sent');
      assert.equal((await app.db('webhook_deliveries')).length, 5);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });

  it('a stop waits for hand-overs under way and gives their rows back', async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver();
    let release = () => undefined as void;
    try {
      await webhookTo(app, receiver.url);
      const accountId = await accountIdOf(app);
      let recorded!: () => void;
      const inTransaction = new Promise<void>((resolve) => (recorded = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      const writing = recordThroughWriter(app, accountId, 1, async () => {
        recorded();
        await gate; // reserved, written leased, not yet committed
      });
      await inTransaction;
      const dispatcher = dispatcherOf(app);
      assert.equal((dispatcher as unknown as { reservedTotal: number }).reservedTotal, 1, 'the row was reserved for a hand-over');
      let stopped = false;
      const stopping = dispatcher.stop().then(() => (stopped = true));
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(stopped, false, 'the stop waits for the transaction');
      release();
      await writing;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the stop never ended')), 10_000)));
      await Promise.race([stopping, timeout]).finally(() => clearTimeout(timer));
      const rows = await app.db('webhook_deliveries');
      assert.equal(rows.length, 1);
      assert.equal(rows[0].lease_owner, null, 'given back, for the next start or another node');
      assert.equal(receiver.requests.length, 0, 'not sent by a stopped dispatcher');
    } finally {
      release(); // a failed assertion must not leave the writer waiting
      await receiver.close();
      await app.stop();
    }
  });
});
