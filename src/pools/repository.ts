/**
 * The pools module's per-account tables (ip_pools, ip_pool_members,
 * ip_pool_settings) mapped to camelCase objects. Other modules never read
 * these tables; they call lookup.ts and the service.
 */
import type { Queryable } from '../db';

export interface PoolRecord {
  id: string;
  accountId: string;
  name: string;
  createdAt: number;
  /** member addresses as stored (config spelling), sorted */
  addresses: string[];
}

interface PoolRow {
  id: string;
  account_id: string;
  name: string;
  created_at: number | string;
}

async function withMembers(db: Queryable, rows: PoolRow[]): Promise<PoolRecord[]> {
  if (rows.length === 0) return [];
  const members: Array<{ pool_id: string; address: string }> = await db('ip_pool_members')
    .whereIn('pool_id', rows.map((r) => r.id))
    .orderBy('address')
    .select('pool_id', 'address');
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    createdAt: Number(r.created_at),
    addresses: members.filter((m) => m.pool_id === r.id).map((m) => m.address),
  }));
}

export async function findPool(db: Queryable, accountId: string, name: string): Promise<PoolRecord | undefined> {
  const row = await db<PoolRow>('ip_pools').where({ account_id: accountId, name }).first();
  return row ? (await withMembers(db, [row]))[0] : undefined;
}

/** Newest first, ids below `before` (the page cursor), at most `limit`. */
export async function listPools(db: Queryable, accountId: string, limit: number, before?: string): Promise<PoolRecord[]> {
  const q = db<PoolRow>('ip_pools').where({ account_id: accountId }).orderBy('id', 'desc').limit(limit);
  if (before) q.where('id', '<', before);
  return withMembers(db, await q);
}

export async function countPools(db: Queryable, accountId: string): Promise<number> {
  const row = await db('ip_pools').where({ account_id: accountId }).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

export async function insertPool(db: Queryable, pool: PoolRecord): Promise<void> {
  await db('ip_pools').insert({ id: pool.id, account_id: pool.accountId, name: pool.name, created_at: pool.createdAt });
  await replaceMembers(db, pool.id, pool.addresses);
}

export async function replaceMembers(db: Queryable, poolId: string, addresses: string[]): Promise<void> {
  await db('ip_pool_members').where({ pool_id: poolId }).delete();
  if (addresses.length) await db('ip_pool_members').insert(addresses.map((address) => ({ pool_id: poolId, address })));
}

/** Renames a pool and every overflow setting of the account that points at it. */
export async function renamePool(db: Queryable, pool: PoolRecord, name: string, now: number): Promise<void> {
  await db('ip_pools').where({ id: pool.id }).update({ name });
  await db('ip_pool_settings').where({ account_id: pool.accountId, pool_name: pool.name }).update({ pool_name: name, updated_at: now });
  await db('ip_pool_settings').where({ account_id: pool.accountId, overflow: pool.name }).update({ overflow: name, updated_at: now });
}

export async function deletePool(db: Queryable, pool: PoolRecord): Promise<void> {
  await db('ip_pool_settings').where({ account_id: pool.accountId, pool_name: pool.name }).delete();
  await db('ip_pools').where({ id: pool.id }).delete();
}

/** 'queue' (wait for budget) or the name of the pool that takes what this one cannot send. */
export async function getOverflow(db: Queryable, accountId: string, poolName: string): Promise<string> {
  const row = await db('ip_pool_settings').where({ account_id: accountId, pool_name: poolName }).first('overflow');
  return (row?.overflow as string | undefined) ?? 'queue';
}

export async function getOverflows(db: Queryable, accountId: string, poolNames: string[]): Promise<Map<string, string>> {
  const rows: Array<{ pool_name: string; overflow: string }> = await db('ip_pool_settings')
    .where({ account_id: accountId })
    .whereIn('pool_name', poolNames)
    .select('pool_name', 'overflow');
  return new Map(rows.map((r) => [r.pool_name, r.overflow]));
}

export async function setOverflow(db: Queryable, accountId: string, poolName: string, overflow: string, now: number): Promise<void> {
  await db('ip_pool_settings')
    .insert({ account_id: accountId, pool_name: poolName, overflow, updated_at: now })
    .onConflict(['account_id', 'pool_name'])
    .merge({ overflow, updated_at: now });
}

/** Names of the account's pools whose overflow is `poolName`. */
export async function poolsOverflowingTo(db: Queryable, accountId: string, poolName: string): Promise<string[]> {
  const rows: Array<{ pool_name: string }> = await db('ip_pool_settings').where({ account_id: accountId, overflow: poolName }).select('pool_name');
  return rows.map((r) => r.pool_name);
}

/**
 * Messages of the account that still wait to be sent through this pool
 * (scheduled, queued, deferred, or in flight). A read of the core messages
 * table: the queue keeps `next_attempt_at` set until a message leaves it.
 */
export async function waitingMessages(db: Queryable, accountId: string, poolName: string): Promise<number> {
  const row = await db('messages')
    .where({ account_id: accountId, ip_pool: poolName })
    .where((q) => q.whereNotNull('next_attempt_at').orWhere('status', 'sending'))
    .count({ n: '*' })
    .first();
  return Number(row?.n ?? 0);
}
