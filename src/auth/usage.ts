/** Billable usage: live messages accepted per account and UTC calendar month. */
import { addToCounters } from '../db/buffer';
import type { Queryable } from '../db';

const DAY_MS = 86_400_000;
let lastDay = { day: Number.NaN, month: '' };

/** `YYYY-MM` (UTC) of `ms`; the last day's answer is kept, as every send asks for the same one. */
export function monthOf(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (day !== lastDay.day) lastDay = { day, month: new Date(day * DAY_MS).toISOString().slice(0, 7) }; // the day's alone
  return lastDay.month;
}

export async function addUsage(db: Queryable, accountId: string, now: number, messages: number): Promise<void> {
  if (messages <= 0) return;
  await addToCounters(db, 'usage_counters', ['account_id', 'month'], [{ account_id: accountId, month: monthOf(now), messages }], ['messages']);
}

export async function usageFor(db: Queryable, accountId: string, month: string): Promise<number> {
  const row = await db('usage_counters').where({ account_id: accountId, month }).first();
  // never below 0: a count lost to a crash (at most counterFlushMs of them) must not make a later refund show as credit
  return Math.max(0, Number(row?.messages ?? 0));
}

/**
 * Gives back the count of a live message that was never sent (its recipient was suppressed): usage is counted
 * at accept, in the month the message was accepted, so the refund goes to that month. It is a negative addition
 * through the same counters as the count at accept, so where those are summed in memory before they are written
 * (PostgreSQL, writer.ts counterFlushMs) the two meet there; a refund written straight to the row could find the
 * count still in memory, skip, and bill the message anyway.
 */
export async function refundUsage(db: Queryable, accountId: string, acceptedAt: number, messages: number): Promise<void> {
  if (messages <= 0) return;
  await addToCounters(db, 'usage_counters', ['account_id', 'month'], [{ account_id: accountId, month: monthOf(acceptedAt), messages: -messages }], ['messages']);
}
