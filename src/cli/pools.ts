/**
 * `pigeon pools list` and `pigeon pools warmup start|pause|resume|stop`: the
 * operator's view and control of the warm-up of source addresses. Warm-up
 * of a shared address caps every account's mail, so it is managed here, not
 * through any tenant's API key. A running server picks a change up within a
 * few seconds (it caches warm-up rows that long).
 */
import { systemClock } from '../clock';
import type { Db } from '../db';
import { ApiError } from '../http/errors';
import { resolveIps } from '../pools/service';
import { ipStatuses } from '../pools/status';
import { shapeIp } from '../pools/view';
import { checksOf } from '../reputation/store';
import { changeWarmupOn, scheduleSchema, startWarmupOn, type ScheduleChoice, type WarmupAction } from '../pools/warmup';
import { IP_STATE_CACHE } from '../pools/runtime';
import { cacheRegistry } from '../util/read-cache';
import { CliContext, UsageError, flagString, withDb } from './common';

const USAGE = [
  'usage: pigeon pools list [--json]',
  '       pigeon pools warmup start (--ips A,B | --all) [--schedule standard|50,100,200…] [--json]',
  '       pigeon pools warmup pause|resume|stop (--ips A,B | --all) [--json]',
].join('\n');

const ACTIONS: ReadonlyArray<'start' | WarmupAction> = ['start', 'pause', 'resume', 'stop'];

export async function poolsCommand(ctx: CliContext): Promise<void> {
  const [group, action] = ctx.args;
  if (group === 'list' || group === 'show') {
    return withDb(ctx.config, (db) => printAddresses(ctx, db, ctx.config.ips.map((ip) => ip.address)));
  }
  const act = ACTIONS.find((a) => a === action);
  if (group !== 'warmup' || !act) throw new UsageError(USAGE);
  const addresses = addressesFlag(ctx);
  const schedule = scheduleFlag(ctx, act);
  await withDb(ctx.config, async (db) => {
    const deps = { db, clock: systemClock };
    if (act === 'start') await startWarmupOn(deps, addresses, schedule);
    else await changeWarmupOn(deps, addresses, act, ctx.flags.all !== true, 'no address is in warm-up');
    cacheRegistry(db).publish(IP_STATE_CACHE); // running nodes on PostgreSQL drop their warm-up rows now
    await printAddresses(ctx, db, addresses);
  });
}

/** --ips A,B (each one of config `ips`, any spelling) or --all. */
function addressesFlag(ctx: CliContext): string[] {
  const list = flagString(ctx, 'ips');
  if (ctx.flags.all === true) {
    if (list !== undefined) throw new UsageError('give --ips or --all, not both');
    return ctx.config.ips.map((ip) => ip.address);
  }
  if (!list) throw new UsageError(`--ips A,B or --all is required\n${USAGE}`);
  try {
    return resolveIps(ctx.config.ips, list.split(',').map((s) => s.trim()).filter(Boolean), 'ips', 0, '');
  } catch (err) {
    if (err instanceof ApiError) throw new UsageError(err.message);
    throw err;
  }
}

function scheduleFlag(ctx: CliContext, action: 'start' | WarmupAction): ScheduleChoice | undefined {
  const value = flagString(ctx, 'schedule');
  if (value === undefined) return undefined;
  if (action !== 'start') throw new UsageError('--schedule is only for warmup start');
  const parsed = scheduleSchema.safeParse(value === 'standard' ? value : value.split(',').map((s) => Number(s.trim())));
  if (!parsed.success) throw new UsageError('--schedule must be standard or 1 to 365 whole daily caps from 1 to 100000000, e.g. 50,100,200');
  return parsed.data;
}

/** The state of each address: one tab-separated line each, or a JSON array of the API's pool address records. */
async function printAddresses(ctx: CliContext, db: Db, addresses: string[]): Promise<void> {
  const [statuses, reputation] = await Promise.all([ipStatuses(db, ctx.config, addresses, systemClock.now()), checksOf(db, addresses)]);
  const views = ctx.config.ips.filter((ip) => addresses.includes(ip.address)).map((ip) => ({
    account: ip.account ?? null,
    ...shapeIp(ctx.config, { address: ip.address, hostname: ip.hostname, weight: ip.weight ?? 1, configured: true, status: statuses.get(ip.address)!, reputation: reputation.get(ip.address) }),
  }));
  if (ctx.flags.json) return ctx.out(JSON.stringify(views));
  for (const v of views) {
    const w = v.warmup;
    const day = w.day === null ? '-' : `day ${w.day}/${w.days}`;
    const cap = w.today_cap === null ? 'no cap' : `cap ${w.today_cap}`;
    ctx.out([v.address, v.hostname, v.account ?? 'shared', w.status, day, cap, `sent today ${v.usage_today.total}`].join('\t'));
  }
}
