/**
 * The overview's numbers: today and the last 30 UTC days from the analytics
 * day rollups (30 rows, whatever the volume), and the account's queue from
 * the messages table's status index.
 */
import type { Queryable } from '../db';
import type { Mode } from '../auth/scopes';
import { DAY } from '../analytics/rollup';
import { rowsOf, SUMS, toCounts } from '../analytics/queries';
import type { Counts } from '../analytics/rollup';

export const OVERVIEW_DAYS = 30;
/** Destinations listed under deferred_by_destination at most. */
export const DESTINATIONS_LISTED = 10;

export interface DayCounts {
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  opened: number;
}

export interface Scope {
  accountId: string;
  mode: Mode;
}

const shape = (c: Counts): DayCounts => ({
  sent: c.sent, delivered: c.delivered, bounced: c.bounced_hard + c.bounced_soft, complained: c.complained, opened: c.opened_unique,
});

function sum(days: DayCounts[]): DayCounts {
  const total: DayCounts = { sent: 0, delivered: 0, bounced: 0, complained: 0, opened: 0 };
  for (const d of days) for (const k of Object.keys(total) as Array<keyof DayCounts>) total[k] += d[k];
  return total;
}

/** The last 30 UTC days, oldest first, today last. */
export async function dailyCounts(db: Queryable, scope: Scope, now: number) {
  const today = Math.floor(now / DAY) * DAY;
  const first = today - (OVERVIEW_DAYS - 1) * DAY;
  const analyticsScope = { ...scope, tag: '', from: first, to: today + DAY, tz: 'UTC' };
  const rows = (await rowsOf(db, analyticsScope, 'd').andWhere('bucket', '>=', first).andWhere('bucket', '<=', today)
    .select('bucket', db.raw(SUMS)).groupBy('bucket')) as Array<Record<string, unknown>>;
  const byDay = new Map(rows.map((r) => [Number(r.bucket), shape(toCounts(r))]));
  const daily = Array.from({ length: OVERVIEW_DAYS }, (_, i) => {
    const day = first + i * DAY;
    return { date: new Date(day).toISOString().slice(0, 10), ...(byDay.get(day) ?? shape(toCounts(undefined))) };
  });
  return { today: daily[daily.length - 1], last30Days: sum(daily), daily };
}

/** Messages still waiting, by status, and the destinations with most deferred messages. */
export async function queueCounts(db: Queryable, scope: Scope) {
  const base = () => db('messages').where({ account_id: scope.accountId, mode: scope.mode }).whereNotNull('next_attempt_at');
  const rows: Array<{ status: string; n: number }> = await base().whereIn('status', ['queued', 'deferred', 'scheduled'])
    .groupBy('status').select('status').count({ n: '*' });
  const by = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  const deferred = (await base().where('status', 'deferred')
    .groupBy('recipient_domain').select('recipient_domain as domain').count({ n: '*' })
    .orderBy([{ column: 'n', order: 'desc' }, { column: 'domain', order: 'asc' }]).limit(DESTINATIONS_LISTED)) as unknown as Array<{ domain: string; n: number }>;
  return {
    queue: { queued: by.queued ?? 0, deferred: by.deferred ?? 0, scheduled: by.scheduled ?? 0 },
    deferredByDestination: deferred.map((r) => ({ domain: r.domain, count: Number(r.n) })),
  };
}
