/**
 * Rebuilding the rollups from the events table, in bulk and in SQL: for an
 * operator after restoring or pruning events (`pigeon analytics rebuild`), and
 * for the benchmark, which seeds a million messages directly. It computes the
 * event metrics exactly as the applyRollup sink does one event at a time
 * (first open/click of a message by event id is the unique one; tags
 * de-duplicated, '' row set for every message). `deferred` and `suppressed`
 * are not events; their counters are kept as they are.
 *
 * The statement is the same on both databases except for the JSON functions
 * and the calendar month (`Dialect` below); the sums are CASE expressions
 * because PostgreSQL cannot add booleans.
 */
import { isPostgres, type Db, type Tx } from '../db';
import { ALL_DOMAINS, DAY, DOMAIN_GRAINS, Grain, HOUR, METRICS, ROLLUPS, TOTAL_GRAINS } from './rollup';

const EVENT_METRICS = METRICS.filter((m) => m !== 'deferred' && m !== 'suppressed');

/** What SQLite and PostgreSQL spell differently: reading a JSON field, expanding a JSON array, the month's first ms. */
interface Dialect {
  /** The text of `data.type` of an event. */
  dataType: string;
  /** FROM items of `ev`'s string tags as (j, k): j.value (text) once per distinct value, k to look for an earlier equal one. */
  tagRows: string;
  /** `at` (ms) floored to the first ms of its UTC calendar month. */
  monthStart: string;
}

const SQLITE: Dialect = {
  dataType: "json_extract(e.data, '$.type')",
  tagRows: `SELECT ev.*, j.value AS tag FROM ev, json_each(ev.tags) j
    WHERE j.type = 'text' AND j.value <> ''
      AND NOT EXISTS (SELECT 1 FROM json_each(ev.tags) k WHERE k.value = j.value AND k.key < j.key)`,
  monthStart: "CAST(strftime('%s', at / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000",
};

// Tags are a JSON text column; jsonb keeps array order, WITH ORDINALITY numbers it as json_each's key does.
const POSTGRES: Dialect = {
  dataType: "(e.data::jsonb ->> 'type')",
  tagRows: `SELECT ev.*, j.elem #>> '{}' AS tag FROM ev, jsonb_array_elements(ev.tags::jsonb) WITH ORDINALITY j(elem, ord)
    WHERE jsonb_typeof(j.elem) = 'string' AND j.elem #>> '{}' <> ''
      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(ev.tags::jsonb) WITH ORDINALITY k(elem, ord) WHERE k.elem = j.elem AND k.ord < j.ord)`,
  monthStart: "CAST(EXTRACT(EPOCH FROM date_trunc('month', to_timestamp(at / 1000) AT TIME ZONE 'UTC')) AS BIGINT) * 1000",
};

const count = (condition: string): string => `SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END)`;

const SUMS = [
  count("type = 'message.sent'"),
  count("type = 'message.delivered'"),
  count("type = 'message.bounced' AND soft = 0"),
  count("type = 'message.bounced' AND soft = 1"),
  count("type = 'message.complained'"),
  count("type = 'message.opened'"),
  count("type = 'message.opened' AND nth = 1"),
  count("type = 'message.clicked'"),
  count("type = 'message.clicked' AND nth = 1"),
];

function eventSource(dialect: Dialect, accountFilter: string): string {
  return `ev AS (
    SELECT e.account_id, e.mode, e.created_at AS at, e.type,
      CASE WHEN e.type = 'message.bounced' AND ${dialect.dataType} = 'soft' THEN 1 ELSE 0 END AS soft,
      ROW_NUMBER() OVER (PARTITION BY e.message_id, e.type ORDER BY e.id) AS nth,
      m.sending_domain, m.recipient_domain, COALESCE(m.ip_pool, 'default') AS ip_pool, m.tags
    FROM events e JOIN messages m ON m.id = e.message_id
    WHERE e.type IN ('message.sent', 'message.delivered', 'message.bounced', 'message.complained', 'message.opened', 'message.clicked')
      ${accountFilter}
  ),
  tagged AS (
    SELECT ev.*, '' AS tag FROM ev
    UNION ALL
    ${dialect.tagRows}
  )`;
}

/** One row per grain of the table; month buckets come from the database's calendar (size 0 is never divided by). */
function grainsSource(grains: Grain[]): string {
  const size: Record<Grain, number> = { h: HOUR, d: DAY, m: 0 };
  return `grains AS (${grains.map((g) => `SELECT '${g}' AS grain, ${size[g]} AS size`).join(' UNION ALL ')})`;
}

const bucket = (dialect: Dialect): string => `CASE grain WHEN 'm' THEN ${dialect.monthStart} ELSE (at / size) * size END`;

const DIMS = ['account_id', 'mode', 'tag', 'grain', 'recipient_domain', 'bucket', 'sending_domain', 'ip_pool'];

/** The select expression of each dimension: the bucket is computed; the totals' recipient domain is ''. */
function dimExpression(dim: string, dialect: Dialect, byDomain: boolean): string {
  if (dim === 'bucket') return bucket(dialect);
  if (dim === 'recipient_domain' && !byDomain) return `'${ALL_DOMAINS}'`;
  return dim;
}

/** Writes one row set's event metrics (the totals', or with `byDomain` the recipient domains'). */
async function rebuildRowSet(trx: Tx, dialect: Dialect, byDomain: boolean, accountId?: string): Promise<void> {
  const select = DIMS.map((d) => dimExpression(d, dialect, byDomain));
  // GROUP BY the computed dimensions by position; the totals' constant '' needs none.
  const groupBy = DIMS.flatMap((d, i) => (d === 'recipient_domain' && !byDomain ? [] : [i + 1]));
  await trx.raw(
    `WITH ${eventSource(dialect, accountId ? 'AND e.account_id = ?' : '')}, ${grainsSource(byDomain ? DOMAIN_GRAINS : TOTAL_GRAINS)}
    INSERT INTO ${ROLLUPS} (${DIMS.join(', ')}, ${EVENT_METRICS.join(', ')})
    SELECT ${select.join(', ')}, ${SUMS.join(', ')} FROM tagged, grains WHERE true
    GROUP BY ${groupBy.join(', ')}
    ON CONFLICT (${DIMS.join(', ')}) DO UPDATE SET ${EVENT_METRICS.map((m) => `${m} = excluded.${m}`).join(', ')}`,
    accountId ? [accountId] : [],
  );
}

/** Recomputes every event metric of the rollups (of one account, or all) from the events table, in one transaction. */
export async function rebuildRollups(db: Db, accountId?: string): Promise<void> {
  const dialect = isPostgres(db) ? POSTGRES : SQLITE;
  await db.transaction(async (trx) => {
    const zero = Object.fromEntries(EVENT_METRICS.map((m) => [m, 0]));
    await (accountId ? trx(ROLLUPS).where({ account_id: accountId }) : trx(ROLLUPS)).update(zero);
    await rebuildRowSet(trx, dialect, false, accountId);
    await rebuildRowSet(trx, dialect, true, accountId);
    const empty = trx(ROLLUPS).where(Object.fromEntries(METRICS.map((m) => [m, 0])));
    await (accountId ? empty.andWhere({ account_id: accountId }) : empty).delete();
  });
}
