/** Billable usage: live messages accepted per account and UTC calendar month. */
import { addToCounters } from '../db/buffer';
import type { Queryable } from '../db';

export const monthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7);

export async function addUsage(db: Queryable, accountId: string, now: number, messages: number): Promise<void> {
  if (messages <= 0) return;
  await addToCounters(db, 'usage_counters', ['account_id', 'month'], [{ account_id: accountId, month: monthOf(now), messages }], ['messages']);
}

export async function usageFor(db: Queryable, accountId: string, month: string): Promise<number> {
  const row = await db('usage_counters').where({ account_id: accountId, month }).first();
  return Number(row?.messages ?? 0);
}

/**
 * Gives back the count of a live message that was never sent (its recipient was suppressed): usage is counted
 * at accept, in the month the message was accepted, so the refund goes to that month.
 */
export async function refundUsage(db: Queryable, accountId: string, acceptedAt: number, messages: number): Promise<void> {
  await db('usage_counters')
    .where({ account_id: accountId, month: monthOf(acceptedAt) })
    .where('messages', '>=', messages)
    .decrement('messages', messages);
}
