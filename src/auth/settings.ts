/** Account security settings: the IP allowlist, cached briefly because every request reads it. */
import type { Clock } from '../clock';
import type { Db, Queryable } from '../db';
import { fromJson, toJson } from '../db';

const CACHE_MS = 2_000;

export class SecuritySettings {
  // Bounded by the number of accounts: keyed by the account of a key that authenticated.
  private readonly cache = new Map<string, { entries: string[]; at: number }>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async allowedIps(accountId: string): Promise<string[]> {
    const hit = this.cache.get(accountId);
    if (hit && this.clock.now() - hit.at < CACHE_MS) return hit.entries;
    const row = await this.db('account_settings').where({ account_id: accountId }).first();
    const entries = fromJson<string[]>(row?.allowed_ips, []);
    this.cache.set(accountId, { entries, at: this.clock.now() });
    return entries;
  }

  async setAllowedIps(accountId: string, entries: string[], trx: Queryable = this.db): Promise<void> {
    const now = this.clock.now();
    await trx('account_settings')
      .insert({ account_id: accountId, allowed_ips: toJson(entries), updated_at: now })
      .onConflict('account_id')
      .merge();
    this.cache.set(accountId, { entries, at: now });
  }

  async updatedAt(accountId: string): Promise<number | null> {
    const row = await this.db('account_settings').where({ account_id: accountId }).first();
    return row ? Number(row.updated_at) : null;
  }
}
