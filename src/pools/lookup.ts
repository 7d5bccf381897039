/**
 * Read-only questions other modules ask about IP pools. `default` always
 * exists. Given the app's handle they are answered from a per-account cache
 * of the account's named pools and their members (one query per account per
 * POOL_CACHE_TTL_MS), cleared by the pool writes of this process
 * (`forgetAccountPools`); a change made by another process (the CLI) is seen
 * within the TTL. Given a transaction they read through it.
 */
import type { Config } from '../config';
import type { Queryable } from '../db';
import { hasReader, readerOf } from '../db/reader';
import { cachePerApp, ReadCache } from '../util/read-cache';
import { usableIps } from './dedication';

export const DEFAULT_POOL = 'default';

export const POOL_CACHE_TTL_MS = 2_000;
// Keyed by authenticated account ids; each entry holds the account's pools (limits.poolsPerAccount).
const POOL_CACHE_MAX = 10_000;

/** The account's named pools → their member addresses. */
async function loadAccountPools(db: Queryable, accountId: string): Promise<Map<string, Set<string>>> {
  const rows: Array<{ name: string; address: string | null }> = await db('ip_pools as p')
    .leftJoin('ip_pool_members as m', 'm.pool_id', 'p.id')
    .where('p.account_id', accountId)
    .select('p.name', 'm.address');
  const pools = new Map<string, Set<string>>();
  for (const r of rows) {
    const members = pools.get(r.name) ?? new Set<string>();
    if (r.address !== null) members.add(r.address);
    pools.set(r.name, members);
  }
  return pools;
}

const poolCache = cachePerApp('pools', hasReader, (db: Queryable) =>
  new ReadCache<string, Map<string, Set<string>>>({ max: POOL_CACHE_MAX, ttlMs: POOL_CACHE_TTL_MS, load: (id) => loadAccountPools(readerOf(db), id) }));

async function accountPools(db: Queryable, accountId: string): Promise<Map<string, Set<string>>> {
  const cache = poolCache(db);
  return (cache ? await cache.get(accountId) : undefined) ?? loadAccountPools(db, accountId);
}

/** Called with the app's handle after a write to the account's pools has committed. */
export function forgetAccountPools(db: Queryable, accountId: string): void {
  poolCache.invalidate(db, accountId);
}

export async function poolExists(db: Queryable, accountId: string, name: string): Promise<boolean> {
  if (name === DEFAULT_POOL) return true;
  return (await accountPools(db, accountId)).has(name);
}

/** A configured source address as a pool uses it. */
export interface PoolMember {
  address: string;
  hostname: string;
  weight: number;
}

/**
 * The addresses of a pool the account may send from, in config order:
 * `default` is every shared address in config `ips` and those dedicated to
 * the account; a named pool is its members among those (an address removed
 * from config, or dedicated to another account since, is skipped, not used).
 * This is what keeps one account's mail off another's dedicated addresses,
 * through overflow too: every pool tried is read through here.
 */
export async function poolMembers(db: Queryable, config: Pick<Config, 'ips'>, accountId: string, pool: string): Promise<PoolMember[]> {
  const all = (await usableIps(db, config, accountId)).map((ip) => ({ address: ip.address, hostname: ip.hostname, weight: ip.weight ?? 1 }));
  if (pool === DEFAULT_POOL) return all;
  const addresses = (await accountPools(db, accountId)).get(pool) ?? new Set<string>();
  return all.filter((ip) => addresses.has(ip.address));
}

/**
 * Who uses a source address, for news about it (the reputation watch's ip.listed / ip.delisted): an address
 * dedicated to an account (config `ips[].account`) is that account's alone; a shared one is in every account's
 * `default` pool, so every account. Each with the names of its pools that hold the address.
 */
export async function accountsUsing(db: Queryable, config: Pick<Config, 'ips'>, address: string): Promise<Array<{ accountId: string; pools: string[] }>> {
  const ip = config.ips.find((i) => i.address === address);
  if (!ip) return [];
  const accounts: Array<{ id: string }> = await db('accounts').modify((q) => {
    if (ip.account !== undefined) q.where({ name: ip.account });
  }).select('id');
  const named: Array<{ account_id: string; name: string }> = await db('ip_pools as p')
    .join('ip_pool_members as m', 'm.pool_id', 'p.id')
    .where('m.address', address)
    .orderBy('p.name')
    .select('p.account_id', 'p.name');
  return accounts.map((a) => ({ accountId: a.id, pools: [DEFAULT_POOL, ...named.filter((n) => n.account_id === a.id).map((n) => n.name)] }));
}
