/** Every account with this month's billable usage and today's live messages, for the operator. */
import type { Queryable } from '../db';
import { ALL_DOMAINS, DAY, ROLLUPS } from '../analytics/rollup';
import { monthOf } from '../auth/usage';

/** Accounts listed at most. */
export const ACCOUNTS_MAX = 1000;

export async function accountsOverview(db: Queryable, now: number) {
  const month = monthOf(now);
  const today = Math.floor(now / DAY) * DAY;
  const accounts: Array<{ id: string; name: string; created_at: number }> = await db('accounts').select('id', 'name', 'created_at').orderBy('name').limit(ACCOUNTS_MAX);
  const usage: Array<{ account_id: string; messages: number }> = await db('usage_counters').where({ month }).select('account_id', 'messages');
  // by the listed accounts, so the rollups' key serves it (equality up to the bucket) instead of a whole-table scan
  const sent = (await db(ROLLUPS).whereIn('account_id', accounts.map((a) => a.id)).where({ mode: 'live', tag: '', grain: 'd', recipient_domain: ALL_DOMAINS, bucket: today })
    .groupBy('account_id').select('account_id').sum({ n: 'sent' })) as Array<{ account_id: string; n: number }>;
  const usageOf = new Map(usage.map((u) => [u.account_id, Math.max(0, Number(u.messages))]));
  const sentOf = new Map(sent.map((s) => [s.account_id, Number(s.n)]));
  return accounts.map((a) => ({
    name: a.name,
    created_at: new Date(Number(a.created_at)).toISOString(),
    usage: { month, billable_messages: usageOf.get(a.id) ?? 0 },
    messages_today: sentOf.get(a.id) ?? 0,
  }));
}
