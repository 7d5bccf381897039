/**
 * Whether this node's `<dataDir>/secret.key` opens the DKIM private keys that
 * are already in the database. They are sealed with it (keys.ts); a node
 * started on a shared PostgreSQL database with a fresh dataDir — or a restore
 * of the database without its secret.key — would make a new key and then
 * defer every signed message with "sealed value does not open". The server
 * refuses to start instead (app.ts), and `pigeon doctor` says the same.
 */
import type { Queryable } from '../db';
import { SecretBoxError } from '../crypto/secret-box';
import { openPrivateKey, type KeySource } from './keys';

/** Null when the key opens the newest sealed DKIM key (or there is none yet); otherwise what is wrong and how to fix it. */
export async function secretKeyMismatch(db: Queryable, keySource: KeySource): Promise<string | null> {
  const newest: { id: string; private_key_sealed: string } | undefined = await db('domain_keys')
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .first('id', 'private_key_sealed');
  if (!newest) return null;
  try {
    openPrivateKey(keySource, newest.id, newest.private_key_sealed);
    return null;
  } catch (err) {
    if (!(err instanceof SecretBoxError)) throw err;
    return `secret.key in dataDir does not open the DKIM keys in the database (${err.message}): ` +
      'every node of a shared database, and a restored database, needs the secret.key its keys were sealed with; ' +
      'copy it from a node that sends signed mail (README "Running several nodes")';
  }
}
