/**
 * The webhook_deliveries and webhook_attempts tables. A delivery row is the
 * hand-off between the event recorder (which inserts it in the event's own
 * transaction, see sink.ts) and the dispatcher (which claims due rows with a
 * lease, claims.ts, sends, and records the attempt, results.ts). Rows are
 * claimed with a conditional UPDATE, so a row is sent by one worker at a time,
 * and a crashed worker's lease lapses (or is released at the next start) so
 * the row is sent again: delivery is at least once.
 */
import type { Queryable } from '../db';
import { eventBody } from './event-body';
import { newId } from '../ids';

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

/** Rows for new deliveries of one event (the event sink inserts them), due at once and not leased. */
export function newDeliveryRows(event: { id: string; accountId: string; type: string; at: number }, webhookIds: string[]): DeliveryRow[] {
  return webhookIds.map((webhookId) => ({
    id: newId('whd'),
    webhook_id: webhookId,
    account_id: event.accountId,
    event_id: event.id,
    event_type: event.type,
    status: 'pending',
    attempts: 0,
    cycle_start: 0,
    next_attempt_at: event.at,
    lease_owner: null,
    lease_expires_at: null,
    last_status_code: null,
    last_error: null,
    created_at: event.at,
    updated_at: event.at,
    completed_at: null,
  }));
}

export async function getDelivery(db: Queryable, id: string): Promise<Delivery | undefined> {
  const row = await db<DeliveryRow>('webhook_deliveries').where({ id }).first();
  return row && toDelivery(row);
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

/** Failed deliveries requeued by one redeliver-failed call at most (newest first), so one call is one bounded UPDATE. */
export const REDELIVER_FAILED_MAX = 10_000;

/** Requeues a webhook's failed deliveries (up to REDELIVER_FAILED_MAX, newest first) like requeue(); returns how many. */
export async function requeueFailed(db: Queryable, webhookId: string, now: number): Promise<number> {
  const failed = db('webhook_deliveries').select('id').where({ webhook_id: webhookId, status: 'failed' }).orderBy('id', 'desc').limit(REDELIVER_FAILED_MAX);
  return db('webhook_deliveries').whereIn('id', failed).andWhere({ status: 'failed' })
    .update({ status: 'pending', next_attempt_at: now, cycle_start: db.raw('attempts'), lease_owner: null, lease_expires_at: null, completed_at: null, updated_at: now });
}

/** The request body a delivery sends (rebuilt from its event, as every attempt does). */
export async function requestBodyOf(db: Queryable, eventId: string): Promise<string | null> {
  const row = await db('events').where({ id: eventId }).first();
  return row ? eventBody(row) : null;
}

/** Backlog figures for the metrics: pending rows and the age of the oldest one. */
export async function pendingStats(db: Queryable): Promise<{ pending: number; oldestCreatedAt: number | null }> {
  const row = await db('webhook_deliveries').where({ status: 'pending' }).count({ n: '*' }).min({ oldest: 'created_at' }).first();
  return { pending: Number(row?.n ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
}
