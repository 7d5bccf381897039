/**
 * Rollups the writer keeps and sums per row until its commit (and across commits, counterFlushMs) end up as
 * the same rows as one upsert per event: every tag row set, pool, grain and bucket, for events that carry
 * their message's dimensions (the MTA's) and events that read them from the message row.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rollupCounter, type Metric } from '../../src/analytics/rollup';
import { recordEvent } from '../../src/events/record';
import type { Mode } from '../../src/auth/scopes';
import { startTestApp, type TestApp } from '../support/app';
import { defaultAccountId, insertMessage, recordMessageEvent, type SeededMessage } from './fixtures';

const START = Date.UTC(2026, 0, 31, 22); // two hours before a day and a month end
const TAGS = [[], ['welcome'], ['welcome', 'receipt', 'welcome']];
const EVENTS = ['message.sent', 'message.delivered', 'message.bounced'];

interface Change {
  index: number;
  type: string;
  at: number;
}

/** 30 messages, 3 events each, spread over 4 hours; the same list for both modes. */
const changes: Change[] = Array.from({ length: 90 }, (_, i) => ({ index: i % 30, type: EVENTS[i % 3], at: START + i * 160_000 }));

async function seed(app: TestApp, mode: Mode): Promise<SeededMessage[]> {
  const accountId = await defaultAccountId(app.db);
  return Promise.all(Array.from({ length: 30 }, (_, i) => insertMessage(app.db, {
    accountId, mode, createdAt: START, tags: TAGS[i % 3], ipPool: i % 4 ? null : 'warm', toEmail: `r${i}@dest${i % 2}.test`,
  })));
}

const bounceData = (c: Change) => (c.type === 'message.bounced' ? { type: c.index % 2 ? 'soft' : 'hard' } : {});

/** Rollup rows of a mode, without the mode, in a stable order. */
async function rows(app: TestApp, table: string, mode: Mode): Promise<string[]> {
  const found: Array<Record<string, unknown>> = await app.db(table).where({ mode });
  return found.map(({ mode: _mode, ...rest }) => JSON.stringify(Object.entries(rest).sort(([a], [b]) => a.localeCompare(b)))).sort();
}

describe('rollups summed by the writer', () => {
  it('equal one upsert per event: tags, pools, grains, with and without the dimensions on the event', async () => {
    const app = await startTestApp();
    try {
      const live = await seed(app, 'live');
      const test = await seed(app, 'test');
      // live: every change in one writer transaction, half the events carrying their dimensions as the MTA's do
      await app.deps.writer.run(async (trx) => {
        for (const [n, c] of changes.entries()) {
          const m = live[c.index];
          const dims = n % 2 ? { sendingDomain: m.sendingDomain, recipientDomain: m.recipientDomain, tags: m.tags, ipPool: m.ipPool } : undefined;
          await recordEvent(trx, { accountId: m.accountId, mode: 'live', type: c.type, messageId: m.id, at: c.at, data: bounceData(c), dims });
          if (n % 5 === 0) await rollupCounter(trx, { ...m, at: c.at }, 'deferred' as Metric);
        }
      });
      await app.deps.writer.flushCounters();
      // test: one transaction per change, each upserting at once
      for (const [n, c] of changes.entries()) {
        const m = test[c.index];
        await recordMessageEvent(app.db, m, c.type, c.at, bounceData(c));
        if (n % 5 === 0) await app.db.transaction((trx) => rollupCounter(trx, { ...m, at: c.at }, 'deferred'));
      }
      const summed = await rows(app, 'analytics_rollups', 'live');
      assert.ok(summed.filter((r) => r.includes('["recipient_domain",""]')).length > 20, `${summed.length} rows`);
      assert.ok(summed.filter((r) => !r.includes('["recipient_domain",""]')).length > 20, `${summed.length} rows`);
      assert.deepEqual(summed, await rows(app, 'analytics_rollups', 'test'));
    } finally {
      await app.stop();
    }
  });
});
