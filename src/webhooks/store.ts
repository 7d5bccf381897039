/**
 * The webhooks table: repository functions mapping rows to Webhook values.
 * Secrets must stay recoverable (they sign), so they are stored as written
 * here through sealSecret/openSecret, the one place to change if they are
 * encrypted at rest.
 */
import type { Queryable } from '../db';
import { fromJson, toJson } from '../db';
import { newId } from '../ids';

export interface Webhook {
  id: string;
  accountId: string;
  url: string;
  events: string[];
  enabled: boolean;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
  createdAt: number;
  updatedAt: number;
}

interface WebhookRow {
  id: string;
  account_id: string;
  url: string;
  events: string;
  enabled: number | boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

const sealSecret = (secret: string): string => secret;
const openSecret = (stored: string): string => stored;

function toWebhook(r: WebhookRow): Webhook {
  return {
    id: r.id,
    accountId: r.account_id,
    url: r.url,
    events: fromJson<string[]>(r.events, []),
    enabled: Boolean(r.enabled),
    secret: openSecret(r.secret),
    previousSecret: r.previous_secret === null ? null : openSecret(r.previous_secret),
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : Number(r.previous_secret_expires_at),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** Secrets that sign a request at `now`: the current one, then a rotated-out one still in its overlap. */
export function signingSecrets(w: Webhook, now: number): string[] {
  const overlap = w.previousSecret !== null && w.previousSecretExpiresAt !== null && now < w.previousSecretExpiresAt;
  return overlap ? [w.secret, w.previousSecret as string] : [w.secret];
}

export interface NewWebhook {
  accountId: string;
  url: string;
  events: string[];
  secret: string;
}

export async function insertWebhook(db: Queryable, input: NewWebhook, now: number): Promise<Webhook> {
  const row: WebhookRow = {
    id: newId('wh'),
    account_id: input.accountId,
    url: input.url,
    events: toJson(input.events) as string,
    enabled: true,
    secret: sealSecret(input.secret),
    previous_secret: null,
    previous_secret_expires_at: null,
    created_at: now,
    updated_at: now,
  };
  await db('webhooks').insert(row);
  return toWebhook(row);
}

export async function getWebhook(db: Queryable, accountId: string, id: string): Promise<Webhook | undefined> {
  const row = await db<WebhookRow>('webhooks').where({ id, account_id: accountId }).first();
  return row && toWebhook(row);
}

export async function getWebhookById(db: Queryable, id: string): Promise<Webhook | undefined> {
  const row = await db<WebhookRow>('webhooks').where({ id }).first();
  return row && toWebhook(row);
}

/** For the dispatcher, which works across accounts. */
export async function getWebhooksByIds(db: Queryable, ids: string[]): Promise<Map<string, Webhook>> {
  if (!ids.length) return new Map();
  const rows = await db<WebhookRow>('webhooks').whereIn('id', [...new Set(ids)]);
  return new Map(rows.map((r) => [r.id, toWebhook(r)]));
}

export async function listWebhooks(db: Queryable, accountId: string, limit: number, cursor?: string): Promise<{ items: Webhook[]; total: number }> {
  const base = db<WebhookRow>('webhooks').where({ account_id: accountId });
  const rows = await base.clone().modify((q) => {
    if (cursor) q.where('id', '<', cursor);
  }).orderBy('id', 'desc').limit(limit);
  const total = await base.clone().count({ n: '*' }).first();
  return { items: rows.map(toWebhook), total: Number(total?.n ?? 0) };
}

export interface WebhookChanges {
  url?: string;
  events?: string[];
  enabled?: boolean;
  /** the new secret; the current one keeps signing until overlapUntil */
  rotate?: { secret: string; overlapUntil: number };
}

export async function updateWebhook(db: Queryable, current: Webhook, changes: WebhookChanges, now: number): Promise<Webhook> {
  const patch: Partial<WebhookRow> = { updated_at: now };
  if (changes.url !== undefined) patch.url = changes.url;
  if (changes.events !== undefined) patch.events = toJson(changes.events) as string;
  if (changes.enabled !== undefined) patch.enabled = changes.enabled;
  if (changes.rotate) {
    patch.secret = sealSecret(changes.rotate.secret);
    patch.previous_secret = sealSecret(current.secret);
    patch.previous_secret_expires_at = changes.rotate.overlapUntil;
  }
  await db('webhooks').where({ id: current.id }).update(patch);
  return (await getWebhookById(db, current.id)) as Webhook;
}

/** Deleting cascades to the webhook's deliveries and their attempts: pending ones are dropped. */
export async function deleteWebhook(db: Queryable, accountId: string, id: string): Promise<boolean> {
  return (await db('webhooks').where({ id, account_id: accountId }).delete()) > 0;
}

/** Enabled webhooks of an account with their subscriptions (the event sink's query). */
export async function subscribedWebhooks(db: Queryable, accountId: string): Promise<Array<{ id: string; events: string[] }>> {
  const rows = await db<WebhookRow>('webhooks').where({ account_id: accountId, enabled: true }).select('id', 'events');
  return rows.map((r) => ({ id: r.id, events: fromJson<string[]>(r.events, []) }));
}
