/** Accounts: the tenant that owns keys, domains, webhooks, pools and suppressions. */
import type { Queryable } from '../db';
import { newId } from '../ids';
import { conflict } from '../http/errors';

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

export async function getAccount(db: Queryable, id: string): Promise<Account | undefined> {
  const row = await db<AccountRow>('accounts').where({ id }).first();
  return row && toAccount(row);
}

export async function countAccounts(db: Queryable): Promise<number> {
  const row = await db('accounts').count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}
