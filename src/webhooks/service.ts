/**
 * What the webhook routes do, between parsing and shaping: validate a target
 * (SSRF guard), manage secrets, send the synchronous test event, queue a
 * redelivery. Other modules need none of this; they only record events.
 * Every function takes the WebhookOwner (account and mode of the calling key):
 * a webhook of the other mode is a 404, as if it did not exist.
 */
import type { AppDeps } from '../deps';
import { iso } from '../clock';
import { newId } from '../ids';
import { isExtensionEvent, type EventType } from '../events/schemas';
import { conflict, notFound, unprocessable } from '../http/errors';
import { checkCap } from '../auth/limits';
import { attemptDelivery } from './attempt';
import { getDelivery, requeue, requeueFailed, Delivery } from './deliveries';
import type { SendOutcome } from './sender';
import { generateSecret } from './signature';
import { checkTarget } from './ssrf';
import { forgetSubscriptions } from './subscriptions';
import {
  countWebhooks, deleteWebhook, getSigningWebhook, getWebhook, insertWebhook, secretsKey, signingSecrets, updateWebhook,
  Webhook, WebhookChanges, WebhookOwner,
} from './store';

type Deps = Pick<AppDeps, 'config' | 'db' | 'clock' | 'signals'>;

/** How long a rotated-out secret keeps signing next to the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** `*` stands for every event type of the spec, so it absorbs those listed with it; extensions stay named. */
export function normalizeEvents(events: string[]): string[] {
  const unique = [...new Set(events)];
  return unique.includes('*') ? ['*', ...unique.filter(isExtensionEvent)] : unique;
}

/** The URL as it will be called, or a 422 naming `url`. */
async function validTargetUrl(deps: Deps, url: string): Promise<string> {
  const target = await checkTarget(url, deps.config);
  if (!target.ok) throw unprocessable(target.code, target.message, 'url');
  return target.url.href;
}

/**
 * The cap counts per mode: sandbox webhooks are invisible to live keys, so a
 * sandbox key filling a shared cap would lock live keys out of creating theirs.
 */
async function checkWebhookCap(deps: Deps, owner: WebhookOwner): Promise<void> {
  const what = `${owner.mode === 'live' ? 'live' : 'sandbox'} webhooks`;
  checkCap(await countWebhooks(deps.db, owner), deps.config.limits.webhooksPerAccount, what, 'webhooksPerAccount');
}

export async function createWebhook(deps: Deps, owner: WebhookOwner, input: { url: string; events: string[]; secret?: string }): Promise<{ webhook: Webhook; secret: string }> {
  await checkWebhookCap(deps, owner);
  const url = await validTargetUrl(deps, input.url);
  const secret = input.secret ?? generateSecret();
  const row = { accountId: owner.accountId, mode: owner.mode, url, events: normalizeEvents(input.events), secret };
  const webhook = await insertWebhook(deps.db, secretsKey(deps.config.dataDir), row, deps.clock.now());
  forgetSubscriptions(deps.db, owner); // the next event recorded goes to it too
  return { webhook, secret };
}

export async function requireWebhook(deps: Deps, owner: WebhookOwner, id: string): Promise<Webhook> {
  const webhook = await getWebhook(deps.db, owner, id);
  if (!webhook) throw notFound('webhook', 'id');
  return webhook;
}

export interface WebhookPatch {
  url?: string;
  events?: string[];
  enabled?: boolean;
  rotate_secret?: boolean;
  secret?: string;
}

/** Returns the new secret too when it was rotated (shown once). */
export async function patchWebhook(deps: Deps, owner: WebhookOwner, id: string, patch: WebhookPatch): Promise<{ webhook: Webhook; secret?: string }> {
  await requireWebhook(deps, owner, id);
  if (patch.secret !== undefined && patch.rotate_secret) {
    throw unprocessable('conflicting_fields', 'give either secret or rotate_secret, not both', 'secret');
  }
  const now = deps.clock.now();
  const changes: WebhookChanges = { enabled: patch.enabled };
  if (patch.url !== undefined) changes.url = await validTargetUrl(deps, patch.url);
  if (patch.events !== undefined) changes.events = normalizeEvents(patch.events);
  const newSecret = patch.rotate_secret ? generateSecret() : patch.secret;
  if (newSecret !== undefined) changes.rotate = { secret: newSecret, overlapUntil: now + ROTATION_OVERLAP_MS };
  const webhook = await updateWebhook(deps.db, secretsKey(deps.config.dataDir), id, changes, now);
  forgetSubscriptions(deps.db, owner); // events and enabled take effect for the next event recorded
  // Re-enabling may make held deliveries due.
  if (patch.enabled) deps.signals.emit('webhooksChanged');
  return { webhook, ...(newSecret !== undefined ? { secret: newSecret } : {}) };
}

export async function removeWebhook(deps: Deps, owner: WebhookOwner, id: string): Promise<void> {
  if (!(await deleteWebhook(deps.db, owner, id))) throw notFound('webhook', 'id');
  forgetSubscriptions(deps.db, owner);
}

export async function requireDelivery(deps: Deps, webhook: Webhook, deliveryId: string): Promise<Delivery> {
  const delivery = await getDelivery(deps.db, deliveryId);
  if (!delivery || delivery.webhookId !== webhook.id) throw notFound('delivery', 'delivery_id');
  return delivery;
}

export async function redeliver(deps: Deps, webhook: Webhook, deliveryId: string): Promise<Delivery> {
  await requireDelivery(deps, webhook, deliveryId);
  if (!(await requeue(deps.db, deliveryId, deps.clock.now()))) {
    throw conflict('delivery_in_progress', 'an attempt of this delivery is in progress; try again when it has finished', 'delivery_id');
  }
  deps.signals.emit('webhooksChanged');
  return (await getDelivery(deps.db, deliveryId)) as Delivery;
}

/** Requeues every failed delivery of the webhook (bounded, see REDELIVER_FAILED_MAX); returns how many. */
export async function redeliverFailed(deps: Deps, webhook: Webhook): Promise<number> {
  const queued = await requeueFailed(deps.db, webhook.id, deps.clock.now());
  if (queued) deps.signals.emit('webhooksChanged');
  return queued;
}

/** Realistic data for a test event of each type (see src/events/schemas.ts). */
export function sampleData(type: EventType, now: number): Record<string, unknown> {
  const at = iso(now);
  const base = { message_id: newId('msg'), to: 'recipient@example.com', from: 'sender@example.com' };
  const details: Record<EventType, Record<string, unknown>> = {
    'message.queued': { queued_at: at, send_at: null },
    'message.sent': { sent_at: at, mx_host: 'mx.example.com', source_ip: '192.0.2.10' },
    'message.delivered': { delivered_at: at },
    'message.bounced': {
      bounced_at: at, type: 'hard', code: 550, enhanced_code: '5.1.1',
      diagnostic: '550 5.1.1 <recipient@example.com>: Recipient address rejected: User unknown', category: 'invalid_recipient',
    },
    'message.complained': { complained_at: at, feedback_type: 'abuse' },
    'message.deferred': {
      deferred_at: at, attempt: 1, next_attempt_at: iso(now + 60_000), code: 451, enhanced_code: '4.7.1',
      response: '451 4.7.1 Greylisted, try again later', mx_host: 'mx.example.com',
    },
    'ip.listed': { address: '192.0.2.10', zone: 'zen.spamhaus.org', listed_at: at, codes: ['127.0.0.2'], reason: 'Listed by SBL', pools: ['default'] },
    'ip.delisted': { address: '192.0.2.10', zone: 'zen.spamhaus.org', delisted_at: at, pools: ['default'] },
    'message.opened': { opened_at: at, user_agent: 'Mozilla/5.0', unique: true, prefetched: false },
    'message.clicked': { clicked_at: at, url: 'https://example.com/welcome', user_agent: 'Mozilla/5.0', unique: true },
  };
  return type.startsWith('ip.') ? details[type] : { ...base, ...details[type] };
}

/**
 * Sends a signed test envelope (`"test": true`) now and reports how the receiver answered.
 * A sandbox webhook's sample carries `"sandbox": true`, like the events it will receive.
 */
export async function sendTestEvent(deps: Deps, owner: WebhookOwner, id: string, type: EventType): Promise<SendOutcome & { eventId: string }> {
  const webhook = await getSigningWebhook(deps.db, secretsKey(deps.config.dataDir), owner, id);
  if (!webhook) throw notFound('webhook', 'id');
  const now = deps.clock.now();
  const eventId = newId('evt');
  const data = { ...sampleData(type, now), ...(webhook.mode === 'test' ? { sandbox: true } : {}) };
  const body = JSON.stringify({ id: eventId, event: type, timestamp: iso(now), data, test: true });
  const outcome = await attemptDelivery(deps.config, { url: webhook.url, secrets: signingSecrets(webhook, now), eventId, body, attempt: 1, now });
  return { ...outcome, eventId };
}
