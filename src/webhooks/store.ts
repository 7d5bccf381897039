/**
 * The webhooks table: repository functions mapping rows to Webhook values.
 * Signing secrets must stay recoverable (they sign every request), so they are
 * sealed at rest with the appliance's secret box (AES-256-GCM under a key
 * derived for this purpose from `<dataDir>/secret.key`), bound to the webhook's
 * id. Reading a webhook never opens them; only the two places that sign (the
 * dispatcher and the test endpoint) ask for a SigningWebhook.
 *
 * A webhook belongs to an account *and a mode* (that of the key that created
 * it): it receives only that mode's events, and every lookup here is scoped by
 * a WebhookOwner, so a key never reads or changes a webhook of the other mode.
 */
import type { Queryable } from '../db';
import { fromJson, toJson } from '../db';
import { newId } from '../ids';
import { deriveKey, loadOrCreateMasterKey, open, seal } from '../crypto/secret-box';
import type { Mode } from '../auth/scopes';

/** Whose webhooks: an account in one mode (an authenticated Caller is one). */
export interface WebhookOwner {
  accountId: string;
  mode: Mode;
}

export interface Webhook {
  id: string;
  accountId: string;
  mode: Mode;
  url: string;
  events: string[];
  enabled: boolean;
  previousSecretExpiresAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface SigningWebhook extends Webhook {
  secret: string;
  previousSecret: string | null;
}

export interface WebhookRow {
  id: string;
  account_id: string;
  mode: string;
  url: string;
  events: string;
  enabled: number | boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

// One entry per dataDir (one per app in the process).
const boxKeys = new Map<string, Buffer>();

/** The key that seals webhook secrets, from the dataDir's master key. */
export function secretsKey(dataDir: string): Buffer {
  let key = boxKeys.get(dataDir);
  if (!key) boxKeys.set(dataDir, (key = deriveKey(loadOrCreateMasterKey(dataDir), 'webhook-secrets')));
  return key;
}

// Bound to the row, not the column: a rotation moves the sealed value from `secret` to `previous_secret` as is.
const sealSecret = (key: Buffer, id: string, secret: string): string => seal(key, secret, `webhooks:${id}`);
const openSecret = (key: Buffer, id: string, sealed: string): string => open(key, sealed, `webhooks:${id}`).toString('utf8');

function toWebhook(r: WebhookRow): Webhook {
  return {
    id: r.id,
    accountId: r.account_id,
    mode: r.mode as Mode,
    url: r.url,
    events: fromJson<string[]>(r.events, []),
    enabled: Boolean(r.enabled),
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : Number(r.previous_secret_expires_at),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export function toSigning(r: WebhookRow, key: Buffer): SigningWebhook {
  return {
    ...toWebhook(r),
    secret: openSecret(key, r.id, r.secret),
    previousSecret: r.previous_secret === null ? null : openSecret(key, r.id, r.previous_secret),
  };
}

/** Secrets that sign a request at `now`: the current one, then a rotated-out one still in its overlap. */
export function signingSecrets(w: SigningWebhook, now: number): string[] {
  const overlap = w.previousSecret !== null && w.previousSecretExpiresAt !== null && now < w.previousSecretExpiresAt;
  return overlap ? [w.secret, w.previousSecret as string] : [w.secret];
}

export interface NewWebhook extends WebhookOwner {
  url: string;
  events: string[];
  secret: string;
}

export async function insertWebhook(db: Queryable, key: Buffer, input: NewWebhook, now: number): Promise<Webhook> {
  const id = newId('wh');
  const row: WebhookRow = {
    id,
    account_id: input.accountId,
    mode: input.mode,
    url: input.url,
    events: toJson(input.events) as string,
    enabled: true,
    secret: sealSecret(key, id, input.secret),
    previous_secret: null,
    previous_secret_expires_at: null,
    created_at: now,
    updated_at: now,
  };
  await db('webhooks').insert(row);
  return toWebhook(row);
}

const owned = (owner: WebhookOwner) => ({ account_id: owner.accountId, mode: owner.mode });

export async function getWebhook(db: Queryable, owner: WebhookOwner, id: string): Promise<Webhook | undefined> {
  const row = await db<WebhookRow>('webhooks').where({ id, ...owned(owner) }).first();
  return row && toWebhook(row);
}

export async function getSigningWebhook(db: Queryable, key: Buffer, owner: WebhookOwner, id: string): Promise<SigningWebhook | undefined> {
  const row = await db<WebhookRow>('webhooks').where({ id, ...owned(owner) }).first();
  return row && toSigning(row, key);
}

/** How many webhooks the owner has (the limits.webhooksPerAccount cap counts per mode). */
export async function countWebhooks(db: Queryable, owner: WebhookOwner): Promise<number> {
  const row = await db('webhooks').where(owned(owner)).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

export async function listWebhooks(db: Queryable, owner: WebhookOwner, limit: number, cursor?: string): Promise<{ items: Webhook[]; total: number }> {
  const base = db<WebhookRow>('webhooks').where(owned(owner));
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

export async function updateWebhook(db: Queryable, key: Buffer, id: string, changes: WebhookChanges, now: number): Promise<Webhook> {
  const patch: Record<string, unknown> = { updated_at: now };
  if (changes.url !== undefined) patch.url = changes.url;
  if (changes.events !== undefined) patch.events = toJson(changes.events);
  if (changes.enabled !== undefined) patch.enabled = changes.enabled;
  if (changes.rotate) {
    // SET reads the old row on the right-hand side: the current secret becomes the previous one.
    patch.previous_secret = db.ref('secret');
    patch.secret = sealSecret(key, id, changes.rotate.secret);
    patch.previous_secret_expires_at = changes.rotate.overlapUntil;
  }
  await db('webhooks').where({ id }).update(patch);
  return toWebhook((await db<WebhookRow>('webhooks').where({ id }).first()) as WebhookRow);
}

/** Deleting cascades to the webhook's deliveries and their attempts: pending ones are dropped. */
export async function deleteWebhook(db: Queryable, owner: WebhookOwner, id: string): Promise<boolean> {
  return (await db('webhooks').where({ id, ...owned(owner) }).delete()) > 0;
}

/** Enabled webhooks of an account in one mode, with their subscriptions (the event sink's query). */
export async function subscribedWebhooks(db: Queryable, owner: WebhookOwner): Promise<Array<{ id: string; events: string[] }>> {
  const rows = await db<WebhookRow>('webhooks').where({ ...owned(owner), enabled: true }).select('id', 'events');
  return rows.map((r) => ({ id: r.id, events: fromJson<string[]>(r.events, []) }));
}
