/**
 * What an attempt needs, for a batch of claimed deliveries in one query: the
 * delivery, its webhook (with the secrets opened) and its event's body. One
 * round trip per batch matters: every module shares the one SQLite connection.
 */
import type { Queryable } from '../db';
import { eventBody } from './event-body';
import { Delivery, DeliveryRow, toDelivery } from './deliveries';
import { SigningWebhook, toSigning, WebhookRow } from './store';

export interface Job {
  delivery: Delivery;
  webhook: SigningWebhook;
  body: string;
}

const WEBHOOK_COLUMNS = ['id', 'account_id', 'mode', 'url', 'events', 'enabled', 'secret', 'previous_secret', 'previous_secret_expires_at', 'created_at', 'updated_at'];
const EVENT_COLUMNS = ['id', 'account_id', 'mode', 'type', 'message_id', 'data', 'created_at'];

function unprefix<T>(row: Record<string, unknown>, prefix: string, columns: string[]): T {
  return Object.fromEntries(columns.map((c) => [c, row[`${prefix}${c}`]])) as T;
}

/** Jobs for the ids that still exist (a deleted webhook takes its rows along), oldest due first. */
export async function loadJobs(db: Queryable, key: Buffer, ids: string[]): Promise<Job[]> {
  if (!ids.length) return [];
  const rows: Array<Record<string, unknown>> = await db('webhook_deliveries as d')
    .join('webhooks as w', 'w.id', 'd.webhook_id')
    .join('events as e', 'e.id', 'd.event_id')
    .whereIn('d.id', ids)
    .orderBy([{ column: 'd.next_attempt_at' }, { column: 'd.id' }])
    .select('d.*', ...WEBHOOK_COLUMNS.map((c) => `w.${c} as w_${c}`), ...EVENT_COLUMNS.map((c) => `e.${c} as e_${c}`));
  // A batch is mostly one webhook's rows: its secrets are opened (AES-GCM) once, not once a row.
  const webhooks = new Map<string, SigningWebhook>();
  const webhookOf = (row: Record<string, unknown>) => {
    const id = row.w_id as string;
    let webhook = webhooks.get(id);
    if (!webhook) webhooks.set(id, (webhook = toSigning(unprefix<WebhookRow>(row, 'w_', WEBHOOK_COLUMNS), key)));
    return webhook;
  };
  return rows.map((row) => ({
    delivery: toDelivery(unprefix<DeliveryRow>(row, '', Object.keys(row).filter((k) => !/^[we]_/.test(k)))),
    webhook: webhookOf(row),
    body: eventBody(unprefix(row, 'e_', EVENT_COLUMNS)),
  }));
}

/** The current rows of some webhooks, secrets opened (one query); a deleted webhook is missing from the map. */
export async function loadWebhooks(db: Queryable, key: Buffer, ids: string[]): Promise<Map<string, SigningWebhook>> {
  if (!ids.length) return new Map();
  const rows: WebhookRow[] = await db('webhooks').whereIn('id', ids).select(WEBHOOK_COLUMNS);
  return new Map(rows.map((r) => [r.id, toSigning(r, key)]));
}
