/**
 * The webhook_deliveries and webhook_attempts tables. A delivery row is the
 * hand-off between the event recorder (which inserts it in the event's own
 * transaction, see sink.ts) and the dispatcher (which claims due rows with a
 * lease, sends, and records the attempt here). Rows are claimed with a
 * conditional UPDATE, so a row is sent by one worker at a time, and a crashed
 * worker's lease lapses (or is released at the next start) so the row is sent
 * again: delivery is at least once.
 */
import type { Queryable } from '../db';
import { insertRows } from '../db/buffer';
import { newId } from '../ids';
import { nextAttemptAfterFailure } from './schedule';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface Delivery {
  id: string;
  webhookId: string;
  accountId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  cycleStart: number;
  nextAttemptAt: number | null;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  completedAt: number | null;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  account_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  cycle_start: number;
  next_attempt_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export interface Attempt {
  attempt: number;
  attemptedAt: number;
  success: boolean;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

export function toDelivery(r: DeliveryRow): Delivery {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    accountId: r.account_id,
    eventId: r.event_id,
    eventType: r.event_type,
    status: r.status as DeliveryStatus,
    attempts: Number(r.attempts),
    cycleStart: Number(r.cycle_start),
    nextAttemptAt: num(r.next_attempt_at),
    leaseOwner: r.lease_owner,
    leaseExpiresAt: num(r.lease_expires_at),
    lastStatusCode: num(r.last_status_code),
    lastError: r.last_error,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    completedAt: num(r.completed_at),
  };
}

/** Rows for new deliveries of one event (inserted by the event sink). */
export async function insertDeliveries(db: Queryable, event: { id: string; accountId: string; type: string; at: number }, webhookIds: string[]): Promise<void> {
  if (!webhookIds.length) return;
  await insertRows(db, 'webhook_deliveries', webhookIds.map((webhookId) => ({
    id: newId('whd'),
    webhook_id: webhookId,
    account_id: event.accountId,
    event_id: event.id,
    event_type: event.type,
    status: 'pending',
    attempts: 0,
    cycle_start: 0,
    next_attempt_at: event.at,
    created_at: event.at,
    updated_at: event.at,
  })));
}

export async function getDelivery(db: Queryable, id: string): Promise<Delivery | undefined> {
  const row = await db<DeliveryRow>('webhook_deliveries').where({ id }).first();
  return row && toDelivery(row);
}


/** A row is claimable when it is due and no live lease holds it. */
const claimable = (now: number) => (q: import('knex').Knex.QueryBuilder) =>
  q.whereNotNull('next_attempt_at').where('next_attempt_at', '<=', now)
    .where((w) => w.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now));

/**
 * Due deliveries, at most `perWebhook` per webhook, oldest due first, so one
 * webhook's backlog cannot fill the batch and starve the others. Each
 * webhook's rows are read by an index seek on (webhook_id, next_attempt_at),
 * so a dead endpoint's thousands of due rows cost nothing here.
 */
export async function dueCandidates(
  db: Queryable,
  opts: { now: number; perWebhook: number; limit: number; skipWebhooks: string[] },
): Promise<Array<{ id: string; webhookId: string }>> {
  const { now, perWebhook, limit, skipWebhooks } = opts;
  const skip = skipWebhooks.length ? `AND w.id NOT IN (${skipWebhooks.map(() => '?').join(', ')})` : '';
  const rows: Array<{ id: string; webhook_id: string }> = await db.raw(
    // CROSS JOIN makes SQLite loop over webhooks outside (a plain JOIN scans every delivery).
    `SELECT d.id, d.webhook_id FROM webhooks w CROSS JOIN webhook_deliveries d
      WHERE d.id IN (
        SELECT q.id FROM webhook_deliveries q
         WHERE q.webhook_id = w.id AND q.next_attempt_at IS NOT NULL AND q.next_attempt_at <= ?
           AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= ?)
         ORDER BY q.next_attempt_at LIMIT ?
      )
      AND w.enabled = ? ${skip}
     ORDER BY d.next_attempt_at, d.id LIMIT ?`,
    [now, now, perWebhook, true, ...skipWebhooks, limit],
  );
  return rows.map((r) => ({ id: r.id, webhookId: r.webhook_id }));
}

/**
 * Takes the lease on those of `ids` that are still claimable, in one
 * statement (UPDATE … RETURNING: SQLite 3.35+, PostgreSQL); returns the ids
 * this owner now holds.
 */
export async function claim(db: Queryable, ids: string[], owner: string, now: number, leaseMs: number): Promise<string[]> {
  if (!ids.length) return [];
  const rows: Array<{ id: string }> = await db('webhook_deliveries').whereIn('id', ids).modify(claimable(now))
    .update({ lease_owner: owner, lease_expires_at: now + leaseMs }, ['id']);
  return rows.map((r) => r.id);
}

/**
 * When the earliest unleased row of an enabled webhook is due (null: nothing
 * waits). Leased rows are in flight: their end wakes the dispatcher; a dead
 * owner's leases are released at start (the poll interval covers the rest).
 */
export async function nextDueAt(db: Queryable): Promise<number | null> {
  const row = await db('webhook_deliveries as d').join('webhooks as w', 'w.id', 'd.webhook_id').where('w.enabled', true)
    .whereNotNull('d.next_attempt_at').whereNull('d.lease_owner')
    .orderBy('d.next_attempt_at').first('d.next_attempt_at as at');
  return row ? Number(row.at) : null;
}

export async function releaseLease(db: Queryable, id: string, owner: string): Promise<void> {
  await db('webhook_deliveries').where({ id, lease_owner: owner }).update({ lease_owner: null, lease_expires_at: null });
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

export type AttemptResult = 'succeeded' | 'retrying' | 'failed';

export interface AttemptRecord {
  delivery: Delivery;
  owner: string;
  attempt: Omit<Attempt, 'attempt'>;
  /** when the answer (or the failure) came: retries count from here */
  finishedAt: number;
}

/**
 * Stores attempts and moves each delivery on: succeeded, retrying at the next
 * step of the schedule, or failed. All in one commit (the dispatcher groups
 * the attempts that finished together). An entry is null when its row was
 * deleted meanwhile (its webhook was deleted) or its lease was lost.
 */
export async function recordAttempts(db: Queryable, records: AttemptRecord[]): Promise<Array<{ result: AttemptResult; attempt: number } | null>> {
  return db.transaction(async (trx) => {
    const out: Array<{ result: AttemptResult; attempt: number } | null> = [];
    for (const r of records) out.push(await recordOne(trx, r));
    return out;
  });
}

async function recordOne(trx: Queryable, { delivery: d, owner, attempt: a, finishedAt }: AttemptRecord): Promise<{ result: AttemptResult; attempt: number } | null> {
  const attempt = d.attempts + 1;
  const next = a.success ? null : nextAttemptAfterFailure(attempt - d.cycleStart, finishedAt);
  const result: AttemptResult = a.success ? 'succeeded' : next === null ? 'failed' : 'retrying';
  const n = await trx('webhook_deliveries').where({ id: d.id, lease_owner: owner }).update({
    status: result === 'retrying' ? 'pending' : result,
    attempts: attempt,
    next_attempt_at: next,
    lease_owner: null,
    lease_expires_at: null,
    last_status_code: a.statusCode,
    last_error: a.error,
    updated_at: finishedAt,
    completed_at: result === 'retrying' ? null : finishedAt,
  });
  if (!n) return null;
  await trx('webhook_attempts').insert({
    delivery_id: d.id,
    attempt,
    attempted_at: a.attemptedAt,
    success: a.success,
    status_code: a.statusCode,
    latency_ms: a.latencyMs,
    response_body: a.responseBody,
    error: a.error,
  });
  return { result, attempt };
}

export async function attemptsOf(db: Queryable, deliveryIds: string[]): Promise<Map<string, Attempt[]>> {
  const out = new Map<string, Attempt[]>(deliveryIds.map((id) => [id, []]));
  if (!deliveryIds.length) return out;
  const rows = await db('webhook_attempts').whereIn('delivery_id', deliveryIds).orderBy(['delivery_id', 'attempt']);
  for (const r of rows) {
    out.get(r.delivery_id)?.push({
      attempt: Number(r.attempt),
      attemptedAt: Number(r.attempted_at),
      success: Boolean(r.success),
      statusCode: num(r.status_code),
      latencyMs: Number(r.latency_ms),
      responseBody: r.response_body,
      error: r.error,
    });
  }
  return out;
}

export async function listDeliveries(db: Queryable, webhookId: string, opts: { status?: DeliveryStatus; limit: number; cursor?: string }): Promise<{ items: Delivery[]; total: number }> {
  const base = db<DeliveryRow>('webhook_deliveries').where({ webhook_id: webhookId }).modify((q) => {
    if (opts.status) q.where({ status: opts.status });
  });
  const rows = await base.clone().modify((q) => {
    if (opts.cursor) q.where('id', '<', opts.cursor);
  }).orderBy('id', 'desc').limit(opts.limit);
  const total = await base.clone().count({ n: '*' }).first();
  return { items: rows.map(toDelivery), total: Number(total?.n ?? 0) };
}

/**
 * Queues a delivery for an attempt now, with a fresh cycle of retries.
 * False when an attempt holds it right now (the caller answers 409).
 */
export async function requeue(db: Queryable, id: string, now: number): Promise<boolean> {
  const n = await db('webhook_deliveries').where({ id })
    .where((w) => w.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now))
    .update({
      status: 'pending',
      next_attempt_at: now,
      cycle_start: db.raw('attempts'),
      lease_owner: null,
      lease_expires_at: null,
      completed_at: null,
      updated_at: now,
    });
  return n > 0;
}

/** Backlog figures for the metrics: pending rows and the age of the oldest one. */
export async function pendingStats(db: Queryable): Promise<{ pending: number; oldestCreatedAt: number | null }> {
  const row = await db('webhook_deliveries').where({ status: 'pending' }).count({ n: '*' }).min({ oldest: 'created_at' }).first();
  return { pending: Number(row?.n ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
}
