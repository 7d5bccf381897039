/**
 * Account security settings: the IP allowlist. Every request reads it, so it is cached per account (see
 * ReadCache): a change through this process, or another node on the same PostgreSQL database, applies
 * to the next request; one made by another process (`pigeon settings`) within ALLOWLIST_CACHE_TTL_MS.
 */
import type { Clock } from '../clock';
import type { Db } from '../db';
import { fromJson, toJson } from '../db';
import { readerOf } from '../db/reader';
import { cacheRegistry, ReadCache } from '../util/read-cache';

export const ALLOWLIST_CACHE_TTL_MS = 2_000;
// Keyed by the account of a key that authenticated, so bounded by the accounts; the LRU bounds it anyway.
const ALLOWLIST_CACHE_MAX = 10_000;

export class SecuritySettings {
  private readonly cache = new ReadCache<string, string[]>({
    max: ALLOWLIST_CACHE_MAX,
    ttlMs: ALLOWLIST_CACHE_TTL_MS,
    load: async (accountId) => {
      const row = await readerOf(this.db)('account_settings').where({ account_id: accountId }).first();
      return fromJson<string[]>(row?.allowed_ips, []);
    },
  });

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {
    this.cache.share('allowlist', cacheRegistry(db)); // a change on one node clears it on the others
  }

  async allowedIps(accountId: string): Promise<string[]> {
    return (await this.cache.get(accountId)) ?? [];
  }

  /** Committed before the cache is cleared, so no lookup can re-read the old list after it. */
  async setAllowedIps(accountId: string, entries: string[]): Promise<void> {
    const now = this.clock.now();
    await this.db('account_settings')
      .insert({ account_id: accountId, allowed_ips: toJson(entries), updated_at: now })
      .onConflict('account_id')
      .merge();
    this.cache.invalidate(accountId);
  }

  async updatedAt(accountId: string): Promise<number | null> {
    const row = await readerOf(this.db)('account_settings').where({ account_id: accountId }).first();
    return row ? Number(row.updated_at) : null;
  }
}
