/**
 * What the delivery module asks before the first attempt of a message: the
 * DKIM key(s) to sign with. Only active keys sign; a rotation's new key, and a
 * second (Ed25519) key added to an existing domain, become active once their
 * record has verified, so receivers can always find the public half of
 * whatever signed the message.
 */
import type { Queryable } from '../db';
import type { SigningKey } from '../delivery/dkim';
import { openPrivateKey, type KeySource } from './keys';
import { lookupName } from './name';
import { activeSealedKeys, findDomain } from './repository';

export type { SigningKey };

/**
 * The active DKIM key of the account's domain (with its active Ed25519 second
 * key, if any), or null when the account has no such domain. Unverified
 * domains have a key too (sandbox mail is signed as in live mode).
 * `keySource` is the dataDir (its secret.key) or the master key. The PEMs are
 * kept in memory only; never log them.
 */
export async function getSigningKey(db: Queryable, keySource: KeySource, accountId: string, domain: string): Promise<SigningKey | null> {
  const name = lookupName(domain);
  const found = name ? await findDomain(db, accountId, name) : undefined;
  if (!found) return null;
  const keys = await activeSealedKeys(db, found.id);
  const primary = keys.find((k) => k.role === 'primary');
  if (!primary) return null;
  const second = keys.find((k) => k.role === 'second');
  return {
    domain: found.name,
    selector: primary.selector,
    algorithm: primary.algorithm,
    privateKeyPem: openPrivateKey(keySource, primary.id, primary.sealed),
    ...(second ? { ed25519: { selector: second.selector, privateKeyPem: openPrivateKey(keySource, second.id, second.sealed) } } : {}),
  };
}
