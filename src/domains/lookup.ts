/** Read-only questions other modules ask about sending domains. */
import type { Queryable } from '../db';

/** True when the account has this exact domain (not a parent) in status verified or failing-but-in-grace. */
export async function isVerifiedDomain(db: Queryable, accountId: string, domain: string): Promise<boolean> {
  const row = await db('domains').where({ account_id: accountId, name: domain.toLowerCase() }).whereIn('status', ['verified', 'failing']).first('id');
  return Boolean(row);
}
