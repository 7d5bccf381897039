/** Read-only questions other modules ask about IP pools. `default` always exists. */
import type { Config } from '../config';
import type { Queryable } from '../db';
import { usableIps } from './dedication';

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
  const rows: Array<{ address: string }> = await db('ip_pool_members as m')
    .join('ip_pools as p', 'p.id', 'm.pool_id')
    .where({ 'p.account_id': accountId, 'p.name': pool })
    .select('m.address');
  const addresses = new Set(rows.map((r) => r.address));
  return all.filter((ip) => addresses.has(ip.address));
}
