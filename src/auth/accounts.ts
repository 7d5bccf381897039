/** Accounts: the tenant that owns keys, domains, webhooks, pools and suppressions. */
import type { Queryable } from '../db';
import { hasReader, readerOf } from '../db/reader';
import { newId } from '../ids';
import { conflict } from '../http/errors';
import { cachePerApp, ReadCache } from '../util/read-cache';

export interface Account {
  id: string;
  name: string;
  createdAt: number;
}

interface AccountRow {
  id: string;
  name: string;
  created_at: number;
}

const toAccount = (r: AccountRow): Account => ({ id: r.id, name: r.name, createdAt: Number(r.created_at) });

export async function createAccount(db: Queryable, name: string, now: number): Promise<Account> {
  if (await db('accounts').where({ name }).first()) throw conflict('account_exists', `account '${name}' already exists`);
  const row: AccountRow = { id: newId('acc'), name, created_at: now };
  await db('accounts').insert(row);
  return toAccount(row);
}

export async function findAccountByName(db: Queryable, name: string): Promise<Account | undefined> {
  const row = await db<AccountRow>('accounts').where({ name }).first();
  return row && toAccount(row);
}

async function accountById(db: Queryable, id: string): Promise<Account | undefined> {
  const row = await db<AccountRow>('accounts').where({ id }).first();
  return row && toAccount(row);
}

// Accounts are never renamed or deleted, so the TTL only bounds memory use by accounts not seen lately.
const ACCOUNT_CACHE_MAX = 10_000;
const accountCache = cachePerApp('accounts', hasReader, (db: Queryable) =>
  new ReadCache<string, Account>({ max: ACCOUNT_CACHE_MAX, ttlMs: 60_000, load: (id) => accountById(readerOf(db), id) }));

/** Through the app's cache when given the app's handle (ids come from authenticated keys). */
export async function getAccount(db: Queryable, id: string): Promise<Account | undefined> {
  const cache = accountCache(db);
  return cache ? cache.get(id) : accountById(db, id);
}

export async function countAccounts(db: Queryable): Promise<number> {
  const row = await db('accounts').count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}
