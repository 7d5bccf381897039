/**
 * What the delivery module asks before the first attempt of a message: the
 * DKIM key to sign with. Only the active key signs; a rotation's new key
 * becomes active once its record has verified, so receivers can always find
 * the public half of whatever signed the message.
 */
import type { Queryable } from '../db';
import { openPrivateKey, type DkimAlgorithm, type KeySource } from './keys';
import { lookupName } from './name';
import { activeSealedKey, findDomain } from './repository';

export interface SigningKey {
  /** The d= of the signature: the sending domain as stored (lower-case, punycode). */
  domain: string;
  /** The s= of the signature. */
  selector: string;
  algorithm: DkimAlgorithm;
  /** PKCS#8 PEM, as mailauth's dkimSign takes it. Keep it in memory only; never log it. */
  privateKeyPem: string;
}

/**
 * The active DKIM key of the account's domain, or null when the account has no
 * such domain. Unverified domains have a key too (sandbox mail is signed as in
 * live mode). `keySource` is the dataDir (its secret.key) or the master key.
 */
export async function getSigningKey(db: Queryable, keySource: KeySource, accountId: string, domain: string): Promise<SigningKey | null> {
  const name = lookupName(domain);
  const found = name ? await findDomain(db, accountId, name) : undefined;
  if (!found) return null;
  const key = await activeSealedKey(db, found.id);
  if (!key) return null;
  return { domain: found.name, selector: key.selector, algorithm: key.algorithm, privateKeyPem: openPrivateKey(keySource, key.id, key.sealed) };
}
