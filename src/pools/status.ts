/**
 * The state of source addresses as the API and /metrics show it: warm-up
 * (day N of M, today's cap, what the hourly spreading allows by now, the
 * provider budgets), today's counters per provider, and the cool-downs in
 * force. Read-only: a warm-up due to move on to today is shown as it will
 * be, without writing (the next send writes it).
 */
import net from 'node:net';
import type { Config } from '../config';
import type { Queryable } from '../db';
import { activeThrottles, getWarmups, totalOn, usageOn, type Throttle, type Warmup } from './ip-state';
import { capOf, hourlyAllowance, rollForward, utcDay, type WarmupStatus } from './schedule';

export interface WarmupView {
  status: WarmupStatus;
  schedule: 'standard' | 'custom' | null;
  /** 1-based day of the schedule, null when warm */
  day: number | null;
  days: number | null;
  todayCap: number | null;
  /** cumulative allowance up to the end of the current UTC hour */
  allowedByNow: number | null;
  providerCaps: Record<string, number> | null;
  startedAt: number | null;
  pausedAt: number | null;
  finishedAt: number | null;
  finishedReason: 'completed' | 'stopped' | null;
}

export interface IpStatus {
  address: string;
  warmup: WarmupView;
  usage: { day: string; total: number; byProvider: Record<string, number> };
  throttles: Throttle[];
}

const WARM: WarmupView = {
  status: 'warm', schedule: null, day: null, days: null, todayCap: null, allowedByNow: null, providerCaps: null,
  startedAt: null, pausedAt: null, finishedAt: null, finishedReason: null,
};

function warmupView(w: Warmup, config: Pick<Config, 'pools'>, now: number): WarmupView {
  const cap = capOf(w);
  const base = { schedule: w.scheduleName, startedAt: w.startedAt, pausedAt: w.pausedAt, finishedAt: w.finishedAt, finishedReason: w.finishedReason };
  if (cap === null) return { ...WARM, ...base, days: w.schedule.length };
  const providerCaps = Object.fromEntries(Object.entries(config.pools.providerShare).map(([p, share]) => [p, Math.floor(cap * share)]));
  return {
    ...base,
    status: w.status,
    day: w.dayIndex + 1,
    days: w.schedule.length,
    todayCap: cap,
    allowedByNow: hourlyAllowance(cap, now),
    providerCaps,
  };
}

/** Status of each address; `pending` adds counts not yet written (uncapped addresses are counted in batches). */
export async function ipStatuses(
  db: Queryable,
  config: Pick<Config, 'pools'>,
  addresses: string[],
  now: number,
  pending: (address: string, day: string) => Record<string, number> = () => ({}),
): Promise<Map<string, IpStatus>> {
  const day = utcDay(now);
  const [warmups, usage, throttles] = await Promise.all([getWarmups(db, addresses), usageOn(db, day, addresses), activeThrottles(db, now, addresses)]);
  const out = new Map<string, IpStatus>();
  for (const address of addresses) {
    const stored = warmups.get(address);
    let warmup = WARM;
    if (stored) {
      const used = stored.dayDate && stored.dayDate !== day ? await totalOn(db, address, stored.dayDate) : 0;
      warmup = warmupView({ ...stored, ...rollForward(stored, day, used) }, config, now);
    }
    const byProvider = { ...(usage.get(address) ?? {}) };
    for (const [p, n] of Object.entries(pending(address, day))) byProvider[p] = (byProvider[p] ?? 0) + n;
    const total = Object.values(byProvider).reduce((a, b) => a + b, 0);
    out.set(address, { address, warmup, usage: { day, total, byProvider }, throttles: throttles.filter((t) => t.address === address) });
  }
  return out;
}

export const familyOf = (address: string): 'ipv4' | 'ipv6' => (net.isIPv6(address) ? 'ipv6' : 'ipv4');
