/**
 * DKIM key pairs: generation, selectors, and the sealed private key.
 * The private key leaves this file only through getSigningKey (for the
 * delivery module); no endpoint, CLI output or log line carries it.
 */
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { deriveKey, loadOrCreateMasterKey, open, seal } from '../crypto/secret-box';

export type DkimAlgorithm = 'rsa' | 'ed25519';
export const DKIM_ALGORITHMS = ['rsa', 'ed25519'] as const;

const generateKeyPair = promisify(crypto.generateKeyPair);
const RSA_BITS = 2048;
const SELECTOR_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

export interface GeneratedKey {
  algorithm: DkimAlgorithm;
  /** The p= value of the DKIM record. */
  publicKey: string;
  privateKeyPem: string;
}

/** Off the event loop: an RSA-2048 pair takes tens of milliseconds. */
export async function generateDkimKey(algorithm: DkimAlgorithm): Promise<GeneratedKey> {
  const pair =
    algorithm === 'rsa'
      ? await generateKeyPair('rsa', { modulusLength: RSA_BITS })
      : await generateKeyPair('ed25519');
  return {
    algorithm,
    publicKey: dkimPublicValue(pair.publicKey),
    privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/** RSA: base64 SubjectPublicKeyInfo (RFC 6376); Ed25519: base64 of the raw 32 bytes (RFC 8463). */
export function dkimPublicValue(publicKey: crypto.KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return (publicKey.asymmetricKeyType === 'ed25519' ? der.subarray(-32) : der).toString('base64');
}

/** `pg<yyyymm><4 random>`: the month says when a key was made, the suffix keeps rotations in one month apart. */
export function newSelector(now: number): string {
  const d = new Date(now);
  const month = `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  const suffix = Array.from(crypto.randomBytes(4), (b) => SELECTOR_CHARS[b % SELECTOR_CHARS.length]).join('');
  return `pg${month}${suffix}`;
}

/** Where the master key comes from: the dataDir (its secret.key) or the key itself. */
export type KeySource = string | Buffer;

function dkimKey(source: KeySource): Buffer {
  const master = typeof source === 'string' ? loadOrCreateMasterKey(source) : source;
  return deriveKey(master, 'dkim');
}

/** The sealed value is bound to the key row's id, so it cannot be moved to another row. */
export function sealPrivateKey(source: KeySource, keyId: string, pem: string): string {
  return seal(dkimKey(source), pem, `domain_keys:${keyId}`);
}

export function openPrivateKey(source: KeySource, keyId: string, sealed: string): string {
  return open(dkimKey(source), sealed, `domain_keys:${keyId}`).toString('utf8');
}
