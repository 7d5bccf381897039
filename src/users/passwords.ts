/**
 * Password hashing with node:crypto scrypt (N=2^15, r=8, p=1: about 32 MiB and
 * tens of milliseconds per hash) and a random 16-byte salt per user. The async
 * form runs on libuv's thread pool, so a sign-in never blocks the event loop.
 * Stored as `scrypt$N$r$p$salt$hash` (base64url) so parameters can be raised
 * later without invalidating existing hashes.
 */
import crypto from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;

const PARAMS = { N: 1 << 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
/** scrypt needs 128·N·r bytes; the default maxmem (32 MiB) is just too small for N=2^15. */
const MAX_MEMORY = 64 * 1024 * 1024;

export const PASSWORD_MIN_LENGTH = 12;
/** Longer passwords add nothing but hashing work an attacker could ask for. */
export const PASSWORD_MAX_LENGTH = 200;

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { ...PARAMS, maxmem: MAX_MEMORY });
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** True when `password` matches `stored`; a malformed or missing hash never matches. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? DUMMY_HASH).split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (N !== PARAMS.N || r !== PARAMS.r || p !== PARAMS.p) return false; // only parameters we chose are honoured
  const expected = Buffer.from(parts[5], 'base64url');
  const actual = await scrypt(password, Buffer.from(parts[4], 'base64url'), expected.length, { N, r, p, maxmem: MAX_MEMORY });
  return expected.length === actual.length && crypto.timingSafeEqual(expected, actual) && stored !== null;
}

/**
 * Hashed against when the email is unknown or has no password yet, so that
 * answer takes as long as a wrong password (no user enumeration by timing).
 */
const DUMMY_HASH = ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, 'AAAAAAAAAAAAAAAAAAAAAA', 'A'.repeat(43)].join('$');
