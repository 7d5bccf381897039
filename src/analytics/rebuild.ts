/**
 * Rebuilding the rollups from the events table, in bulk and in SQL: for an
 * operator after restoring or pruning events (`pigeon analytics rebuild`), and
 * for the benchmark, which seeds a million messages directly. It computes the
 * event metrics exactly as the applyRollup sink does one event at a time
 * (first open/click of a message by event id is the unique one; tags
 * de-duplicated, '' row set for every message). `deferred` and `suppressed`
 * are not events; their counters are kept as they are.
 *
 * SQLite-specific (json_each, json_extract); PostgreSQL would need its own
 * spelling of the tag expansion.
 */
import type { Db } from '../db';
import { DAY, DOMAIN_GRAINS, Grain, HOUR, METRICS, TOTAL_GRAINS } from './rollup';

const EVENT_METRICS = METRICS.filter((m) => m !== 'deferred' && m !== 'suppressed');

const SUMS = [
  "SUM(type = 'message.sent')",
  "SUM(type = 'message.delivered')",
  "SUM(type = 'message.bounced' AND soft = 0)",
  "SUM(type = 'message.bounced' AND soft = 1)",
  "SUM(type = 'message.complained')",
  "SUM(type = 'message.opened')",
  "SUM(type = 'message.opened' AND nth = 1)",
  "SUM(type = 'message.clicked')",
  "SUM(type = 'message.clicked' AND nth = 1)",
];

function eventSource(accountFilter: string): string {
  return `ev AS (
    SELECT e.account_id, e.mode, e.created_at AS at, e.type,
      (e.type = 'message.bounced' AND json_extract(e.data, '$.type') = 'soft') AS soft,
      ROW_NUMBER() OVER (PARTITION BY e.message_id, e.type ORDER BY e.id) AS nth,
      m.sending_domain, m.recipient_domain, COALESCE(m.ip_pool, 'default') AS ip_pool, m.tags
    FROM events e JOIN messages m ON m.id = e.message_id
    WHERE e.type IN ('message.sent', 'message.delivered', 'message.bounced', 'message.complained', 'message.opened', 'message.clicked')
      ${accountFilter}
  ),
  tagged AS (
    SELECT ev.*, '' AS tag FROM ev
    UNION ALL
    SELECT ev.*, j.value AS tag FROM ev, json_each(ev.tags) j
    WHERE j.type = 'text' AND j.value <> ''
      AND NOT EXISTS (SELECT 1 FROM json_each(ev.tags) k WHERE k.value = j.value AND k.key < j.key)
  )`;
}

/** One row per grain of the table; month buckets are computed by SQLite's calendar. */
function grainsSource(grains: Grain[]): string {
  const size: Record<Grain, number> = { h: HOUR, d: DAY, m: 0 };
  return `grains AS (${grains.map((g) => `SELECT '${g}' AS grain, ${size[g]} AS size`).join(' UNION ALL ')})`;
}

const BUCKET = "CASE grain WHEN 'm' THEN CAST(strftime('%s', at / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000 ELSE (at / size) * size END";

async function rebuildTable(db: Db, table: 'analytics_totals' | 'analytics_domains', accountId?: string): Promise<void> {
  const withDomain = table === 'analytics_domains';
  const dims = ['account_id', 'mode', 'tag', 'grain', 'bucket', ...(withDomain ? ['recipient_domain'] : []), 'sending_domain', 'ip_pool'];
  const select = dims.map((d) => (d === 'bucket' ? BUCKET : d)).join(', ');
  const accountFilter = accountId ? 'AND e.account_id = ?' : '';
  const bindings = accountId ? [accountId] : [];
  await db.transaction(async (trx) => {
    const zero = Object.fromEntries(EVENT_METRICS.map((m) => [m, 0]));
    await (accountId ? trx(table).where({ account_id: accountId }) : trx(table)).update(zero);
    await trx.raw(
      `WITH ${eventSource(accountFilter)}, ${grainsSource(withDomain ? DOMAIN_GRAINS : TOTAL_GRAINS)}
      INSERT INTO ${table} (${dims.join(', ')}, ${EVENT_METRICS.join(', ')})
      SELECT ${select}, ${SUMS.join(', ')} FROM tagged, grains WHERE true
      GROUP BY ${dims.map((_, i) => i + 1).join(', ')}
      ON CONFLICT (${dims.join(', ')}) DO UPDATE SET ${EVENT_METRICS.map((m) => `${m} = excluded.${m}`).join(', ')}`,
      bindings,
    );
    const empty = trx(table).where(Object.fromEntries(METRICS.map((m) => [m, 0])));
    await (accountId ? empty.andWhere({ account_id: accountId }) : empty).delete();
  });
}

/** Recomputes every event metric of the rollups (of one account, or all) from the events table. */
export async function rebuildRollups(db: Db, accountId?: string): Promise<void> {
  await rebuildTable(db, 'analytics_totals', accountId);
  await rebuildTable(db, 'analytics_domains', accountId);
}
