/** Read-only questions other modules ask about IP pools. `default` always exists. */
import type { Queryable } from '../db';

export const DEFAULT_POOL = 'default';

export async function poolExists(db: Queryable, accountId: string, name: string): Promise<boolean> {
  if (name === DEFAULT_POOL) return true;
  return Boolean(await db('ip_pools').where({ account_id: accountId, name }).first('id'));
}
