// The dispatcher's cost in SQL statements, counted with knex's query event, so a gain cannot silently regress.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from '../../src/clock';
import { newId } from '../../src/ids';
import { messageEventData, recordEvent } from '../../src/events/record';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { accountIdOf, createWebhook, startWebhookApp } from './helpers';
import type { TestApp } from '../support/app';

const BURST = 100;
/**
 * Before batched claims and result writes this burst took about 690 statements (7 per delivery). With prepared
 * statements kept (src/db/statement-cache.ts) a result transaction commits sooner, so fewer results finish while
 * one is on its way and share the next: 24 result transactions of 4 statements for the 100 (110-114 in all),
 * where 100 held before. Since a result transaction rides with its COMMIT (one trip to SQLite's thread instead of
 * three: src/webhooks/results.ts) it is sooner still, and the same burst takes more of them: 93-129 statements in
 * all over runs of that code, 31 transactions at most. The bound still fails by far on a per-delivery path (690)
 * or on one result transaction per delivery (400).
 */
const MAX_STATEMENTS = 150;

interface QueryEvent { sql: string; __knexTxId?: string }

/** Records `count` delivered events in one transaction, as the MTA records a batch. */
const MARKER = 'select 1 as recording_burst';

async function recordBurst(app: TestApp, accountId: string, count: number): Promise<void> {
  await app.db.transaction(async (trx) => {
    await trx.raw(MARKER); // names this transaction in the query log
    for (let i = 0; i < count; i++) {
      const at = app.deps.clock.now();
      const m = { id: newId('msg'), mode: 'live' as const, toEmail: `u${i}@example.org`, fromEmail: 'app@shop.example', tags: [], metadata: {} };
      await recordEvent(trx, { accountId, mode: 'live', type: 'message.delivered', messageId: m.id, data: messageEventData(m, { delivered_at: iso(at) }), at });
    }
  });
  app.deps.signals.emit('webhooksChanged');
}

/** Resolves when `count` attempts were recorded (read from the log, so waiting adds no statement). */
async function attemptsLogged(app: TestApp, count: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (app.logs.filter((l) => l.includes('"webhook delivered"')).length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} recorded deliveries`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('webhook dispatcher statement count', () => {
  it(`a burst of ${BURST} events to one webhook is sent and recorded with at most ${MAX_STATEMENTS} SQL statements`, async () => {
    const app = await startWebhookApp();
    const receiver = await startWebhookReceiver();
    try {
      await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      const accountId = await accountIdOf(app);
      const log: QueryEvent[] = [];
      const count = (q: QueryEvent) => log.push(q);
      app.db.on('query', count);
      await recordBurst(app, accountId, BURST);
      await receiver.waitFor(BURST, 20_000);
      await attemptsLogged(app, BURST);
      app.db.off('query', count);
      // The recording transaction's statements carry its txid: they are the event path's, not the dispatcher's.
      const recordingTx = log.find((q) => q.sql === MARKER)?.__knexTxId;
      const statements = log.filter((q) => q.__knexTxId !== recordingTx).map((q) => q.sql);
      console.log(`dispatcher statements for ${BURST} deliveries: ${statements.length}`);
      const byKind = new Map<string, number>();
      for (const sql of statements) byKind.set(sql.slice(0, 60), (byKind.get(sql.slice(0, 60)) ?? 0) + 1);
      assert.ok(statements.length <= MAX_STATEMENTS, `${statements.length} statements:\n${[...byKind].map(([k, n]) => `${n} × ${k}`).join('\n')}`);
      assert.equal((await app.db('webhook_deliveries').where({ status: 'succeeded', attempts: 1 })).length, BURST);
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
