/**
 * Public identifiers: `<prefix>_<26 chars>`, where the chars are a ULID-style
 * monotonic timestamp + randomness in lower-case Crockford base32. Ids sort by
 * creation order, so a list ordered by id is newest-first with `id < cursor`
 * and stays stable while rows are inserted between page reads.
 */
import crypto from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Randomness for identifiers (ids, request ids, MIME boundaries), drawn 4 KiB at a time: each call into
 * OpenSSL costs about as much as building a whole id, and a send makes several. Not for secrets (keys,
 * tokens, webhook secrets): those take crypto.randomBytes directly, so no unused secret bytes stay in memory.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

export function identifierBytes(length: number): Buffer {
  if (poolOffset + length > pool.length) {
    pool = crypto.randomBytes(Math.max(POOL_BYTES, length));
    poolOffset = 0;
  }
  poolOffset += length;
  return pool.subarray(poolOffset - length, poolOffset);
}

let lastTime = -1;
let lastTimeText = '';
/** The randomness of the last id, one base32 digit per entry; incremented in place within a millisecond. */
let lastRandom: number[] = [];

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function nextRandom(ms: number): number[] {
  if (ms === lastTime) {
    // Same millisecond: increment the previous randomness so ids stay ordered.
    const r = lastRandom;
    for (let i = r.length - 1; i >= 0; i--) {
      if (r[i] < 31) {
        r[i]++;
        return r;
      }
      r[i] = 0;
    }
    return r;
  }
  return Array.from(identifierBytes(16), (b) => b % 32);
}

/** Wall-clock time is used on purpose (not the injectable clock): ids only need order. */
export function newId(prefix: string): string {
  const now = Math.max(Date.now(), lastTime);
  lastRandom = nextRandom(now);
  if (now !== lastTime) lastTimeText = encodeTime(now); // a burst makes many ids per millisecond
  lastTime = now;
  let random = '';
  for (const digit of lastRandom) random += ALPHABET[digit];
  return `${prefix}_${lastTimeText}${random}`;
}

export function isId(prefix: string, value: unknown): value is string {
  return typeof value === 'string' && new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`).test(value);
}

/** Uniform random base62 string (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of crypto.randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}
