/**
 * Writing attempt results, a batch at a time. Every delivery that finished
 * while the previous commit was on its way is recorded in one transaction of
 * a few statements, however many there are: one UPDATE per distinct new state
 * (`WHERE id IN (…)`: a burst of successes is one statement) and one
 * multi-row INSERT of the attempts, on SQLite and PostgreSQL alike.
 *
 * On SQLite the UPDATE takes its ids as one JSON value (`json_each(?)`), so
 * its text is the same for every batch size and its prepared statement is
 * reused (a new length was one more trip to SQLite's thread, to prepare it);
 * the attempts go through the writer's buffer (db/buffer.ts) and ride with
 * the COMMIT.
 *
 * In the writer on SQLite the recorder (recorder.ts) asks for less: both
 * statements ride with the COMMIT (`ride`), so a batch that is the only work
 * of its transaction costs one trip to SQLite's thread instead of three (a
 * lone BEGIN, the UPDATE whose answer said which leases held, the attempts
 * with the COMMIT). A ridden statement has no answer, so the leases are
 * checked by the insert itself: an attempt whose delivery is no longer leased
 * to its owner (its webhook deleted, its lease taken over) gets no delivery
 * id, and the NOT NULL constraint fails the COMMIT. That is rare, and then
 * the recorder writes the batch again the way that answers each row
 * (`leaseCheckFailed`).
 */
import type { Knex } from 'knex';
import { isPostgres, type Queryable } from '../db';
import { insertRows } from '../db/buffer';
import { rideWithCommit, sqlString } from '../db/commit-batch';
import { jsonTuples } from '../db/json-rows';
import type { Delivery, Attempt } from './deliveries';
import { nextAttemptAfterFailure } from './schedule';

export type AttemptResult = 'succeeded' | 'retrying' | 'failed';

export interface AttemptRecord {
  delivery: Delivery;
  owner: string;
  attempt: Omit<Attempt, 'attempt'>;
}

export interface Recorded {
  result: AttemptResult;
  attempt: number;
  /** when a retry is due (null unless retrying) */
  nextAttemptAt: number | null;
}

/** Rows per statement: well under SQLite's 32766 and PostgreSQL's 65535 bound variables. */
const CHUNK = 500;

interface Planned extends Recorded {
  record: AttemptRecord;
  /** the delivery row's new state, identical for every row of a group */
  patch: Record<string, unknown>;
}

/** The next state of a delivery after its attempt: succeeded, retrying at the next step of the schedule, or failed. */
function plan(record: AttemptRecord, at: number): Planned {
  const { delivery: d, attempt: a } = record;
  const attempt = d.attempts + 1;
  const next = a.success ? null : nextAttemptAfterFailure(attempt - d.cycleStart, at);
  const result: AttemptResult = a.success ? 'succeeded' : next === null ? 'failed' : 'retrying';
  const patch = {
    status: result === 'retrying' ? 'pending' : result,
    attempts: attempt,
    next_attempt_at: next,
    lease_owner: null,
    lease_expires_at: null,
    last_status_code: a.statusCode,
    last_error: a.error,
    updated_at: at,
    completed_at: result === 'retrying' ? null : at,
  };
  return { record, result, attempt, nextAttemptAt: next, patch };
}

function groupByState(planned: Planned[]): Map<string, Planned[]> {
  const groups = new Map<string, Planned[]>();
  for (const p of planned) {
    const key = JSON.stringify([p.record.owner, p.patch]);
    const group = groups.get(key);
    if (group) group.push(p);
    else groups.set(key, [p]);
  }
  return groups;
}

/**
 * Stores the attempts and moves each delivery on, all in one commit; `at` is
 * when the batch finished, and retries count from it. An entry is null when
 * its row was deleted meanwhile (its webhook was deleted) or its lease lost.
 * `ride`: in the writer on SQLite, both statements may ride with the COMMIT;
 * a COMMIT that fails `leaseCheckFailed` then means the batch must be written
 * again without it (see the module comment).
 */
export async function recordAttempts(db: Queryable, records: AttemptRecord[], at: number, ride = false): Promise<Array<Recorded | null>> {
  const planned = records.map((r) => plan(r, at));
  return inTransaction(db, async (trx) => {
    if (ride && (await rideLeaseChecked(trx, planned))) return planned.map(recordedOf);
    const kept = new Set<string>();
    for (const group of groupByState(planned).values()) {
      for (let i = 0; i < group.length; i += CHUNK) {
        const part = group.slice(i, i + CHUNK);
        const ids = part.map((p) => p.record.delivery.id);
        const rows: Array<{ id: string }> = await trx('webhook_deliveries')
          .where((q) => (isPostgres(trx) ? q.whereIn('id', ids) : q.whereRaw('id IN (SELECT value FROM json_each(?))', [JSON.stringify(ids)])))
          .where({ lease_owner: part[0].record.owner })
          .update(part[0].patch, ['id']);
        for (const r of rows) kept.add(r.id);
      }
    }
    await insertRows(trx, 'webhook_attempts', planned.filter((p) => kept.has(p.record.delivery.id)).map(attemptRow));
    return planned.map((p) => (kept.has(p.record.delivery.id) ? recordedOf(p) : null));
  });
}

const recordedOf = ({ result, attempt, nextAttemptAt }: Planned): Recorded => ({ result, attempt, nextAttemptAt });

const attemptRow = ({ record: { delivery, attempt: a }, attempt }: Planned) => ({
  delivery_id: delivery.id, attempt, attempted_at: a.attemptedAt, success: a.success, status_code: a.statusCode,
  latency_ms: a.latencyMs, response_body: a.responseBody, error: a.error,
});

/** Whether a write of `recordAttempts(…, ride)` failed because a lease was no longer its owner's. */
export function leaseCheckFailed(err: unknown): boolean {
  // the message ends with the constraint (knex puts the statement, values included, before it)
  return (err as NodeJS.ErrnoException)?.code === 'SQLITE_CONSTRAINT' && /NOT NULL constraint failed: webhook_attempts\.delivery_id$/.test(String((err as Error).message));
}

const ATTEMPT_COLUMNS = ['attempt', 'attempted_at', 'success', 'status_code', 'latency_ms', 'response_body', 'error'] as const;

/**
 * SQLite, in a transaction whose COMMIT can carry statements: the attempts, each inserted only while its delivery
 * is leased to its owner (a null delivery id otherwise, which fails the COMMIT), then the deliveries' new states
 * from one JSON value. False when the values or the transaction do not allow it: the caller writes as usual.
 */
async function rideLeaseChecked(trx: Knex.Transaction, planned: Planned[]): Promise<boolean> {
  // a delivery twice in one batch (never, while it is leased) would leave which state wins to the UPDATE
  if (!planned.length || isPostgres(trx) || new Set(planned.map((p) => p.record.delivery.id)).size < planned.length) return false;
  const patchColumns = Object.keys(planned[0].patch); // every plan's patch has the same keys
  const attempts = jsonTuples(planned.map((p) => {
    const row = attemptRow(p);
    return [row.delivery_id, p.record.owner, ...ATTEMPT_COLUMNS.map((c) => row[c])];
  }));
  const states = jsonTuples(planned.map((p) => [p.record.delivery.id, p.record.owner, ...patchColumns.map((c) => p.patch[c])]));
  if (attempts === undefined || states === undefined) return false;
  const value = (i: number) => `j.value->>${i}`;
  const insert = `INSERT INTO "webhook_attempts" ("delivery_id", ${ATTEMPT_COLUMNS.map((c) => `"${c}"`).join(', ')}) ` +
    `SELECT d."id", ${ATTEMPT_COLUMNS.map((_, i) => value(i + 2)).join(', ')} FROM json_each(${sqlString(attempts)}) AS j ` +
    `LEFT JOIN "webhook_deliveries" AS d ON d."id" = ${value(0)} AND d."lease_owner" = ${value(1)} ORDER BY j.key`;
  const update = `UPDATE "webhook_deliveries" SET ${patchColumns.map((c, i) => `"${c}" = ${value(i + 2)}`).join(', ')} ` +
    `FROM json_each(${sqlString(states)}) AS j WHERE "webhook_deliveries"."id" = ${value(0)} AND "webhook_deliveries"."lease_owner" = ${value(1)}`;
  return rideWithCommit(trx, [insert, update]);
}

/** `work` in `db` when it is a transaction already (the writer's), else in a transaction of its own. */
function inTransaction<T>(db: Queryable, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return (db as Knex.Transaction).isTransaction ? work(db as Knex.Transaction) : db.transaction(work);
}
