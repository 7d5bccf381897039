/**
 * Reading the rollups. A range [from, to) is answered from the coarsest rows
 * that fit inside it (months for the per-domain rows, then days) and hour
 * rows for the ragged ends, so a year costs a few hundred rows per
 * combination of dimensions, whatever the number of events behind them.
 */
import type { Knex } from 'knex';
import type { Queryable } from '../db';
import { ALL_DOMAINS, ceilTo, Counts, DOMAIN_GRAINS, floorTo, Grain, METRICS, ROLLUPS, TOTAL_GRAINS, zeroCounts } from './rollup';
import type { AnalyticsScope } from './range';

interface Part {
  grain: Grain;
  from: number;
  to: number;
}

/**
 * Splits [from, to) into parts of the coarsest grains that fit: with grains
 * h, d, m a year becomes ragged hours, ragged days, whole months, days, hours.
 */
export function rangeParts(from: number, to: number, grains: Grain[]): Part[] {
  if (from >= to) return [];
  const coarsest = grains[grains.length - 1];
  const finer = grains.slice(0, -1);
  if (!finer.length) return [{ grain: coarsest, from, to }];
  const start = ceilTo(coarsest, from);
  const end = floorTo(coarsest, to);
  if (start >= end) return rangeParts(from, to, finer);
  return [...rangeParts(from, start, finer), { grain: coarsest, from: start, to: end }, ...rangeParts(end, to, finer)];
}

export const SUMS = METRICS.map((m) => `SUM(${m}) AS ${m}`).join(', ');

/**
 * Rows of one grain in the scope's tag row set, with its filters (no time range): the totals' rows, or with
 * `byDomain` the recipient domains' rows. The totals' `recipient_domain = ''` is part of the table's key before
 * the bucket, so their reads skip every domain's rows.
 */
export function rowsOf(db: Queryable, scope: AnalyticsScope, grain: Grain, byDomain = false): Knex.QueryBuilder {
  const q = db(ROLLUPS).where({ account_id: scope.accountId, mode: scope.mode, tag: scope.tag, grain });
  if (byDomain) q.andWhere('recipient_domain', '<>', ALL_DOMAINS);
  else q.andWhere('recipient_domain', ALL_DOMAINS);
  if (scope.sendingDomain !== undefined) q.andWhere('sending_domain', scope.sendingDomain);
  if (scope.ipPool !== undefined) q.andWhere('ip_pool', scope.ipPool);
  return q;
}

function scoped(db: Queryable, scope: AnalyticsScope, part: Part, byDomain = false): Knex.QueryBuilder {
  return rowsOf(db, scope, part.grain, byDomain).andWhere('bucket', '>=', part.from).andWhere('bucket', '<', part.to);
}

export function toCounts(row: Record<string, unknown> | undefined): Counts {
  const c = zeroCounts();
  if (row) for (const m of METRICS) c[m] = Number(row[m] ?? 0);
  return c;
}

export function addInto(target: Counts, add: Counts, sign = 1): void {
  for (const m of METRICS) target[m] += sign * add[m];
}

/** Totals over the scope's range. */
export async function readTotals(db: Queryable, scope: AnalyticsScope): Promise<Counts> {
  const total = zeroCounts();
  for (const part of rangeParts(scope.from, scope.to, TOTAL_GRAINS)) {
    const row = await scoped(db, scope, part).first(db.raw(SUMS));
    addInto(total, toCounts(row));
  }
  return total;
}

export interface DomainRow {
  recipientDomain: string;
  counts: Counts;
}

/**
 * Metrics per recipient domain, most sent first (ties by name), one page
 * after `cursor` (the last domain of the previous page), with the number of
 * domains in the range.
 */
export async function readDomains(
  db: Queryable,
  scope: AnalyticsScope,
  limit: number,
  cursor?: string,
): Promise<{ rows: DomainRow[]; total: number }> {
  const unions: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  for (const part of rangeParts(scope.from, scope.to, DOMAIN_GRAINS)) {
    const sql = scoped(db, scope, part, true).select('recipient_domain', ...METRICS).toSQL();
    unions.push(sql.sql);
    bindings.push(...(sql.bindings as Knex.RawBinding[]));
  }
  const after = cursor === undefined ? '' : 'WHERE sent < (SELECT sent FROM agg WHERE recipient_domain = ?) OR (sent = (SELECT sent FROM agg WHERE recipient_domain = ?) AND recipient_domain > ?)';
  if (cursor !== undefined) bindings.push(cursor, cursor, cursor);
  const sql = `WITH parts AS (${unions.join(' UNION ALL ')}),
    agg AS (SELECT recipient_domain, ${SUMS}, COUNT(*) OVER () AS total FROM parts GROUP BY recipient_domain)
    SELECT * FROM agg ${after} ORDER BY sent DESC, recipient_domain ASC LIMIT ?`;
  const rows = rawRows(await db.raw(sql, [...bindings, limit]));
  let total = rows.length ? Number(rows[0].total) : 0;
  if (!rows.length && cursor !== undefined) {
    const counted = rawRows(
      await db.raw(`WITH parts AS (${unions.join(' UNION ALL ')}) SELECT COUNT(DISTINCT recipient_domain) AS total FROM parts`, bindings.slice(0, -3)),
    );
    total = Number(counted[0]?.total ?? 0);
  }
  return { rows: rows.map((r) => ({ recipientDomain: String(r.recipient_domain), counts: toCounts(r) })), total };
}

/** knex.raw answers an array on SQLite and `{rows}` on PostgreSQL. */
function rawRows(result: unknown): Array<Record<string, unknown>> {
  return Array.isArray(result) ? result : ((result as { rows?: Array<Record<string, unknown>> }).rows ?? []);
}
