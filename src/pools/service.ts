/**
 * IP pools of an account and the warm-up of their addresses. Pools are per
 * account (a named set of the configured source addresses); warm-up state,
 * counters and throttles are per address and shared by every account (see
 * docs/ip-pools.md for why). Every write is one transaction; a bad request
 * changes nothing.
 */
import ipaddr from 'ipaddr.js';
import type { AppDeps } from '../deps';
import { conflict, notFound, unprocessable } from '../http/errors';
import { newId } from '../ids';
import { getWarmups, saveWarmup, type Warmup } from './ip-state';
import { DEFAULT_POOL } from './lookup';
import * as repo from './repository';
import type { IpRuntime } from './runtime';
import { STANDARD_SCHEDULE } from './schedule';
import { ipStatuses, type IpStatus } from './status';

export type PoolsContext = Pick<AppDeps, 'db' | 'config' | 'clock' | 'log'> & { runtime: IpRuntime };

export const DEFAULT_POOL_ID = 'pool_default';

export interface PoolMemberView {
  address: string;
  /** null when the address is no longer in config `ips` */
  hostname: string | null;
  weight: number;
  configured: boolean;
  status: IpStatus;
}

export interface PoolBundle {
  id: string;
  name: string;
  isDefault: boolean;
  createdAt: number | null;
  overflow: string;
  members: PoolMemberView[];
}

const canonical = (ip: string): string => ipaddr.process(ip).toNormalizedString();

/** Maps requested addresses to their config spelling; 422 naming `<param>[i]` for an invalid or unconfigured one. */
export function resolveIps(config: AppDeps['config'], ips: string[], param = 'ips', offset = 0): string[] {
  const configured = new Map(config.ips.map((ip) => [canonical(ip.address), ip.address]));
  const out: string[] = [];
  ips.forEach((ip, j) => {
    const at = `${param}[${j + offset}]`;
    if (!ipaddr.isValid(ip.trim())) throw unprocessable('invalid_ip', `${at}: ${JSON.stringify(ip)} is not an IP address`, at);
    const address = configured.get(canonical(ip.trim()));
    if (!address) throw unprocessable('unknown_ip', `${at}: ${ip} is not one of the sending addresses in the configuration (ips)`, at);
    if (!out.includes(address)) out.push(address);
  });
  return out;
}

async function bundle(ctx: PoolsContext, accountId: string, pools: Array<Omit<PoolBundle, 'members' | 'overflow'> & { addresses: string[] }>): Promise<PoolBundle[]> {
  const addresses = [...new Set(pools.flatMap((p) => p.addresses))];
  const [statuses, overflows] = await Promise.all([
    ipStatuses(ctx.db, ctx.config, addresses, ctx.clock.now(), (a, d) => ctx.runtime.pendingUsage(a, d)),
    repo.getOverflows(ctx.db, accountId, pools.map((p) => p.name)),
  ]);
  const byAddress = new Map(ctx.config.ips.map((ip) => [ip.address, ip]));
  return pools.map(({ addresses: members, ...p }) => ({
    ...p,
    overflow: overflows.get(p.name) ?? 'queue',
    members: members.map((address) => {
      const ip = byAddress.get(address);
      return { address, hostname: ip?.hostname ?? null, weight: ip?.weight ?? 1, configured: Boolean(ip), status: statuses.get(address) as IpStatus };
    }),
  }));
}

function defaultPool(ctx: PoolsContext) {
  return { id: DEFAULT_POOL_ID, name: DEFAULT_POOL, isDefault: true, createdAt: null, addresses: ctx.config.ips.map((ip) => ip.address) };
}

const named = (p: repo.PoolRecord) => ({ id: p.id, name: p.name, isDefault: false, createdAt: p.createdAt, addresses: p.addresses });

async function findOr404(ctx: PoolsContext, accountId: string, name: string): Promise<repo.PoolRecord> {
  const pool = await repo.findPool(ctx.db, accountId, name);
  if (!pool) throw notFound(`IP pool ${name}`, 'name');
  return pool;
}

export async function getPool(ctx: PoolsContext, accountId: string, name: string): Promise<PoolBundle> {
  if (name === DEFAULT_POOL) return (await bundle(ctx, accountId, [defaultPool(ctx)]))[0];
  return (await bundle(ctx, accountId, [named(await findOr404(ctx, accountId, name))]))[0];
}

/** Newest first; `default` (id pool_default sorts above every generated id) heads the first page. */
export async function listPools(ctx: PoolsContext, accountId: string, limit: number, cursor?: string): Promise<{ items: PoolBundle[]; total: number }> {
  const withDefault = !cursor || cursor > DEFAULT_POOL_ID;
  const rows = await repo.listPools(ctx.db, accountId, withDefault ? limit - 1 : limit, withDefault ? undefined : cursor);
  const pools = [...(withDefault ? [defaultPool(ctx)] : []), ...rows.map(named)];
  const total = (await repo.countPools(ctx.db, accountId)) + 1;
  return { items: await bundle(ctx, accountId, pools), total };
}

export async function createPool(ctx: PoolsContext, accountId: string, input: { name: string; ips: string[] }): Promise<PoolBundle> {
  const addresses = resolveIps(ctx.config, input.ips);
  if (input.name === DEFAULT_POOL) throw conflict('pool_exists', 'the default pool always exists', 'name');
  const record: repo.PoolRecord = { id: newId('pool'), accountId, name: input.name, createdAt: ctx.clock.now(), addresses: [...addresses].sort() };
  await ctx.db.transaction(async (trx) => {
    if (await repo.findPool(trx, accountId, input.name)) throw conflict('pool_exists', `an IP pool named ${input.name} already exists`, 'name');
    await repo.insertPool(trx, record);
  });
  return (await bundle(ctx, accountId, [named(record)]))[0];
}

/** 'queue' or another existing pool of the account; 422 on `param` otherwise. */
async function checkOverflow(ctx: PoolsContext, accountId: string, self: string[], overflow: string, param: string): Promise<void> {
  if (overflow === 'queue') return;
  if (self.includes(overflow)) throw unprocessable('invalid_overflow', `${param}: a pool cannot overflow into itself`, param);
  if (overflow !== DEFAULT_POOL && !(await repo.findPool(ctx.db, accountId, overflow))) {
    throw unprocessable('unknown_pool', `${param}: there is no IP pool named ${overflow}`, param);
  }
}

export interface PoolPatch {
  name?: string;
  ips?: string[];
  overflow?: string;
}

export async function updatePool(ctx: PoolsContext, accountId: string, name: string, patch: PoolPatch): Promise<PoolBundle> {
  const now = ctx.clock.now();
  if (name === DEFAULT_POOL) {
    if (patch.name !== undefined || patch.ips !== undefined) {
      throw conflict('default_pool', 'the default pool cannot be renamed and always has every configured address', patch.name !== undefined ? 'name' : 'ips');
    }
  } else {
    await findOr404(ctx, accountId, name);
  }
  const addresses = patch.ips === undefined ? undefined : resolveIps(ctx.config, patch.ips);
  const target = patch.name ?? name;
  if (patch.overflow !== undefined) await checkOverflow(ctx, accountId, [name, target], patch.overflow, 'overflow');
  await ctx.db.transaction(async (trx) => {
    const pool = name === DEFAULT_POOL ? undefined : await findOr404({ ...ctx, db: trx }, accountId, name);
    if (pool && addresses) await repo.replaceMembers(trx, pool.id, addresses);
    if (pool && patch.name !== undefined && patch.name !== name) {
      if (patch.name === DEFAULT_POOL || (await repo.findPool(trx, accountId, patch.name))) throw conflict('pool_exists', `an IP pool named ${patch.name} already exists`, 'name');
      const waiting = await repo.waitingMessages(trx, accountId, name);
      if (waiting) throw conflict('pool_in_use', `${waiting} message(s) waiting to be sent name this pool; rename it when they have left the queue`, 'name');
      await repo.renamePool(trx, pool, patch.name, now);
    }
    if (patch.overflow !== undefined) await repo.setOverflow(trx, accountId, target, patch.overflow, now);
  });
  ctx.runtime.invalidate();
  return getPool(ctx, accountId, target);
}

export async function deletePool(ctx: PoolsContext, accountId: string, name: string): Promise<void> {
  if (name === DEFAULT_POOL) throw conflict('default_pool', 'the default pool cannot be deleted', 'name');
  await ctx.db.transaction(async (trx) => {
    const pool = await findOr404({ ...ctx, db: trx }, accountId, name);
    const waiting = await repo.waitingMessages(trx, accountId, name);
    if (waiting) throw conflict('pool_in_use', `${waiting} scheduled or queued message(s) will be sent through this pool; delete it when they have left the queue`, 'name');
    const feeders = (await repo.poolsOverflowingTo(trx, accountId, name)).filter((p) => p !== name);
    if (feeders.length) throw conflict('pool_in_use', `IP pool(s) ${feeders.join(', ')} overflow into this pool; change their overflow first`, 'name');
    await repo.deletePool(trx, pool);
  });
}

export interface WarmupRequest {
  ips?: string[];
  schedule?: 'standard' | number[];
  overflow?: string;
}

/** The pool's configured addresses, or the requested subset of them (422 `ips[i]` for one outside the pool). */
async function targetAddresses(ctx: PoolsContext, accountId: string, name: string, ips: string[] | undefined): Promise<string[]> {
  const members = name === DEFAULT_POOL ? defaultPool(ctx).addresses : (await findOr404(ctx, accountId, name)).addresses;
  const configured = new Set(ctx.config.ips.map((ip) => ip.address));
  if (ips === undefined) return members.filter((a) => configured.has(a));
  return ips.map((ip, i) => {
    const [address] = resolveIps(ctx.config, [ip], 'ips', i);
    if (!members.includes(address)) throw unprocessable('not_in_pool', `ips[${i}]: ${address} is not in IP pool ${name}`, `ips[${i}]`);
    return address;
  }).filter((a, i, all) => all.indexOf(a) === i);
}

/**
 * Starts warm-up for the pool's addresses. An address already warming gets
 * the new schedule and keeps its day; a warm one starts at day 1.
 */
export async function startWarmup(ctx: PoolsContext, accountId: string, name: string, req: WarmupRequest): Promise<PoolBundle> {
  const addresses = await targetAddresses(ctx, accountId, name, req.ips);
  if (addresses.length === 0) throw unprocessable('empty_pool', `IP pool ${name} has no configured address to warm up`, 'ips');
  if (req.overflow !== undefined) await checkOverflow(ctx, accountId, [name], req.overflow, 'overflow');
  const custom = Array.isArray(req.schedule);
  const schedule = custom ? (req.schedule as number[]) : [...STANDARD_SCHEDULE];
  const now = ctx.clock.now();
  await ctx.db.transaction(async (trx) => {
    const existing = await getWarmups(trx, addresses);
    for (const address of addresses) {
      const prev = existing.get(address);
      const keep = prev && prev.status !== 'warm' && req.schedule === undefined ? prev.schedule : schedule;
      const w: Warmup = prev && prev.status !== 'warm'
        ? { ...prev, schedule: keep, scheduleName: req.schedule === undefined ? prev.scheduleName : custom ? 'custom' : 'standard', dayIndex: Math.min(prev.dayIndex, keep.length - 1), updatedAt: now }
        : { address, status: 'warming', scheduleName: custom ? 'custom' : 'standard', schedule, dayIndex: 0, dayDate: null, startedAt: now, pausedAt: null, finishedAt: null, finishedReason: null, updatedAt: now };
      await saveWarmup(trx, w);
    }
    if (req.overflow !== undefined) await repo.setOverflow(trx, accountId, name, req.overflow, now);
  });
  ctx.runtime.invalidate();
  ctx.log.info({ pool: name, addresses, schedule: custom ? 'custom' : 'standard' }, 'IP warm-up started');
  return getPool(ctx, accountId, name);
}

export type WarmupAction = 'pause' | 'resume' | 'stop';

/** Pause (hold at today's cap, days do not advance), resume, or stop (the address is warm from now on). */
export async function changeWarmup(ctx: PoolsContext, accountId: string, name: string, action: WarmupAction, ips?: string[]): Promise<PoolBundle> {
  const addresses = await targetAddresses(ctx, accountId, name, ips);
  const now = ctx.clock.now();
  await ctx.db.transaction(async (trx) => {
    const existing = await getWarmups(trx, addresses);
    const inWarmup = addresses.filter((a) => existing.get(a) && existing.get(a)?.status !== 'warm');
    if (ips !== undefined && inWarmup.length < addresses.length) {
      const i = addresses.findIndex((a) => !inWarmup.includes(a));
      throw conflict('not_warming', `ips[${i}]: ${addresses[i]} is not in warm-up`, `ips[${i}]`);
    }
    if (inWarmup.length === 0) throw conflict('not_warming', `no address of IP pool ${name} is in warm-up`);
    for (const address of inWarmup) {
      const w = existing.get(address) as Warmup;
      if (action === 'pause') await saveWarmup(trx, { ...w, status: 'paused', pausedAt: w.pausedAt ?? now, updatedAt: now });
      if (action === 'resume') await saveWarmup(trx, { ...w, status: 'warming', pausedAt: null, updatedAt: now });
      if (action === 'stop') await saveWarmup(trx, { ...w, status: 'warm', finishedAt: now, finishedReason: 'stopped', updatedAt: now });
    }
  });
  ctx.runtime.invalidate();
  ctx.log.info({ pool: name, action, addresses }, `IP warm-up ${action}`);
  return getPool(ctx, accountId, name);
}
