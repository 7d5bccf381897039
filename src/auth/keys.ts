/**
 * API keys. A key is `svc_test_` or `svc_live_` followed by 40 random base62
 * characters. It is shown once; the database keeps its SHA-256 and a short
 * visible prefix for listing. Lookup is by hash, so the key itself never needs
 * to be stored or logged.
 */
import crypto from 'node:crypto';
import type { Queryable } from '../db';
import { fromJson, toJson } from '../db';
import { hasReader, readerOf } from '../db/reader';
import { newId, randomBase62 } from '../ids';
import { cachePerApp, ReadCache } from '../util/read-cache';
import { invalidateRelayNetworks } from './relay-networks';
import { KEY_PREFIX, Mode, Scope } from './scopes';

export const KEY_RANDOM_LENGTH = 40;
const KEY_PATTERN = /^svc_(test|live)_[A-Za-z0-9]{32,128}$/;

export interface ApiKey {
  id: string;
  accountId: string;
  name: string;
  mode: Mode;
  prefix: string;
  scopes: Scope[];
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  mode: string;
  prefix: string;
  key_hash: string;
  scopes: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** Once per authenticated request: the one-shot hash costs less than half a Hash object's create, update and digest. */
export const hashKey = (secret: string): string => crypto.hash('sha256', secret, 'hex');

export const looksLikeKey = (value: string): boolean => KEY_PATTERN.test(value);

export function modeOfKey(secret: string): Mode | undefined {
  if (secret.startsWith(KEY_PREFIX.test)) return 'test';
  if (secret.startsWith(KEY_PREFIX.live)) return 'live';
  return undefined;
}

function toKey(r: KeyRow): ApiKey {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    mode: r.mode as Mode,
    prefix: r.prefix,
    scopes: fromJson<Scope[]>(r.scopes, []),
    createdAt: Number(r.created_at),
    lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
    revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
  };
}

export interface NewKey {
  accountId: string;
  name: string;
  mode: Mode;
  scopes: Scope[];
}

/** Creates a key and returns it with its secret, which is never retrievable again. */
export async function createKey(db: Queryable, input: NewKey, now: number): Promise<{ key: ApiKey; secret: string }> {
  const secret = KEY_PREFIX[input.mode] + randomBase62(KEY_RANDOM_LENGTH);
  const row: KeyRow = {
    id: newId('key'),
    account_id: input.accountId,
    name: input.name,
    mode: input.mode,
    prefix: secret.slice(0, KEY_PREFIX[input.mode].length + 6),
    key_hash: hashKey(secret),
    scopes: toJson([...new Set(input.scopes)]) as string,
    created_at: now,
    last_used_at: null,
    revoked_at: null,
  };
  await db('api_keys').insert(row);
  return { key: toKey(row), secret };
}

async function keyByHash(db: Queryable, hash: string): Promise<ApiKey | undefined> {
  const row = await db<KeyRow>('api_keys').where({ key_hash: hash }).first();
  return row && toKey(row);
}

/**
 * Keys by hash, for the app's handle. A revocation through this process clears it at once; one made by
 * another process (`pigeon keys revoke`) is seen within KEY_CACHE_TTL_MS. Unknown hashes are never cached
 * (see ReadCache), so a flood of made-up keys costs reads on the reader, throttled per address by
 * AuthFailureLimiter, and no memory.
 */
export const KEY_CACHE_TTL_MS = 2_000;
const KEY_CACHE_MAX = 10_000; // distinct live keys in use at once; ~1 KB each
const keyCache = cachePerApp('keys', hasReader, (db: Queryable) =>
  new ReadCache<string, ApiKey>({ max: KEY_CACHE_MAX, ttlMs: KEY_CACHE_TTL_MS, load: (hash) => keyByHash(readerOf(db), hash) }));

/** Keys held in the app's cache (tests check that made-up keys add none). */
export const keyCacheSize = (db: Queryable): number => keyCache(db)?.size ?? 0;

export async function findKeyBySecret(db: Queryable, secret: string): Promise<ApiKey | undefined> {
  const hash = hashKey(secret);
  const cache = keyCache(db);
  return cache ? cache.get(hash) : keyByHash(db, hash);
}

async function keyById(db: Queryable, id: string): Promise<ApiKey | undefined> {
  const row = await db<KeyRow>('api_keys').where({ id }).first();
  return row && toKey(row);
}

// Keys by id, for a key checked again after it authenticated (an SMTP session at each MAIL FROM); same bounds as by hash.
const keyByIdCache = cachePerApp('keys-by-id', hasReader, (db: Queryable) =>
  new ReadCache<string, ApiKey>({ max: KEY_CACHE_MAX, ttlMs: KEY_CACHE_TTL_MS, load: (id) => keyById(readerOf(db), id) }));

/** The account's key, through the app's cache when given the app's handle (a revocation here clears it at once). */
export async function findKeyById(db: Queryable, accountId: string, id: string): Promise<ApiKey | undefined> {
  const cache = keyByIdCache(db);
  const key = cache ? await cache.get(id) : await keyById(db, id);
  return key?.accountId === accountId ? key : undefined;
}

export async function getKey(db: Queryable, accountId: string, id: string): Promise<ApiKey | undefined> {
  const row = await db<KeyRow>('api_keys').where({ id, account_id: accountId }).first();
  return row && toKey(row);
}

export interface KeyPage {
  items: ApiKey[];
  total: number;
}

export async function listKeys(db: Queryable, accountId: string | undefined, limit: number, cursor?: string): Promise<KeyPage> {
  const base = db<KeyRow>('api_keys').modify((q) => {
    if (accountId) q.where({ account_id: accountId });
  });
  const rows = await base.clone().modify((q) => {
    if (cursor) q.where('id', '<', cursor);
  }).orderBy('id', 'desc').limit(limit);
  const total = await base.clone().count({ n: '*' }).first();
  return { items: rows.map(toKey), total: Number(total?.n ?? 0) };
}

/** Keys not revoked (the limits.keysPerAccount cap counts these). */
export async function countActiveKeys(db: Queryable, accountId: string): Promise<number> {
  const row = await db('api_keys').where({ account_id: accountId }).whereNull('revoked_at').count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

export async function revokeKey(db: Queryable, id: string, now: number, accountId?: string): Promise<ApiKey | undefined> {
  const where = accountId ? { id, account_id: accountId } : { id };
  await db('api_keys').where(where).whereNull('revoked_at').update({ revoked_at: now });
  // The cache is keyed by hash, not id; revocations are rare, so forget every key.
  keyCache.invalidate(db);
  keyByIdCache.invalidate(db, id);
  invalidateRelayNetworks(db);
  const row = await db<KeyRow>('api_keys').where(where).first();
  return row && toKey(row);
}

/**
 * last_used_at is written at most once a minute per key, so reads stay reads. The stamp is set on the
 * key object before the write: that object is the cached one, so the requests of the next minute (and
 * those running while the write is queued) skip the write.
 */
export async function touchKey(db: Queryable, key: ApiKey, now: number): Promise<void> {
  if (key.lastUsedAt !== null && now - key.lastUsedAt < 60_000) return;
  key.lastUsedAt = now;
  await db('api_keys').where({ id: key.id }).update({ last_used_at: now });
}
