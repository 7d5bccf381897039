/**
 * First start: with an empty database, create the `default` account and one
 * sandbox key with every scope. The key is returned so the caller can print it
 * once; it is never logged.
 */
import type { Db } from '../db';
import { countAccounts, createAccount } from './accounts';
import { createKey } from './keys';
import { SCOPES } from './scopes';

export async function bootstrapIfEmpty(db: Db, now: number): Promise<string | undefined> {
  return db.transaction(async (trx) => {
    if ((await countAccounts(trx)) > 0) return undefined;
    const account = await createAccount(trx, 'default', now);
    const { secret } = await createKey(trx, { accountId: account.id, name: 'sandbox (first start)', mode: 'test', scopes: [...SCOPES] }, now);
    return secret;
  });
}

export function bootstrapBanner(secret: string, url: string): string {
  const line = '='.repeat(72);
  return [
    line,
    '  Pigeon first start: created account "default" and a sandbox API key.',
    '  It is shown only this once. Store it now:',
    '',
    `    ${secret}`,
    '',
    `  Try it:  curl -H "Authorization: Bearer ${secret}" ${url}/v1/account`,
    '  More keys: npx pigeon keys create --mode live --scopes all',
    line,
    '',
  ].join('\n');
}
