/**
 * The global state of each source address (ip_warmups, ip_daily_usage,
 * ip_throttles), mapped to camelCase objects. Keyed by address, not account:
 * every account sending from an IP shares its reputation.
 */
import type { Queryable } from '../db';
import { fromJson, toJson } from '../db';
import type { WarmupProgress, WarmupStatus } from './schedule';

export interface Warmup extends WarmupProgress {
  address: string;
  scheduleName: 'standard' | 'custom';
  startedAt: number;
  pausedAt: number | null;
  finishedAt: number | null;
  finishedReason: 'completed' | 'stopped' | null;
  updatedAt: number;
}

interface WarmupRow {
  address: string;
  status: WarmupStatus;
  schedule_name: 'standard' | 'custom';
  schedule: string;
  day_index: number;
  day_date: string | null;
  started_at: number | string;
  paused_at: number | string | null;
  finished_at: number | string | null;
  finished_reason: 'completed' | 'stopped' | null;
  updated_at: number | string;
}

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

const toWarmup = (r: WarmupRow): Warmup => ({
  address: r.address,
  status: r.status,
  scheduleName: r.schedule_name,
  schedule: fromJson<number[]>(r.schedule, []),
  dayIndex: Number(r.day_index),
  dayDate: r.day_date,
  startedAt: Number(r.started_at),
  pausedAt: num(r.paused_at),
  finishedAt: num(r.finished_at),
  finishedReason: r.finished_reason,
  updatedAt: Number(r.updated_at),
});

export async function getWarmups(db: Queryable, addresses?: string[]): Promise<Map<string, Warmup>> {
  const q = db<WarmupRow>('ip_warmups');
  if (addresses) q.whereIn('address', addresses);
  return new Map((await q).map((r) => [r.address, toWarmup(r)]));
}

export async function getWarmup(db: Queryable, address: string): Promise<Warmup | undefined> {
  const row = await db<WarmupRow>('ip_warmups').where({ address }).first();
  return row && toWarmup(row);
}

export async function saveWarmup(db: Queryable, w: Warmup): Promise<void> {
  const row = {
    address: w.address,
    status: w.status,
    schedule_name: w.scheduleName,
    schedule: toJson(w.schedule) as string,
    day_index: w.dayIndex,
    day_date: w.dayDate,
    started_at: w.startedAt,
    paused_at: w.pausedAt,
    finished_at: w.finishedAt,
    finished_reason: w.finishedReason,
    updated_at: w.updatedAt,
  };
  await db('ip_warmups').insert(row).onConflict('address').merge();
}

/** Messages attempted per provider from each address on one UTC day. */
export async function usageOn(db: Queryable, day: string, addresses?: string[]): Promise<Map<string, Record<string, number>>> {
  const q = db('ip_daily_usage').where({ day });
  if (addresses) q.whereIn('address', addresses);
  const rows: Array<{ address: string; provider: string; sent: number }> = await q.select('address', 'provider', 'sent');
  const out = new Map<string, Record<string, number>>();
  for (const r of rows) {
    const byProvider = out.get(r.address) ?? {};
    byProvider[r.provider] = Number(r.sent);
    out.set(r.address, byProvider);
  }
  return out;
}

export async function totalOn(db: Queryable, address: string, day: string): Promise<number> {
  const row = await db('ip_daily_usage').where({ address, day }).sum({ n: 'sent' }).first();
  return Number(row?.n ?? 0);
}

/** Adds n (may be negative, never below zero) to one counter. */
export async function addUsage(db: Queryable, address: string, day: string, provider: string, n: number): Promise<void> {
  if (n === 0) return;
  await db('ip_daily_usage')
    .insert({ address, day, provider, sent: Math.max(0, n) })
    .onConflict(['address', 'day', 'provider'])
    .merge({ sent: db.raw('CASE WHEN ip_daily_usage.sent + ? < 0 THEN 0 ELSE ip_daily_usage.sent + ? END', [n, n]) });
}

export async function pruneUsage(db: Queryable, beforeDay: string): Promise<number> {
  return db('ip_daily_usage').where('day', '<', beforeDay).delete();
}

export interface Throttle {
  address: string;
  destination: string;
  level: number;
  reason: 'rate_limited' | 'reputation';
  lastReply: string;
  hits: number;
  since: number;
  lastHitAt: number;
  until: number;
  nextSendAt: number;
}

interface ThrottleRow {
  address: string;
  destination: string;
  level: number;
  reason: Throttle['reason'];
  last_reply: string;
  hits: number;
  since: number | string;
  last_hit_at: number | string;
  until: number | string;
  next_send_at: number | string;
}

const toThrottle = (r: ThrottleRow): Throttle => ({
  address: r.address,
  destination: r.destination,
  level: Number(r.level),
  reason: r.reason,
  lastReply: r.last_reply,
  hits: Number(r.hits),
  since: Number(r.since),
  lastHitAt: Number(r.last_hit_at),
  until: Number(r.until),
  nextSendAt: Number(r.next_send_at),
});

/** Throttles whose cool-down has not ended at `now`. */
export async function activeThrottles(db: Queryable, now: number, addresses?: string[]): Promise<Throttle[]> {
  const q = db<ThrottleRow>('ip_throttles').where('until', '>', now).orderBy(['address', 'destination']);
  if (addresses) q.whereIn('address', addresses);
  return (await q).map(toThrottle);
}

export async function getThrottle(db: Queryable, address: string, destination: string): Promise<Throttle | undefined> {
  const row = await db<ThrottleRow>('ip_throttles').where({ address, destination }).first();
  return row && toThrottle(row);
}

export async function saveThrottle(db: Queryable, t: Throttle): Promise<void> {
  const row = {
    address: t.address,
    destination: t.destination,
    level: t.level,
    reason: t.reason,
    last_reply: t.lastReply,
    hits: t.hits,
    since: t.since,
    last_hit_at: t.lastHitAt,
    until: t.until,
    next_send_at: t.nextSendAt,
  };
  await db('ip_throttles').insert(row).onConflict(['address', 'destination']).merge();
}

/**
 * Takes the next send slot of a cool-down: succeeds only when the slot is
 * due, and moves it `intervalMs` on, in one statement (two senders cannot
 * take one slot).
 */
export async function takeThrottleSlot(db: Queryable, address: string, destination: string, now: number, intervalMs: number): Promise<boolean> {
  const n = await db('ip_throttles')
    .where({ address, destination })
    .where('next_send_at', '<=', now)
    .update({ next_send_at: now + intervalMs });
  return n > 0;
}

export async function pruneThrottles(db: Queryable, endedBefore: number): Promise<number> {
  return db('ip_throttles').where('until', '<', endedBefore).delete();
}
