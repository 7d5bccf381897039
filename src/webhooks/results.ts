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
 */
import type { Knex } from 'knex';
import { isPostgres, type Queryable } from '../db';
import { insertRows } from '../db/buffer';
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
 */
export async function recordAttempts(db: Queryable, records: AttemptRecord[], at: number): Promise<Array<Recorded | null>> {
  const planned = records.map((r) => plan(r, at));
  return inTransaction(db, async (trx) => {
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
    const attempts = planned.filter((p) => kept.has(p.record.delivery.id)).map(({ record: { delivery, attempt: a }, attempt }) => ({
      delivery_id: delivery.id, attempt, attempted_at: a.attemptedAt, success: a.success, status_code: a.statusCode,
      latency_ms: a.latencyMs, response_body: a.responseBody, error: a.error,
    }));
    await insertRows(trx, 'webhook_attempts', attempts);
    return planned.map((p) => (kept.has(p.record.delivery.id) ? { result: p.result, attempt: p.attempt, nextAttemptAt: p.nextAttemptAt } : null));
  });
}

/** `work` in `db` when it is a transaction already (the writer's), else in a transaction of its own. */
function inTransaction<T>(db: Queryable, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return (db as Knex.Transaction).isTransaction ? work(db as Knex.Transaction) : db.transaction(work);
}
