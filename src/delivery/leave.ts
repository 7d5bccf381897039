/**
 * The write that takes messages out of the MTA's hands: every outcome of a
 * writer transaction becomes one UPDATE … FROM (VALUES …) RETURNING id,
 * instead of one UPDATE per message (a burst of a hundred outcomes cost a
 * hundred statements, each a thread hand-off on the only writer connection).
 *
 * Each row changes only while the lease is still the one its job holds and
 * the message is still `sending`; the ids returned are the rows that were
 * ours, and only their attempts and events get written (record.ts).
 * Columns a plan leaves undefined keep their value (COALESCE), except
 * next_attempt_at, which every outcome sets. Numbers are CAST in the VALUES
 * list so the statement types the same on SQLite and PostgreSQL. On SQLite
 * the rows are one JSON value instead (db/json-rows.ts: binding each value
 * costs the main thread more), numbers CAST the same way, and one text
 * serves every row count.
 */
import { isPostgres, rawRows, type Tx } from '../db';
import { jsonColumns, jsonTuples } from '../db/json-rows';

export interface LeaveUpdate {
  status: string;
  next_attempt_at: number | null;
  attempts: number;
  last_response?: string | null;
  sent_at?: number;
  delivered_at?: number;
  bounced_at?: number;
  /** how the content was signed (the prepare step's note), when it was signed for this attempt */
  dkim?: string | null;
}

export interface LeaveRow {
  id: string;
  leaseOwner: string;
  update: LeaveUpdate;
  at: number;
}

/** [column, bound as a number] in VALUES order */
const COLUMNS: Array<[string, boolean]> = [
  ['id', false], ['lease_owner', false], ['status', false], ['next_attempt_at', true], ['attempts', true],
  ['last_response', false], ['sent_at', true], ['delivered_at', true], ['bounced_at', true], ['dkim', false], ['updated_at', true],
];
const KEPT_UNLESS_GIVEN = ['last_response', 'sent_at', 'delivered_at', 'bounced_at', 'dkim'];
const SET_ALWAYS = ['status', 'next_attempt_at', 'attempts', 'updated_at'];
/** 11 bindings a row: far under the 8,000 a statement the writer's buffer keeps to */
const ROWS_PER_STATEMENT = 500;

const statements = new Map<number, string>(); // one text per row count up to ROWS_PER_STATEMENT

const UPDATE_FROM_V = `UPDATE messages SET ${[
  ...SET_ALWAYS.map((c) => `${c} = v.${c}`),
  ...KEPT_UNLESS_GIVEN.map((c) => `${c} = COALESCE(v.${c}, messages.${c})`),
  'lease_owner = NULL', 'lease_expires_at = NULL',
].join(', ')} FROM v WHERE messages.id = v.id AND messages.lease_owner = v.lease_owner AND messages.status = 'sending' RETURNING messages.id`;

function leaveSql(rows: number): string {
  let sql = statements.get(rows);
  if (sql) return sql;
  const tuple = `(${COLUMNS.map(([, numeric]) => (numeric ? 'CAST(? AS BIGINT)' : '?')).join(', ')})`;
  sql = `WITH v (${COLUMNS.map(([c]) => c).join(', ')}) AS (VALUES ${Array(rows).fill(tuple).join(', ')}) ${UPDATE_FROM_V}`;
  statements.set(rows, sql);
  return sql;
}

/** SQLite: the same update, its rows from json_each(?), the numbers CAST as in the VALUES form */
const LEAVE_JSON_SQL = `WITH v AS (SELECT ${jsonColumns(COLUMNS.map(([c]) => c), new Set(COLUMNS.filter(([, n]) => n).map(([c]) => c)))} ` +
  `FROM json_each(?) AS j) ${UPDATE_FROM_V}`;

function bindings(row: LeaveRow): Array<string | number | null> {
  const u = row.update;
  return [row.id, row.leaseOwner, u.status, u.next_attempt_at, u.attempts, u.last_response ?? null,
    u.sent_at ?? null, u.delivered_at ?? null, u.bounced_at ?? null, u.dkim ?? null, row.at];
}

/** Applies every row's update where the lease is still its own; returns the ids that changed. */
export async function leaveAll(trx: Tx, rows: readonly LeaveRow[]): Promise<Set<string>> {
  const ours = new Set<string>();
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const tuples = rows.slice(i, i + ROWS_PER_STATEMENT).map(bindings);
    const json = isPostgres(trx) ? undefined : jsonTuples(tuples);
    const result = json !== undefined ? await trx.raw(LEAVE_JSON_SQL, [json]) : await trx.raw(leaveSql(tuples.length), tuples.flat());
    const changed = rawRows<{ id: string }>(result);
    for (const r of changed) ours.add(r.id);
  }
  return ours;
}
