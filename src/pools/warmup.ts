/**
 * Warm-up of source addresses, whoever asks: the API (for addresses
 * dedicated to the caller's account, through a pool) and the operator's CLI
 * (any address). Warm-up state belongs to the address, so these work on
 * addresses, not pools; each call is one transaction and a refusal changes
 * nothing.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { Queryable } from '../db';
import { conflict } from '../http/errors';
import { getWarmups, saveWarmup, type Warmup } from './ip-state';
import { STANDARD_SCHEDULE } from './schedule';

/** `log` is left out by the CLI, which prints the outcome instead. */
export type WarmupDeps = Pick<AppDeps, 'db' | 'clock'> & { log?: Pick<AppDeps['log'], 'info'> };
export type WarmupAction = 'pause' | 'resume' | 'stop';
export type ScheduleChoice = 'standard' | number[];

export const scheduleSchema = z.union([z.literal('standard'), z.array(z.number().int().min(1).max(100_000_000)).min(1).max(365)]);

/**
 * Starts warm-up on the addresses (config spelling). An address already
 * warming gets the new schedule (if one is given) and keeps its day; a warm
 * one starts at day 1. `alsoInTransaction` runs in the same transaction.
 */
export async function startWarmupOn(
  deps: WarmupDeps,
  addresses: string[],
  choice: ScheduleChoice | undefined,
  alsoInTransaction?: (trx: Queryable) => Promise<void>,
): Promise<void> {
  const custom = Array.isArray(choice);
  const schedule = custom ? choice : [...STANDARD_SCHEDULE];
  const now = deps.clock.now();
  await deps.db.transaction(async (trx) => {
    const existing = await getWarmups(trx, addresses);
    for (const address of addresses) {
      const prev = existing.get(address);
      const keep = prev && prev.status !== 'warm' && choice === undefined ? prev.schedule : schedule;
      const w: Warmup = prev && prev.status !== 'warm'
        ? { ...prev, schedule: keep, scheduleName: choice === undefined ? prev.scheduleName : custom ? 'custom' : 'standard', dayIndex: Math.min(prev.dayIndex, keep.length - 1), updatedAt: now }
        : { address, status: 'warming', scheduleName: custom ? 'custom' : 'standard', schedule, dayIndex: 0, dayDate: null, startedAt: now, pausedAt: null, finishedAt: null, finishedReason: null, updatedAt: now };
      await saveWarmup(trx, w);
    }
    await alsoInTransaction?.(trx);
  });
  deps.log?.info({ addresses, schedule: custom ? 'custom' : 'standard' }, 'IP warm-up started');
}

/**
 * Pause (hold at today's cap, days do not advance), resume, or stop (warm
 * from now on) the addresses in warm-up. `named`: the caller listed the
 * addresses, so each must be in warm-up (409 naming `ips[i]`); otherwise
 * those not in warm-up are skipped, and 409 `noneMessage` if none is.
 */
export async function changeWarmupOn(deps: WarmupDeps, addresses: string[], action: WarmupAction, named: boolean, noneMessage: string): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction(async (trx) => {
    const existing = await getWarmups(trx, addresses);
    const inWarmup = addresses.filter((a) => existing.get(a) && existing.get(a)?.status !== 'warm');
    if (named && inWarmup.length < addresses.length) {
      const i = addresses.findIndex((a) => !inWarmup.includes(a));
      throw conflict('not_warming', `ips[${i}]: ${addresses[i]} is not in warm-up`, `ips[${i}]`);
    }
    if (inWarmup.length === 0) throw conflict('not_warming', noneMessage);
    for (const address of inWarmup) {
      const w = existing.get(address) as Warmup;
      if (action === 'pause') await saveWarmup(trx, { ...w, status: 'paused', pausedAt: w.pausedAt ?? now, updatedAt: now });
      if (action === 'resume') await saveWarmup(trx, { ...w, status: 'warming', pausedAt: null, updatedAt: now });
      if (action === 'stop') await saveWarmup(trx, { ...w, status: 'warm', finishedAt: now, finishedReason: 'stopped', updatedAt: now });
    }
  });
  deps.log?.info({ action, addresses }, `IP warm-up ${action}`);
}
