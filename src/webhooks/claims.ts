/**
 * Claiming delivery rows. The dispatcher takes a whole batch of due rows in
 * one statement (UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING id on
 * SQLite 3.35+; on PostgreSQL the SELECT takes FOR UPDATE SKIP LOCKED and runs
 * once, in a CTE), keeps them in memory and sends them as slots free up. The lease on a claimed row covers the wait in that queue as well
 * as the attempt; a crashed owner's leases lapse, or are released at the
 * next start on the same host.
 */
import type { Knex } from 'knex';
import { isPostgres, rawRows, type Queryable } from '../db';

export interface DueQuery {
  now: number;
  /** rows per webhook at most, so one webhook's backlog cannot fill the batch */
  perWebhook: number;
  limit: number;
  /** webhooks to leave out (the dispatcher already holds enough of theirs) */
  skipWebhooks: string[];
}

/**
 * Ids of due, unleased rows of enabled webhooks, at most `perWebhook` per
 * webhook, oldest due first. Each webhook's rows are read by an index seek on
 * (webhook_id, next_attempt_at), so a dead endpoint's thousands of due rows
 * cost nothing here.
 *
 * The due and lease conditions are repeated on `d`, the row the claim locks: on PostgreSQL, when another
 * node's claim of the same row commits while this statement runs, FOR UPDATE re-checks the new version of the
 * row against the conditions on `d` only; the sub-select still answers from the statement's first snapshot,
 * where the row was free, so without the repeat both nodes leased and sent it.
 */
function dueIds(q: DueQuery, lock = ''): { sql: string; bindings: Knex.Value[] } {
  const skip = q.skipWebhooks.length ? `AND w.id NOT IN (${q.skipWebhooks.map(() => '?').join(', ')})` : '';
  return {
    sql:
    // CROSS JOIN makes SQLite loop over webhooks outside (a plain JOIN scans every delivery).
    `SELECT d.id FROM webhooks w CROSS JOIN webhook_deliveries d
      WHERE d.id IN (
        SELECT q.id FROM webhook_deliveries q
         WHERE q.webhook_id = w.id AND q.next_attempt_at IS NOT NULL AND q.next_attempt_at <= ?
           AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= ?)
         ORDER BY q.next_attempt_at LIMIT ?
      )
      AND w.enabled = ? ${skip}
      AND d.next_attempt_at <= ? AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ?)
     ORDER BY d.next_attempt_at, d.id LIMIT ? ${lock}`,
    bindings: [q.now, q.now, q.perWebhook, true, ...q.skipWebhooks, q.now, q.now, q.limit],
  };
}

/** The search of a claim alone (the claim benchmark measures it). */
export async function dueCandidates(db: Queryable, q: DueQuery): Promise<string[]> {
  const { sql, bindings } = dueIds(q);
  const rows = rawRows<{ id: string }>(await db.raw(sql, bindings));
  return rows.map((r) => r.id);
}

/** Takes the lease on a batch of due rows in one statement; returns the claimed rows' ids and webhooks. */
export async function claimDue(db: Queryable, q: DueQuery, owner: string, leaseUntil: number): Promise<Array<{ id: string; webhookId: string }>> {
  // Several nodes on PostgreSQL: a row another node is claiming right now is skipped, not waited for (nor
  // claimed twice); OF d leaves the webhook rows unlocked, so both nodes can claim rows of one webhook.
  // There the ids are picked in a MATERIALIZED CTE, which runs once: as IN (subquery) the planner may rerun the
  // subquery for every row it updates, each rerun skipping the rows already taken, and lease far more than limit.
  const postgres = isPostgres(db);
  const { sql, bindings } = dueIds(q, postgres ? 'FOR UPDATE OF d SKIP LOCKED' : '');
  const target: Knex.QueryBuilder = postgres
    ? db.withMaterialized('due', db.raw(sql, bindings)).from('webhook_deliveries').whereIn('id', db.select('id').from('due'))
    : db('webhook_deliveries').whereRaw(`id IN (${sql})`, bindings);
  const rows = (await target.update({ lease_owner: owner, lease_expires_at: leaseUntil }, ['id', 'webhook_id'])) as unknown as Array<{ id: string; webhook_id: string }>;
  return rows.map((r) => ({ id: r.id, webhookId: r.webhook_id }));
}

/**
 * When the earliest unleased row of an enabled webhook becomes due, after
 * `now` (null: nothing waits). Rows already due are the claim's business;
 * leased rows are in flight and their end wakes the dispatcher.
 */
export async function nextDueAfter(db: Queryable, now: number): Promise<number | null> {
  const row = await db('webhook_deliveries as d').join('webhooks as w', 'w.id', 'd.webhook_id').where('w.enabled', true)
    .where('d.next_attempt_at', '>', now).whereNull('d.lease_owner')
    .orderBy('d.next_attempt_at').first('d.next_attempt_at as at');
  return row ? Number(row.at) : null;
}

/** Gives rows back unattempted (stop, a paused webhook), in one statement. */
export async function releaseLeases(db: Queryable, ids: string[], owner: string): Promise<void> {
  if (!ids.length) return;
  await db('webhook_deliveries').whereIn('id', ids).where({ lease_owner: owner }).update({ lease_owner: null, lease_expires_at: null });
}

/** Distinct lease owners currently recorded (start-up looks for dead ones). */
export async function leaseOwners(db: Queryable): Promise<string[]> {
  const rows = await db('webhook_deliveries').whereNotNull('lease_owner').distinct('lease_owner');
  return rows.map((r: { lease_owner: string }) => r.lease_owner);
}

export async function releaseLeasesOf(db: Queryable, owners: string[]): Promise<number> {
  if (!owners.length) return 0;
  return db('webhook_deliveries').whereIn('lease_owner', owners).update({ lease_owner: null, lease_expires_at: null });
}
