/** Read-only questions other modules ask about IP pools. `default` always exists. */
import type { Config } from '../config';
import type { Queryable } from '../db';

export const DEFAULT_POOL = 'default';

export async function poolExists(db: Queryable, accountId: string, name: string): Promise<boolean> {
  if (name === DEFAULT_POOL) return true;
  return Boolean(await db('ip_pools').where({ account_id: accountId, name }).first('id'));
}

/** A configured source address as a pool uses it. */
export interface PoolMember {
  address: string;
  hostname: string;
  weight: number;
}

/**
 * The configured addresses of a pool, in config order: `default` is every
 * address in config `ips`; a named pool is its members that are still
 * configured (an address removed from config is skipped, not used).
 */
export async function poolMembers(db: Queryable, config: Pick<Config, 'ips'>, accountId: string, pool: string): Promise<PoolMember[]> {
  const all = config.ips.map((ip) => ({ address: ip.address, hostname: ip.hostname, weight: ip.weight ?? 1 }));
  if (pool === DEFAULT_POOL) return all;
  const rows: Array<{ address: string }> = await db('ip_pool_members as m')
    .join('ip_pools as p', 'p.id', 'm.pool_id')
    .where({ 'p.account_id': accountId, 'p.name': pool })
    .select('m.address');
  const addresses = new Set(rows.map((r) => r.address));
  return all.filter((ip) => addresses.has(ip.address));
}
