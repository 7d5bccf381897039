/**
 * Warm-up budgets in the database. A send from a warming IP is counted when
 * the delivery is about to attempt it, by a check-and-increment inside one
 * transaction, so concurrent senders (or a second process) can never take
 * more than the cap, and a restart finds the counts where they were.
 */
import type { Queryable } from '../db';
import { addUsage, getWarmup, saveWarmup, totalOn, usageOn, type Warmup } from './ip-state';
import { OTHER } from './providers';
import { allowanceOpensAt, capOf, hourlyAllowance, rollForward, utcDay } from './schedule';

export interface BudgetRequest {
  address: string;
  /** recognised provider of the destination, or null (counted as `other`, limited only by the IP's cap) */
  provider: string | null;
  now: number;
  /** provider id → share of the IP's daily cap */
  shares: Record<string, number>;
}

export type BudgetAnswer =
  | { ok: true; capped: boolean; day: string }
  | { ok: false; retryAt: number; limit: 'daily' | 'provider' };

/** Moves a warm-up on to today (see rollForward) and stores the change. */
export async function rollWarmup(db: Queryable, w: Warmup, now: number): Promise<Warmup> {
  const today = utcDay(now);
  if (w.status === 'warm' || w.dayDate === today) return w;
  const used = w.dayDate ? await totalOn(db, w.address, w.dayDate) : 0;
  const next = rollForward(w, today, used);
  const finished = next.status === 'warm';
  const saved: Warmup = { ...w, ...next, updatedAt: now, ...(finished ? { finishedAt: now, finishedReason: 'completed' as const } : {}) };
  await saveWarmup(db, saved);
  return saved;
}

/**
 * Counts one send against the address's budget for today if the budget
 * allows it now: the day's cap spread over the hours, and the provider's
 * share of it. Must run inside a transaction (the read and the increment are
 * one step). Addresses that are not warming are not capped and not counted
 * here (their counters are statistics, written in batches).
 */
export async function reserveBudget(trx: Queryable, req: BudgetRequest): Promise<BudgetAnswer> {
  const { address, provider, now } = req;
  const day = utcDay(now);
  const stored = await getWarmup(trx, address);
  if (!stored) return { ok: true, capped: false, day };
  const w = await rollWarmup(trx, stored, now);
  const cap = capOf(w);
  if (cap === null) return { ok: true, capped: false, day };
  const usage = (await usageOn(trx, day, [address])).get(address) ?? {};
  const total = Object.values(usage).reduce((a, b) => a + b, 0);
  if (total >= hourlyAllowance(cap, now)) return { ok: false, retryAt: allowanceOpensAt(cap, total, now), limit: 'daily' };
  const share = provider === null ? undefined : req.shares[provider];
  if (share !== undefined) {
    const used = usage[provider as string] ?? 0;
    if (used >= hourlyAllowance(cap * share, now)) return { ok: false, retryAt: allowanceOpensAt(cap * share, used, now), limit: 'provider' };
  }
  await addUsage(trx, address, day, provider ?? OTHER, 1);
  return { ok: true, capped: true, day };
}
