/**
 * Warm-up budgets and throttle gaps in the database. A send from a warming
 * or cooling-down IP is counted when the delivery is about to attempt it, by
 * a check-and-increment inside one transaction, so concurrent senders can
 * never take more than the cap, and a restart finds the counts where they
 * were. Requests that arrive while a transaction runs are decided together in
 * the next one (group commit): one fsync for many sends, same guarantees.
 */
import type { Config } from '../config';
import type { Db, Queryable } from '../db';
import { addUsage, getThrottle, getWarmups, saveWarmup, totalOn, usageOn, type Throttle, type Warmup } from './ip-state';
import { OTHER } from './providers';
import { allowanceOpensAt, capOf, hourlyAllowance, rollForward, utcDay } from './schedule';
import { intervalMs } from './throttle';

export type Limit = 'daily' | 'provider' | 'throttled';

export interface Reservation {
  address: string;
  /** recognised provider of the destination, or null (counted as `other`, limited only by the IP's cap) */
  provider: string | null;
  /** throttle key (provider or domain:<name>) */
  destination: string;
  now: number;
}

export type ReservationAnswer = { ok: true; capped: boolean; day: string } | { ok: false; retryAt: number; limit: Limit };

/** Moves a warm-up on to the day of `now` (see rollForward) and stores the change. */
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

/** Whether one more send fits today's cap (spread over the hours) and the provider's share of it. */
export function checkBudget(cap: number, usage: Record<string, number>, provider: string | null, shares: Record<string, number>, now: number): ReservationAnswer | null {
  const total = Object.values(usage).reduce((a, b) => a + b, 0);
  if (total >= hourlyAllowance(cap, now)) return { ok: false, retryAt: allowanceOpensAt(cap, total, now), limit: 'daily' };
  const share = provider === null ? undefined : shares[provider];
  if (share === undefined) return null;
  const used = usage[provider as string] ?? 0;
  if (used >= hourlyAllowance(cap * share, now)) return { ok: false, retryAt: allowanceOpensAt(cap * share, used, now), limit: 'provider' };
  return null;
}

/**
 * Decides a batch of reservations in order inside one transaction: throttle
 * gap first, then the warm-up budget; what is admitted is counted (warming
 * IPs) and moves the throttle gap on. Uncapped admissions are not counted
 * here (`capped: false`): their counters are statistics, written in batches.
 */
export async function decide(trx: Queryable, reqs: Reservation[], config: Pick<Config, 'pools'>): Promise<ReservationAnswer[]> {
  const warmups = await getWarmups(trx, [...new Set(reqs.map((r) => r.address))]);
  const usage = new Map<string, Record<string, number>>();
  const throttles = new Map<string, Throttle | undefined>();
  const increments = new Map<string, number>();
  const gaps = new Map<string, Throttle>();
  const answers: ReservationAnswer[] = [];
  for (const r of reqs) {
    const day = utcDay(r.now);
    const tkey = `${r.address} ${r.destination}`;
    if (!throttles.has(tkey)) throttles.set(tkey, await getThrottle(trx, r.address, r.destination));
    const throttle = throttles.get(tkey);
    const cooling = throttle && throttle.until > r.now ? throttle : undefined;
    if (cooling && cooling.nextSendAt > r.now) {
      answers.push({ ok: false, retryAt: cooling.nextSendAt, limit: 'throttled' });
      continue;
    }
    const stored = warmups.get(r.address);
    const warmup = stored && (await rollWarmup(trx, stored, r.now));
    if (warmup) warmups.set(r.address, warmup);
    const cap = warmup ? capOf(warmup) : null;
    const ukey = `${r.address}|${day}`;
    if (cap !== null && !usage.has(ukey)) usage.set(ukey, { ...((await usageOn(trx, day, [r.address])).get(r.address) ?? {}) });
    const counts = usage.get(ukey) ?? {};
    const refusal = cap === null ? null : checkBudget(cap, counts, r.provider, config.pools.providerShare, r.now);
    if (refusal) {
      answers.push(refusal);
      continue;
    }
    if (cooling) {
      cooling.nextSendAt = r.now + intervalMs(cooling.level, config.pools.throttle);
      gaps.set(tkey, cooling);
    }
    if (cap !== null) {
      const provider = r.provider ?? OTHER;
      counts[provider] = (counts[provider] ?? 0) + 1;
      increments.set(`${r.address}|${day}|${provider}`, (increments.get(`${r.address}|${day}|${provider}`) ?? 0) + 1);
    }
    answers.push({ ok: true, capped: cap !== null, day });
  }
  for (const [key, n] of increments) {
    const [address, day, provider] = key.split('|');
    await addUsage(trx, address, day, provider, n);
  }
  for (const t of gaps.values()) await trx('ip_throttles').where({ address: t.address, destination: t.destination }).update({ next_send_at: t.nextSendAt });
  return answers;
}

/** Group commit of reservations: one transaction decides everything that queued while the last one ran. */
export class Reservations {
  private queue: Array<{ req: Reservation; resolve: (a: ReservationAnswer) => void; reject: (e: unknown) => void }> = [];
  private running = false;

  constructor(
    private readonly db: Db,
    private readonly config: Pick<Config, 'pools'>,
  ) {}

  reserve(req: Reservation): Promise<ReservationAnswer> {
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    while (this.queue.length) {
      const batch = this.queue.splice(0, 500);
      try {
        const answers = await this.db.transaction((trx) => decide(trx, batch.map((b) => b.req), this.config));
        batch.forEach((b, i) => b.resolve(answers[i]));
      } catch (err) {
        batch.forEach((b) => b.reject(err));
      }
    }
    this.running = false;
  }
}
