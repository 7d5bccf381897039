/**
 * IP pools of an account and the warm-up of their addresses. Pools are per
 * account (a named set of the source addresses it may use: the shared ones
 * and those dedicated to it); warm-up state, counters and throttles are per
 * address (see docs/ip-pools.md for why), so through the API an account
 * warms up only addresses dedicated to it. Every write is one transaction; a
 * bad request changes nothing.
 */
import ipaddr from 'ipaddr.js';
import type { AppDeps } from '../deps';
import { conflict, notFound, unprocessable } from '../http/errors';
import { newId } from '../ids';
import { checksOf, type CheckRecord } from '../reputation/store';
import { isShared, operatorManaged, usableIps, type SourceIp } from './dedication';
import { DEFAULT_POOL, forgetAccountPools } from './lookup';
import * as repo from './repository';
import type { IpRuntime } from './runtime';
import { ipStatuses, type IpStatus } from './status';
import { changeWarmupOn, startWarmupOn, type ScheduleChoice, type WarmupAction } from './warmup';

export type { WarmupAction };

export type PoolsContext = Pick<AppDeps, 'db' | 'config' | 'clock' | 'log'> & { runtime: IpRuntime };

export const DEFAULT_POOL_ID = 'pool_default';

export interface PoolMemberView {
  address: string;
  /** null when the address is no longer in config `ips` (or was dedicated to another account) */
  hostname: string | null;
  weight: number;
  configured: boolean;
  status: IpStatus;
  /** the reputation watch's stored results (src/reputation) */
  reputation?: CheckRecord[];
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

/**
 * Maps requested addresses to their config spelling; 422 naming `<param>[i]`
 * for an invalid one or one not `available` (not configured, or dedicated to
 * another account: the two are not told apart, so no account learns another's).
 */
export function resolveIps(available: SourceIp[], ips: string[], param = 'ips', offset = 0, whose = 'this account may use'): string[] {
  const configured = new Map(available.map((ip) => [canonical(ip.address), ip.address]));
  const out: string[] = [];
  ips.forEach((ip, j) => {
    const at = `${param}[${j + offset}]`;
    if (!ipaddr.isValid(ip.trim())) throw unprocessable('invalid_ip', `${at}: ${JSON.stringify(ip)} is not an IP address`, at);
    const address = configured.get(canonical(ip.trim()));
    if (!address) throw unprocessable('unknown_ip', `${at}: ${ip} is not one of the sending addresses in the configuration (ips)${whose ? ` ${whose}` : ''}`, at);
    if (!out.includes(address)) out.push(address);
  });
  return out;
}

async function bundle(ctx: PoolsContext, accountId: string, pools: Array<Omit<PoolBundle, 'members' | 'overflow'> & { addresses: string[] }>): Promise<PoolBundle[]> {
  const addresses = [...new Set(pools.flatMap((p) => p.addresses))];
  const [statuses, overflows, reputation] = await Promise.all([
    ctx.runtime.consistentRead(() => ipStatuses(ctx.db, ctx.config, addresses, ctx.clock.now(), (a, d) => ctx.runtime.pendingUsage(a, d))),
    repo.getOverflows(ctx.db, accountId, pools.map((p) => p.name)),
    checksOf(ctx.db, addresses),
  ]);
  const byAddress = new Map((await usableIps(ctx.db, ctx.config, accountId)).map((ip) => [ip.address, ip]));
  return pools.map(({ addresses: members, ...p }) => ({
    ...p,
    overflow: overflows.get(p.name) ?? 'queue',
    members: members.map((address) => {
      const ip = byAddress.get(address);
      return { address, hostname: ip?.hostname ?? null, weight: ip?.weight ?? 1, configured: Boolean(ip), status: statuses.get(address) as IpStatus, reputation: reputation.get(address) };
    }),
  }));
}

/** Every address the account may use: the shared ones and those dedicated to it. */
async function defaultPool(ctx: PoolsContext, accountId: string) {
  const addresses = (await usableIps(ctx.db, ctx.config, accountId)).map((ip) => ip.address);
  return { id: DEFAULT_POOL_ID, name: DEFAULT_POOL, isDefault: true, createdAt: null, addresses };
}

const named = (p: repo.PoolRecord) => ({ id: p.id, name: p.name, isDefault: false, createdAt: p.createdAt, addresses: p.addresses });

async function findOr404(ctx: PoolsContext, accountId: string, name: string): Promise<repo.PoolRecord> {
  const pool = await repo.findPool(ctx.db, accountId, name);
  if (!pool) throw notFound(`IP pool ${name}`, 'name');
  return pool;
}

export async function getPool(ctx: PoolsContext, accountId: string, name: string): Promise<PoolBundle> {
  if (name === DEFAULT_POOL) return (await bundle(ctx, accountId, [await defaultPool(ctx, accountId)]))[0];
  return (await bundle(ctx, accountId, [named(await findOr404(ctx, accountId, name))]))[0];
}

/** Newest first; `default` (id pool_default sorts above every generated id) heads the first page. */
export async function listPools(ctx: PoolsContext, accountId: string, limit: number, cursor?: string): Promise<{ items: PoolBundle[]; total: number }> {
  const withDefault = !cursor || cursor > DEFAULT_POOL_ID;
  const rows = await repo.listPools(ctx.db, accountId, withDefault ? limit - 1 : limit, withDefault ? undefined : cursor);
  const pools = [...(withDefault ? [await defaultPool(ctx, accountId)] : []), ...rows.map(named)];
  const total = (await repo.countPools(ctx.db, accountId)) + 1;
  return { items: await bundle(ctx, accountId, pools), total };
}

export async function createPool(ctx: PoolsContext, accountId: string, input: { name: string; ips: string[] }): Promise<PoolBundle> {
  const addresses = resolveIps(await usableIps(ctx.db, ctx.config, accountId), input.ips);
  if (input.name === DEFAULT_POOL) throw conflict('pool_exists', 'the default pool always exists', 'name');
  const record: repo.PoolRecord = { id: newId('pool'), accountId, name: input.name, createdAt: ctx.clock.now(), addresses: [...addresses].sort() };
  await ctx.db.transaction(async (trx) => {
    if (await repo.findPool(trx, accountId, input.name)) throw conflict('pool_exists', `an IP pool named ${input.name} already exists`, 'name');
    await repo.insertPool(trx, record);
  });
  forgetAccountPools(ctx.db, accountId);
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
  const addresses = patch.ips === undefined ? undefined : resolveIps(await usableIps(ctx.db, ctx.config, accountId), patch.ips);
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
  forgetAccountPools(ctx.db, accountId);
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
  forgetAccountPools(ctx.db, accountId);
}

export interface WarmupRequest {
  ips?: string[];
  schedule?: ScheduleChoice;
  overflow?: string;
}

/**
 * The addresses a warm-up request works on: the pool's usable addresses, or
 * the requested subset (422 `ips[i]` for one outside the pool). Each must be
 * dedicated to the account: one shared address refuses the whole request
 * (403 operator_managed naming it).
 */
async function warmupTargets(ctx: PoolsContext, accountId: string, name: string, ips: string[] | undefined): Promise<string[]> {
  const usable = await usableIps(ctx.db, ctx.config, accountId);
  const members = name === DEFAULT_POOL ? usable.map((ip) => ip.address) : (await findOr404(ctx, accountId, name)).addresses;
  const targets = ips === undefined
    ? members.filter((a) => usable.some((ip) => ip.address === a))
    : ips.map((ip, i) => {
      const [address] = resolveIps(usable, [ip], 'ips', i);
      if (!members.includes(address)) throw unprocessable('not_in_pool', `ips[${i}]: ${address} is not in IP pool ${name}`, `ips[${i}]`);
      return address;
    });
  const shared = new Set(usable.filter(isShared).map((ip) => ip.address));
  const i = targets.findIndex((a) => shared.has(a));
  if (i >= 0) throw operatorManaged(targets[i], ips === undefined ? undefined : `ips[${i}]`);
  return targets.filter((a, j, all) => all.indexOf(a) === j);
}

/** Starts warm-up for the pool's addresses (all dedicated to the account); see startWarmupOn. */
export async function startWarmup(ctx: PoolsContext, accountId: string, name: string, req: WarmupRequest): Promise<PoolBundle> {
  const addresses = await warmupTargets(ctx, accountId, name, req.ips);
  if (addresses.length === 0) throw unprocessable('empty_pool', `IP pool ${name} has no configured address to warm up`, 'ips');
  const overflow = req.overflow;
  if (overflow !== undefined) await checkOverflow(ctx, accountId, [name], overflow, 'overflow');
  await startWarmupOn(ctx, addresses, req.schedule, overflow === undefined ? undefined : (trx) => repo.setOverflow(trx, accountId, name, overflow, ctx.clock.now()));
  ctx.runtime.invalidate();
  return getPool(ctx, accountId, name);
}

/** Pause, resume or stop warm-up of the pool's addresses (all dedicated to the account). */
export async function changeWarmup(ctx: PoolsContext, accountId: string, name: string, action: WarmupAction, ips?: string[]): Promise<PoolBundle> {
  const addresses = await warmupTargets(ctx, accountId, name, ips);
  await changeWarmupOn(ctx, addresses, action, ips !== undefined, `no address of IP pool ${name} is in warm-up`);
  ctx.runtime.invalidate();
  return getPool(ctx, accountId, name);
}
