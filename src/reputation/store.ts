/**
 * The `ip_reputation` table: the last result of each check of each source
 * address (a DNSBL zone, or `fcrdns`). Read by the API, /metrics and the
 * doctor; written by the watch (watch.ts) through the app's writer.
 */
import type { Queryable } from '../db';
import { fromJson, toJson } from '../db';
import { readerOf } from '../db/reader';

export const FCRDNS = 'fcrdns';

export interface CheckRecord {
  address: string;
  /** a DNSBL zone, or `fcrdns` */
  check: string;
  /** unknown: no lookup has answered yet (see error) */
  state: 'listed' | 'clear' | 'ok' | 'fail' | 'unknown';
  detail: string | null;
  codes: string[];
  since: number;
  checkedAt: number;
  error: string | null;
  errorAt: number | null;
}

interface Row {
  address: string;
  check_name: string;
  state: string;
  detail: string | null;
  codes: string | null;
  since: number | string;
  checked_at: number | string;
  error: string | null;
  error_at: number | string | null;
}

const toRecord = (r: Row): CheckRecord => ({
  address: r.address,
  check: r.check_name,
  state: r.state as CheckRecord['state'],
  detail: r.detail,
  codes: fromJson<string[]>(r.codes, []),
  since: Number(r.since),
  checkedAt: Number(r.checked_at),
  error: r.error,
  errorAt: r.error_at === null ? null : Number(r.error_at),
});

/** Every check of these addresses (all addresses when none are named), by address. */
export async function checksOf(db: Queryable, addresses?: string[]): Promise<Map<string, CheckRecord[]>> {
  const q = readerOf(db)('ip_reputation').orderBy('address').orderBy('check_name');
  if (addresses) q.whereIn('address', addresses);
  const out = new Map<string, CheckRecord[]>();
  for (const r of (await q) as Row[]) out.set(r.address, [...(out.get(r.address) ?? []), toRecord(r)]);
  return out;
}

/** The stored state of one check, read inside the writer's transaction. */
export async function currentCheck(trx: Queryable, address: string, check: string): Promise<CheckRecord | undefined> {
  const row = await trx<Row>('ip_reputation').where({ address, check_name: check }).first();
  return row && toRecord(row);
}

export async function saveCheck(trx: Queryable, c: CheckRecord): Promise<void> {
  await trx('ip_reputation')
    .insert({
      address: c.address, check_name: c.check, state: c.state, detail: c.detail, codes: toJson(c.codes), since: c.since,
      checked_at: c.checkedAt, error: c.error, error_at: c.errorAt,
    })
    .onConflict(['address', 'check_name'])
    .merge();
}

/** A lookup that did not answer: the last known state stays, with the error beside it. */
export async function noteError(trx: Queryable, address: string, check: string, error: string, now: number): Promise<boolean> {
  return (await trx('ip_reputation').where({ address, check_name: check }).update({ error, error_at: now })) > 0;
}
